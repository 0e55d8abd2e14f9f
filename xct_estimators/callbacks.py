"""Lightning callbacks for training XCTFormer (and any Darts torch model) the paper's way."""

from __future__ import annotations

import copy
import math
from typing import Optional

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import EarlyStopping


def _snapshot(module: torch.nn.Module) -> dict:
    """A copy of ``module``'s state that later training leaves alone."""
    return {
        k: v.detach().clone() if torch.is_tensor(v) else copy.deepcopy(v)  # extra state: any object
        for k, v in module.state_dict().items()
    }


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
            self._best_state = _snapshot(pl_module)

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


class RollBackOnDivergence(pl.Callback):
    """Undo an epoch whose validation loss diverged, and go on at a lower learning rate.

    When an epoch ends with a validation loss above ``threshold`` times the lowest so far (or not
    finite), the weights and the optimizer's state go back to that lowest epoch's, and the learning
    rate from there on is multiplied by ``rate_factor`` (the current ``lr``, and ``OneCycleLR``'s
    ``initial_lr``, ``max_lr`` and ``min_lr``, which set the rest of its schedule). The schedule
    keeps its position: the run still ends after ``max_epochs``. A run whose validation loss never
    diverges trains exactly as it would without this callback. ``rolled_back_at`` lists the epochs
    undone in this process (``trainer.current_epoch``, from 0); :meth:`undone_epochs` finds them
    from the validation losses wherever training ran.
    """

    SCHEDULE_KEYS = frozenset({"initial_lr", "max_lr", "min_lr"})

    def __init__(self, threshold: float = 1.5, rate_factor: float = 0.5, monitor: str = "val_loss"):
        if threshold <= 1 or not 0 < rate_factor < 1:
            raise ValueError(
                f"RollBackOnDivergence needs threshold > 1 and 0 < rate_factor < 1; got threshold={threshold}, "
                f"rate_factor={rate_factor}."
            )
        self.threshold, self.rate_factor, self.monitor = threshold, rate_factor, monitor
        self.best_score, self.rolled_back_at = math.inf, []
        self._best: Optional[tuple[dict, list[dict]]] = None

    def on_fit_start(self, trainer, pl_module) -> None:
        self.best_score, self.rolled_back_at, self._best = math.inf, [], None

    def diverged(self, score: float, best: float) -> bool:
        """Whether an epoch that ends at ``score`` is undone, after epochs whose lowest was ``best``."""
        return best < math.inf and (score > self.threshold * best or not math.isfinite(score))

    def undone_epochs(self, val_losses: list[float]) -> list[int]:
        """The epochs this callback undid in a run with these per-epoch validation losses (its rule
        replayed: training in other processes, e.g. ``ddp_spawn``, leaves ``rolled_back_at`` empty)."""
        best, undone = math.inf, []
        for epoch, loss in enumerate(val_losses):
            if loss < best:
                best = loss
            elif self.diverged(loss, best):
                undone.append(epoch)
        return undone

    def on_validation_end(self, trainer, pl_module) -> None:
        score = trainer.callback_metrics.get(self.monitor)
        if trainer.sanity_checking or score is None:
            return
        score = float(score)
        if score < self.best_score:
            optimizers = [copy.deepcopy(o.state_dict()) for o in trainer.optimizers]
            self.best_score, self._best = score, (_snapshot(pl_module), optimizers)
        elif self._best is not None and self.diverged(score, self.best_score):
            weights, optimizers = self._best
            for state in optimizers:  # a later rollback starts from the lowered rates too
                for group in state["param_groups"]:
                    for key in self.SCHEDULE_KEYS & group.keys():
                        group[key] *= self.rate_factor
            pl_module.load_state_dict(weights)
            for optimizer, state in zip(trainer.optimizers, optimizers, strict=True):
                rates = [group["lr"] * self.rate_factor for group in optimizer.param_groups]  # the schedule's now
                optimizer.load_state_dict(copy.deepcopy(state))  # loading may keep the tensors: train on copies
                for group, rate in zip(optimizer.param_groups, rates, strict=True):
                    group["lr"] = rate
            self.rolled_back_at.append(trainer.current_epoch)
