"""The Lightning module behind :class:`~xct_estimators.forecasting.XCTFormerModel`."""

from __future__ import annotations

from typing import Any, Optional

import torch
from darts.models.forecasting.pl_forecasting_module import PLForecastingModule, io_processor
from darts.utils.data.torch_datasets.utils import PLModuleInput, PLModuleOutput
from darts.utils.torch import MonteCarloDropout
from torch import nn

from . import training  # noqa: F401 (registers the package's strategy, which saved models may name)
from ._devices import prepare_training_process
from ._optim import optimizer_kwargs_with_fused
from .callbacks import KeepBestValidationWeights
from .nn import XCTFormerConfig, XCTFormerNet
from .nn.compiling import CompiledNetwork
from .nn.dropout import Dropout, dropout
from .nn.presets import PAPER_PCT_START


class _MonteCarloDropout(MonteCarloDropout):
    """Darts' ``MonteCarloDropout`` drawing its mask as the network's dropout does (hashed, on
    CPU: :mod:`xct_estimators.nn.dropout`)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.mc_dropout_enabled)


def _monte_carlo_dropout(p: float) -> nn.Module:
    """The network's activation dropouts as Darts' Monte Carlo ones (same rate, same training
    behaviour), so ``predict(..., mc_dropout=True)`` samples as with TiDE or TSMixer. A zero rate
    stays a plain layer: a model without dropout does not claim probabilistic forecasts.
    Attention-weight dropout stays a training-only regulariser."""
    return _MonteCarloDropout(p) if p > 0 else Dropout(p)


class _XCTFormerModule(CompiledNetwork, PLForecastingModule):
    """Lightning module: the past target and past covariates become channels of one network, the
    static covariates tokens of their own; the future covariates go to the known-future decoder.

    The network decodes only the target channels; for a likelihood its head emits
    ``output_chunk_length * nr_params`` values per target channel.
    """

    def __init__(self, network: dict[str, Any], n_targets: int, nr_params: int, **kwargs):
        super().__init__(**kwargs)
        self.network_params = network
        self.n_target_channels = n_targets
        self.nr_params = nr_params
        self.net = XCTFormerNet(XCTFormerConfig(**network), dropout_layer=_monte_carlo_dropout)

    @io_processor
    def forward(self, x_in: PLModuleInput) -> PLModuleOutput:
        x = x_in.concatenate_past_features()  # (B, L, targets + past covariates + future covariates)
        config = self.net.config
        future = x_in.future_covariates if config.n_future_channels else None  # (B, T, future covariates)
        static = x_in.static_covariates if config.n_static_tokens else None  # (B, rows, features)
        y = self.net(x, n_outputs=self.n_target_channels, future=future, static=static)  # (B, T * nr_params, targets)
        b = y.shape[0]
        y = y.view(b, self.output_chunk_length, self.nr_params, self.n_target_channels)
        return PLModuleOutput(prediction=y.transpose(2, 3))  # (B, T, targets, nr_params)

    def setup(self, stage: str) -> None:
        super().setup(stage)
        prepare_training_process(self.trainer.world_size)
        self.compile_network(self.trainer.strategy.root_device)  # each process: pickling drops it

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        # Darts' batches are CPU tensors already; Lightning's generic walk over the batch
        # dataclass costs about as much as a small model's forward pass.
        if device.type == "cpu":
            return batch
        return super().transfer_batch_to_device(batch, device, dataloader_idx)

    def configure_optimizers(self):
        # Filled in for this call only, so the model's saved arguments stay the user's:
        # OneCycleLR's total step count (known once the trainer exists) unless the user gave
        # total_steps or steps_per_epoch, and Adam's fused implementation (see _optim).
        optimizer_kwargs, scheduler_kwargs = self.optimizer_kwargs, self.lr_scheduler_kwargs
        self.optimizer_kwargs = optimizer_kwargs_with_fused(self.optimizer_cls, optimizer_kwargs, self.parameters())
        if (
            self.lr_scheduler_cls is torch.optim.lr_scheduler.OneCycleLR
            and not {"total_steps", "steps_per_epoch"} & scheduler_kwargs.keys()
            and self._trainer is not None
        ):
            self.lr_scheduler_kwargs = {**scheduler_kwargs, "total_steps": int(self.trainer.estimated_stepping_batches)}
        try:
            return super().configure_optimizers()
        finally:
            self.optimizer_kwargs, self.lr_scheduler_kwargs = optimizer_kwargs, scheduler_kwargs


def paper_recipe(learning_rate: float, keep_best_val_weights: bool, pl_trainer_kwargs: Optional[dict]) -> dict:
    """The paper's training recipe as ``XCTFormerModel`` arguments: Adam, ``OneCycleLR`` peaking at
    ``learning_rate`` and stepped per batch, MSE loss, and (optionally) the best-validation weights kept.
    ``pl_trainer_kwargs`` are merged, their callbacks extended."""
    schedule = {"max_lr": learning_rate, "pct_start": PAPER_PCT_START, "interval": "step"}
    trainer_kwargs = dict(pl_trainer_kwargs or {})
    callbacks = list(trainer_kwargs.get("callbacks", []))
    if keep_best_val_weights:
        callbacks.append(KeepBestValidationWeights())
    trainer_kwargs["callbacks"] = callbacks
    return dict(
        optimizer_cls=torch.optim.Adam,
        optimizer_kwargs={"lr": learning_rate},
        loss_fn=torch.nn.MSELoss(),
        lr_scheduler_cls=torch.optim.lr_scheduler.OneCycleLR,
        lr_scheduler_kwargs=schedule,
        pl_trainer_kwargs=trainer_kwargs,
    )
