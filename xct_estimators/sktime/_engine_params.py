"""What the sktime imputer and detector share: their engine, built from their parameters."""

from __future__ import annotations

import inspect
from dataclasses import fields

from .._checks import NotFittedError
from ..reconstruction import ReconstructionEngine

#: The engine's constructor arguments: an estimator parameter of the same name is passed through.
ENGINE_PARAMS = tuple(field.name for field in fields(ReconstructionEngine))

# Tiny settings for sktime's estimator checks: they fit short series, with no validation split.
TINY = dict(patch_len=4, stride=2, d_model=8, n_heads=1, d_ff=16, e_layers=1, n_epochs=1, batch_size=16)
TINY.update(random_state=0, validation_fraction=0.0)
TEST_PARAMS = dict(window_length=8, **TINY, progress_bar=False, accelerator="cpu")


def build_engine(estimator) -> ReconstructionEngine:
    """A fresh engine from an estimator's constructor parameters."""
    params = estimator.get_params(deep=False)
    return ReconstructionEngine(**{name: value for name, value in params.items() if name in ENGINE_PARAMS})


def store_parameters(estimator, arguments: dict) -> None:
    """Each constructor argument as the attribute of its name, and nothing else (the scikit-learn
    and sktime contract for ``__init__``); called as ``store_parameters(self, locals())``."""
    for name in inspect.signature(type(estimator).__init__).parameters:
        if name != "self":
            setattr(estimator, name, arguments[name])


class LoadsOlderPickles:
    """An estimator pickled before one of its parameters existed loads with that parameter's default."""

    def __setstate__(self, state: dict) -> None:
        signature = inspect.signature(type(self).__init__).parameters.values()
        vars(self).update({p.name: p.default for p in signature if p.name != "self"}, **state)


class FittedNetwork(LoadsOlderPickles):
    """``network_`` and ``channel_names_`` of an sktime estimator whose fitted engine is ``engine_``
    and whose fitted columns are ``columns_``."""

    @property
    def network_(self):
        """The trained :class:`~xct_estimators.nn.XCTFormerNet` (after ``fit``)."""
        if not hasattr(self, "engine_"):
            raise NotFittedError(f"This {type(self).__name__} has not been fitted yet: call fit() first.")
        return self.engine_.network_

    @property
    def channel_names_(self) -> list[str]:
        """The columns of ``X`` seen in ``fit``, as strings: the network's channels."""
        self.network_  # noqa: B018 (raises before fit)
        return [str(c) for c in self.columns_]
