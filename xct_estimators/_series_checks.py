"""Checks of the Darts series given to ``XCTFormerModel`` (one or a list)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from darts import TimeSeries

from ._checks import check_value_range


def as_list(series) -> list[TimeSeries]:
    if series is None:
        return []
    return list(series) if isinstance(series, Sequence) else [series]


def check_same_components(series, name: str) -> None:
    """One global network has one channel count: every series of a list needs the same components."""
    counts = [s.n_components for s in as_list(series) if isinstance(s, TimeSeries)]
    if len(set(counts)) > 1:
        odd = next(i for i, c in enumerate(counts) if c != counts[0])
        raise ValueError(
            f"{name}[{odd}] has {counts[odd]} components but {name}[0] has {counts[0]} ({name} component counts: "
            f"{counts}): one XCTFormerModel is trained on all series, so each needs the same components in the "
            "same order. Split them into groups with one model each, or align their columns."
        )


def check_finite(series, name: str) -> None:
    for i, s in enumerate(as_list(series)):
        if not isinstance(s, TimeSeries):
            continue  # Darts raises its own error for wrong types
        values = s.values(copy=False)
        where = _where(series, name, i)
        if not np.isfinite(values).all():
            kind = "NaN" if np.isnan(values).any() else "infinite"
            bad = int((~np.isfinite(values)).sum())
            raise ValueError(
                f"{where} contains {bad} {kind} value(s); XCTFormerModel needs finite values. "
                "Fill missing values first, e.g. with darts.dataprocessing.transformers."
                "MissingValuesFiller or xct_estimators.XCTFormerImputer, and remove infinities."
            )
        check_value_range(values, list(s.components), where)


def check_static_finite(series, name: str) -> None:
    """Static covariates become tokens: a NaN or an infinity there makes every forecast NaN."""
    for i, s in enumerate(as_list(series)):
        static = s.static_covariates if isinstance(s, TimeSeries) else None
        if static is None:
            continue
        numeric = static.select_dtypes(include=np.number).to_numpy(dtype=np.float64)
        if not np.isfinite(numeric).all():
            bad = sorted({str(static.columns[j]) for j in np.flatnonzero(~np.isfinite(numeric).all(axis=0))})
            raise ValueError(
                f"the static covariates {bad} of {_where(series, name, i)} contain NaN or infinite values; "
                "XCTFormerModel makes each row a token and needs finite numbers. Fill them (e.g. "
                "series.with_static_covariates(series.static_covariates.fillna(0.0))), or pass "
                "use_static_covariates=False to ignore them."
            )


def _where(group, name: str, i: int) -> str:
    return f"{name}[{i}]" if isinstance(group, Sequence) else name


def check_long_enough(group, name: str, input_chunk_length: int, output_chunk_length: int, shift: int) -> None:
    """Every series holds at least one training sample."""
    needed = input_chunk_length + output_chunk_length + shift
    for i, s in enumerate(as_list(group)):
        if len(s) < needed:
            raise ValueError(
                f"{_where(group, name, i)} has {len(s)} time steps, too short for one training sample of "
                "XCTFormerModel: it needs at least input_chunk_length + output_chunk_length + "
                f"output_chunk_shift = {input_chunk_length} + {output_chunk_length} + {shift} = {needed}. "
                "Use a longer series or shorter input/output chunks."
            )


def _count(n: int, what: str = "component") -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def check_prediction_inputs(model, series, past_covariates, future_covariates):
    """The one set of checks before any forecast of a fitted ``XCTFormerModel``: ``predict``,
    ``historical_forecasts`` on Darts' path and on the direct one. Missing arguments are filled as
    Darts fills them (the series and covariates of a single-series ``fit``); returns them as lists
    (``None`` where absent)."""
    named = {"series": series, "past_covariates": past_covariates, "future_covariates": future_covariates}
    for name, value in named.items():
        check_finite(value, name)
    if series is None and model.training_series is not None:
        named["series"] = model.training_series
    fitted = {"past_covariates": model.past_covariate_series, "future_covariates": model.future_covariate_series}
    encoded = _encoded_components(model)
    for name, covariates in fitted.items():
        if named[name] is None and covariates is not None and not encoded[name]:
            named[name] = covariates if isinstance(named["series"], TimeSeries) else [covariates] * len(named["series"])
    checks = _Named(named)
    if not checks.lists["series"]:  # nothing to forecast from: Darts says that series must be given
        return [], None, None
    for name in fitted:
        if checks.lists[name] and len(checks.lists[name]) != len(checks.lists["series"]):
            raise ValueError(
                f"{len(checks.lists['series'])} series but {len(checks.lists[name])} {name}: pass one {name} series "
                "for each target series."
            )
    if model.model is not None:
        _check_against_fit(model, checks, encoded)
    for name in fitted:
        for i, (target, cov) in enumerate(zip(checks.lists["series"], checks.lists[name], strict=False)):
            if cov.freq != target.freq:
                raise ValueError(
                    f"{checks.where(name, i)} has frequency {cov.freq_str!r} but {checks.where('series', i)} has "
                    f"{target.freq_str!r}: covariates must be sampled like the target. Resample them first (e.g. "
                    f"with TimeSeries.resample(freq) or pandas' resample)."
                )
    return tuple(checks.lists[name] or None for name in named)


class _Named:
    """The arguments as lists, and each element's name as the user wrote it (``series`` or ``series[2]``)."""

    def __init__(self, named: dict):
        self.named = named
        self.lists = {name: as_list(value) for name, value in named.items()}

    def where(self, name: str, i: int) -> str:
        return _where(self.named[name], name, i)


def _encoded_components(model) -> dict:
    """The covariate channels ``add_encoders`` makes, by kind."""
    past, future = (0, 0)
    if model.encoders is not None and model.encoders.encoding_available:
        past, future = model.encoders.encoding_n_components
    return {"past_covariates": past, "future_covariates": future}


def _check_against_fit(model, checks: _Named, encoded: dict) -> None:
    """The components the network was built for: targets, each kind of covariate, static rows."""
    config = model.model.net.config
    n_targets = model.model.n_target_channels
    for i, s in enumerate(checks.lists["series"]):
        if s.n_components != n_targets:
            raise ValueError(
                f"{checks.where('series', i)} has {_count(s.n_components)}, but XCTFormerModel was fitted on series "
                f"with {_count(n_targets)}: predict with series of the same components as in fit (or refit the model)."
            )
    expected = {
        "past_covariates": config.n_channels - n_targets - config.n_future_channels,
        "future_covariates": config.n_future_channels,
    }
    for name, count in expected.items():
        covariates = checks.lists[name]
        if encoded[name]:
            continue  # Darts adds the encoders' channels to what is given, and checks the sum
        if count and not covariates:
            raise ValueError(
                f"XCTFormerModel was fitted with {name} ({_count(count)}) and none were given: pass {name}= with "
                "the same components, covering the input window of every forecast."
            )
        if covariates and not count:
            raise ValueError(
                f"XCTFormerModel was fitted without {name}, but {name} were given: drop them, or refit the model "
                f"with {name}."
            )
        for i, cov in enumerate(covariates):
            if cov.n_components != count:
                raise ValueError(
                    f"{checks.where(name, i)} has {_count(cov.n_components)}, but XCTFormerModel was fitted with "
                    f"{name} of {_count(count)}: pass the same components as in fit (or refit the model)."
                )
    if config.n_static_tokens:
        check_static_finite(checks.named["series"], "series")
        rows_features = (config.n_static_tokens, config.static_features)
        for i, s in enumerate(checks.lists["series"]):
            shape = None if s.static_covariates is None else s.static_covariates_values(copy=False).shape
            if shape != rows_features:
                has = "no static covariates" if shape is None else f"static covariates of shape {shape}"
                raise ValueError(
                    f"{checks.where('series', i)} has {has}, but XCTFormerModel was fitted with static covariates "
                    f"of shape {rows_features} (rows, features): give every series the same static covariates' "
                    "columns, or refit with use_static_covariates=False."
                )
