"""Constructor parameters shared by the sktime imputer and detector."""

from __future__ import annotations

from ..reconstruction import ReconstructionEngine

# Parameter names passed through to ReconstructionEngine unchanged.
ENGINE_PARAMS = (
    "window_length", "patch_len", "stride", "d_model", "n_heads", "d_ff", "e_layers", "dropout",
    "fc_dropout", "attn_dropout", "decop_k", "n_epochs", "batch_size", "learning_rate", "patience",
    "validation_fraction", "window_stride", "random_state", "accelerator", "progress_bar",
)  # fmt: skip

# Tiny settings for sktime's estimator checks: they use short series.
TEST_PARAMS = dict(
    window_length=8, patch_len=4, stride=2, d_model=8, n_heads=1, d_ff=16, e_layers=1,
    n_epochs=1, batch_size=16, random_state=0, progress_bar=False, accelerator="cpu", validation_fraction=0.0,
)  # fmt: skip


def build_engine(estimator, **extra) -> ReconstructionEngine:
    """A fresh engine from an estimator's constructor parameters."""
    return ReconstructionEngine(**{name: getattr(estimator, name) for name in ENGINE_PARAMS}, **extra)
