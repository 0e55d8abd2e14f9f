"""Lightning trainer settings shared by every estimator's training, and the reconstruction
engine's data loaders and validation callbacks."""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np
import torch
from pytorch_lightning.callbacks import EarlyStopping
from pytorch_lightning.strategies import DDPStrategy, StrategyRegistry
from pytorch_lightning.strategies.launchers.multiprocessing import _MultiProcessingLauncher

from ._devices import SPAWNED_BY, device_count, die_with_parent
from .callbacks import EarlyStoppingAfterWarmup, KeepBestValidationWeights
from .nn.presets import PAPER_PCT_START
from .windows import SeriesWindows, sliding_windows, whole_batch

#: A library fit writes no logs, checkpoints or model summary.
QUIET = {"logger": False, "enable_checkpointing": False, "enable_model_summary": False}
#: The strategy of a fit on several devices: Lightning's ``ddp_spawn``, whose processes die with
#: their parent from their first step (:class:`ParentBoundSpawn`).
SPAWN = "ddp_spawn_parent_bound"


class _ParentBoundLauncher(_MultiProcessingLauncher):
    """Lightning's launcher of spawned processes, each bound to its parent before it does any work
    (:func:`~._devices.die_with_parent`): a parent killed at any moment takes them along."""

    def launch(self, *args, **kwargs):
        before = os.environ.get(SPAWNED_BY)
        os.environ[SPAWNED_BY] = str(os.getpid())  # the spawned processes bind as they import the package
        try:
            return super().launch(*args, **kwargs)
        finally:
            if before is None:
                os.environ.pop(SPAWNED_BY, None)
            else:
                os.environ[SPAWNED_BY] = before

    def _wrapping_function(self, process_idx, *args, **kwargs):
        die_with_parent()  # where the package was imported before the variable was read
        return super()._wrapping_function(process_idx, *args, **kwargs)


class ParentBoundSpawn(DDPStrategy):
    """``ddp_spawn`` whose processes die with their parent (:data:`SPAWN`)."""

    def _configure_launcher(self) -> None:
        super()._configure_launcher()
        if type(self._launcher) is _MultiProcessingLauncher:
            self._launcher = _ParentBoundLauncher(self, start_method=self._start_method)


if SPAWN not in StrategyRegistry:
    StrategyRegistry.register(
        SPAWN, ParentBoundSpawn, "ddp_spawn, processes die with their parent", start_method="spawn"
    )


def trainer_kwargs(*layers: dict[str, Any]) -> dict:
    """Keyword arguments of a Lightning ``Trainer`` for one fit: quiet, on ``"auto"`` accelerator
    and devices, ``ddp_spawn`` on several devices (Lightning's default, ``ddp``, reruns the
    calling script: wrong inside notebooks, tests, pipelines and ``xct-bench``), its processes
    bound to their parent (:data:`SPAWN`). Each of
    ``layers`` (the estimator's settings, then the user's ``pl_trainer_kwargs``) wins over the
    ones before it."""
    kwargs: dict[str, Any] = {**QUIET, "accelerator": "auto", "devices": "auto", "enable_progress_bar": False}
    for layer in layers:
        kwargs.update(layer)
    if "strategy" not in kwargs and device_count(kwargs["devices"]) > 1:
        kwargs["strategy"] = SPAWN
    return kwargs


def training_loader(
    values: np.ndarray, starts: np.ndarray, length: int, batch_size: int, seed: Optional[int], distributed: bool
) -> torch.utils.data.DataLoader:
    """Shuffled windows of ``values``. Only full batches unless one batch holds every window: the
    encoder's BatchNorm normalises over batch x tokens, and a last batch of one window spikes the
    gradient and corrupts the running statistics. Several processes: Lightning's distributed
    sampler shuffles (seeded by ``seed_everything``; a ``torch.Generator`` cannot be sent to
    spawned processes)."""
    generator = None
    if not distributed:
        generator = torch.Generator()
        if seed is not None:
            generator.manual_seed(seed)
    windows = SeriesWindows(values, starts, length)
    drop_last = len(windows) > batch_size
    options = dict(batch_size=batch_size, shuffle=True, generator=generator, drop_last=drop_last)
    return torch.utils.data.DataLoader(windows, collate_fn=whole_batch, **options)


def validation_loader(
    values: np.ndarray, starts: np.ndarray, length: int, mask_rate: Optional[float], seed, batch_size: int
) -> torch.utils.data.DataLoader:
    """Validation windows with fixed hidden points (drawn once from ``seed``), so every epoch's
    validation loss measures the same task."""
    x = torch.from_numpy(sliding_windows(np.nan_to_num(values), starts, length))
    observed = torch.from_numpy(sliding_windows(~np.isnan(values), starts, length))
    hidden = np.random.default_rng(seed).random(x.shape) < (mask_rate or 0.0)
    dataset = torch.utils.data.TensorDataset(x, observed, torch.from_numpy(hidden))
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size)


def validation_callbacks(patience: Optional[int], after_warmup: bool, n_epochs: int) -> list:
    """Best-validation weights restored at the end, and early stopping after ``patience`` epochs
    without a lower validation loss (counted from the end of the one-cycle warm-up if
    ``after_warmup``, else from the first epoch, as the paper's code does)."""
    return [
        KeepBestValidationWeights(),
        *([] if patience is None else [early_stopping(patience, after_warmup, n_epochs)]),
    ]


def early_stopping(patience: int, after_warmup: bool, n_epochs: int) -> EarlyStopping:
    """Lightning's early stopping on ``val_loss``, counting from the end of the one-cycle warm-up
    (``after_warmup``) or from the first epoch."""
    stopping = dict(monitor="val_loss", patience=patience, mode="min")
    if after_warmup:
        return EarlyStoppingAfterWarmup(int(np.ceil(PAPER_PCT_START * n_epochs)), **stopping)
    return EarlyStopping(**stopping)
