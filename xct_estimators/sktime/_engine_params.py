"""What the sktime imputer and detector share: their engine, built from their parameters."""

from __future__ import annotations

import inspect

from ..reconstruction import ReconstructionEngine

#: The engine's constructor arguments: an estimator parameter of the same name is passed through.
ENGINE_PARAMS = tuple(inspect.signature(ReconstructionEngine.__init__).parameters)[1:]

# Tiny settings for sktime's estimator checks: they use short series.
TEST_PARAMS = dict(
    window_length=8,
    patch_len=4,
    stride=2,
    d_model=8,
    n_heads=1,
    d_ff=16,
    e_layers=1,
    n_epochs=1,
    batch_size=16,
    random_state=0,
    progress_bar=False,
    accelerator="cpu",
    validation_fraction=0.0,
)


def build_engine(estimator) -> ReconstructionEngine:
    """A fresh engine from an estimator's constructor parameters."""
    params = estimator.get_params(deep=False)
    return ReconstructionEngine(**{name: value for name, value in params.items() if name in ENGINE_PARAMS})
