"""Lightning callbacks for training XCTFormer (and any Darts torch model) the paper's way."""

from __future__ import annotations

import math
from typing import Optional

import pytorch_lightning as pl
import torch


class KeepBestValidationWeights(pl.Callback):
    """Restore the weights of the epoch with the lowest validation loss when fitting ends.

    The paper's recipe: train a fixed number of epochs without early stopping and keep the
    best-validation checkpoint. This callback does it in memory (no checkpoint files); it
    does nothing when no validation set is given.
    """

    def __init__(self, monitor: str = "val_loss"):
        self.monitor = monitor
        self.best_score = math.inf
        self.best_epoch: Optional[int] = None
        self._best_state: Optional[dict[str, torch.Tensor]] = None

    def on_fit_start(self, trainer, pl_module) -> None:
        self.best_score, self.best_epoch, self._best_state = math.inf, None, None

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking:
            return
        score = trainer.callback_metrics.get(self.monitor)
        if score is not None and float(score) < self.best_score:
            self.best_score = float(score)
            self.best_epoch = trainer.current_epoch
            self._best_state = {k: v.detach().clone() for k, v in pl_module.state_dict().items()}

    def on_fit_end(self, trainer, pl_module) -> None:
        if self._best_state is not None:
            pl_module.load_state_dict(self._best_state)
            self._best_state = None  # keep pickles of the model small
