"""Every private Darts name this package uses, used only here. A Darts release that renames or
reshapes one fails ``tests/test_darts_private.py``, which names it, instead of a user's call.
Where Darts has a public way, the package takes it; these have none:

- ``TorchForecastingModel``'s hooks that :class:`~xct_estimators.XCTFormerModel` overrides
  (:data:`OVERRIDDEN_HOOKS`): the constructor's split of keyword arguments, checkpoint loading,
  the optimised ``historical_forecasts`` without retraining;
- :func:`init_trainer`, :func:`set_saved_param` and :func:`dataset_bounds` below;
- :func:`expected_md5`: the hash Darts checks a downloaded dataset file against, and
  :func:`download_folder`, where Darts keeps what it downloads.
"""

from __future__ import annotations

from typing import Any

#: ``TorchForecastingModel`` members the model class overrides or calls on ``super()``, with the
#: parameters it passes (the test checks each exists with them).
OVERRIDDEN_HOOKS = {
    "_extract_torch_model_params": (),
    "_extract_pl_module_params": (),
    "_load_from_checkpoint": ("file_path", "trusted"),
    "_ckpt_skipped_params": None,  # a property
    "_optimized_historical_forecasts": (
        "series", "past_covariates", "future_covariates", "num_samples", "start", "start_format",
        "forecast_horizon", "stride", "overlap_end", "last_points_only", "verbose", "show_warnings",
        "predict_likelihood_parameters", "random_state", "predict_kwargs",
    ),
    "_init_trainer": ("trainer_params", "max_epochs"),
    "_setup_for_train": ("train_dataset",),
}  # fmt: skip
#: Private functions called, by module, with the parameters passed.
CALLED = {
    ("darts.utils.historical_forecasts.optimized_historical_forecasts_torch", "_create_dataset_bounds"): (
        "model", "series", "past_covariates", "future_covariates", "start", "start_format", "forecast_horizon",
        "stride", "overlap_end", "show_warnings",
    ),
}  # fmt: skip


def init_trainer(model, params: dict[str, Any], max_epochs: int):
    """The Lightning trainer Darts would build for ``model`` from ``params``."""
    return model._init_trainer(params, max_epochs=max_epochs)


def set_saved_param(model, name: str, value) -> None:
    """Change a constructor argument that ``model.save`` keeps and ``untrained_model`` rebuilds from."""
    model._model_params[name] = value


def dataset_bounds(**kwargs):
    """Darts' (start, end) sample bounds of each series for ``historical_forecasts`` windows."""
    from darts.utils.historical_forecasts.optimized_historical_forecasts_torch import _create_dataset_bounds

    return _create_dataset_bounds(**kwargs)


def expected_md5(loader) -> str:
    """The md5 hash Darts' dataset ``loader`` expects of its file."""
    return loader._metadata.hash


def download_folder(loader):
    """The folder Darts' dataset ``loader`` downloads into (``~/.darts/datasets`` by default)."""
    return loader._root_path
