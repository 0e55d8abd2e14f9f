"""Lightning callbacks for training XCTFormer (and any Darts torch model) the paper's way."""

from __future__ import annotations

import copy
import math
from typing import Optional

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import EarlyStopping


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
            self._best_state = {
                k: v.detach().clone() if torch.is_tensor(v) else copy.deepcopy(v)  # extra state: any object
                for k, v in pl_module.state_dict().items()
            }

    def on_fit_end(self, trainer, pl_module) -> None:
        if self._best_state is not None:
            pl_module.load_state_dict(self._best_state)
            self._best_state = None  # keep pickles of the model small


class EarlyStoppingAfterWarmup(EarlyStopping):
    """Lightning's ``EarlyStopping`` that starts counting once the learning-rate warm-up is over.

    A one-cycle schedule raises the learning rate for its first ``pct_start`` of the epochs, and
    the validation loss often rises with it: plain early stopping then ends training before the
    rate has ever come down. The weights of the best epoch, warm-up included, are still kept by
    :class:`KeepBestValidationWeights`.
    """

    def __init__(self, warmup_epochs: int, **kwargs):
        super().__init__(**kwargs)
        self.warmup_epochs = warmup_epochs

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if trainer.current_epoch >= self.warmup_epochs:
            super().on_train_epoch_end(trainer, pl_module)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.current_epoch >= self.warmup_epochs:
            super().on_validation_end(trainer, pl_module)
