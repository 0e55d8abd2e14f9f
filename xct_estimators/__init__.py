"""XCTFormer for Darts and sktime.

The estimators are imported lazily, so ``import xct_estimators.nn`` stays free of Darts
and sktime.
"""

from importlib import import_module

from ._devices import bind_spawned_trainer

__version__ = "0.1.0"

bind_spawned_trainer()  # a training process spawned by the package: bound to its parent first thing

_LAZY = {
    "XCTFormerModel": "xct_estimators.forecasting",
    "KeepBestValidationWeights": "xct_estimators.callbacks",
    "RollBackOnDivergence": "xct_estimators.callbacks",
    "ReconstructionEngine": "xct_estimators.reconstruction",
    "XCTFormerScorer": "xct_estimators.scorer",
    "XCTFormerImputer": "xct_estimators.sktime",
    "XCTFormerForecaster": "xct_estimators.sktime",
    "XCTFormerAnomalyDetector": "xct_estimators.sktime",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'xct_estimators' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
