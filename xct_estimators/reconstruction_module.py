"""The Lightning module behind :class:`~xct_estimators.reconstruction.ReconstructionEngine`."""

from __future__ import annotations

from typing import Optional

import pytorch_lightning as pl
import torch

from ._devices import prepare_training_process
from ._optim import optimizer_kwargs_with_fused
from .nn import XCTFormerConfig, XCTFormerNet
from .nn.compiling import CompiledNetwork
from .nn.fill import linear_fill
from .nn.presets import PAPER_PCT_START


class _ReconstructionModule(CompiledNetwork, pl.LightningModule):
    """Lightning wrapper: masked (imputation) or plain (anomaly) reconstruction MSE.

    Training hides ``mask_rate`` of the observed points at random in every batch; validation
    batches carry their own fixed ``hidden`` masks, so validation losses of different epochs
    compare the same task.
    """

    def __init__(self, config: XCTFormerConfig, mask_rate: Optional[float], learning_rate: float, fill: str):
        super().__init__()
        self.net = XCTFormerNet(config)
        self.mask_rate = mask_rate
        self.learning_rate = learning_rate
        self.fill = fill
        self.val_losses: list[float] = []
        self.epochs_done = 0

    # The training history travels in the state dict: a spawned training process (ddp_spawn)
    # hands it back with the weights. It only grows, so restoring the best epoch's weights
    # (KeepBestValidationWeights) keeps the later epochs' history.
    def get_extra_state(self) -> dict:
        return {"val_losses": list(self.val_losses), "epochs_done": self.epochs_done}

    def set_extra_state(self, state: dict) -> None:
        if state["epochs_done"] >= self.epochs_done:
            self.val_losses, self.epochs_done = list(state["val_losses"]), state["epochs_done"]

    def setup(self, stage: str) -> None:
        super().setup(stage)
        prepare_training_process(self.trainer.world_size)
        self.compile_network(self.trainer.strategy.root_device)  # each process: pickling drops it

    def on_train_epoch_end(self):
        self.epochs_done += 1

    def reconstruct(self, x: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        """The network's reconstruction of windows ``x`` of which it may see the ``visible`` points."""
        if self.fill == "linear":
            return self.net(linear_fill(x, visible))
        return self.net(x, mask=None if bool(visible.all()) else visible)

    def _loss(self, x: torch.Tensor, observed: torch.Tensor, hidden: Optional[torch.Tensor]) -> torch.Tensor:
        if hidden is None:
            recon, target = self.reconstruct(x, observed), observed
        else:
            recon = self.reconstruct(x, observed & ~hidden)
            target = observed & hidden  # the loss sees only points the network did not
        return (recon - x).square()[target].sum() / target.sum().clamp_min(1)

    def training_step(self, batch, batch_idx):
        x, observed = batch
        hidden = torch.rand(observed.shape, device=observed.device) < self.mask_rate if self.mask_rate else None
        loss = self._loss(x, observed, hidden)
        self.log("train_loss", loss, prog_bar=True, batch_size=x.shape[0])
        return loss

    def validation_step(self, batch, batch_idx):
        x, observed, hidden = batch
        loss = self._loss(x, observed, hidden if self.mask_rate else None)
        self.log("val_loss", loss, prog_bar=True, batch_size=x.shape[0], sync_dist=True)  # all ranks' windows
        return loss

    def on_validation_epoch_end(self):
        if not self.trainer.sanity_checking:
            self.val_losses.append(float(self.trainer.callback_metrics["val_loss"]))

    def configure_optimizers(self):
        kwargs = optimizer_kwargs_with_fused(torch.optim.Adam, {"lr": self.learning_rate}, self.parameters())
        optimizer = torch.optim.Adam(self.parameters(), **kwargs)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer,
            max_lr=self.learning_rate,
            total_steps=max(int(self.trainer.estimated_stepping_batches), 1),
            pct_start=PAPER_PCT_START,
        )
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]
