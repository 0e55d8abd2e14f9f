"""Checks of the Darts series given to ``XCTFormerModel`` (one or a list)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from darts import TimeSeries

from ._checks import check_value_range


def as_list(series) -> list[TimeSeries]:
    if series is None:
        return []
    return list(series) if isinstance(series, Sequence) else [series]


def check_same_components(series, name: str) -> None:
    """One global network has one channel count: every series of a list needs the same components,
    and, for covariates, with the same names in the same order (each is read by its place)."""
    counts = [s.n_components for s in as_list(series) if isinstance(s, TimeSeries)]
    if len(set(counts)) > 1:
        odd = next(i for i, c in enumerate(counts) if c != counts[0])
        raise ValueError(
            f"{name}[{odd}] has {counts[odd]} components but {name}[0] has {counts[0]} ({name} component counts: "
            f"{counts}): one XCTFormerModel is trained on all series, so each needs the same components in the "
            "same order. Split them into groups with one model each, or align their columns."
        )
    if name.endswith("covariates") and isinstance(series, Sequence):
        first = list(as_list(series)[0].components) if counts else []
        for i, s in enumerate(as_list(series)[1:], start=1):
            check_names(list(s.components), first, f"{name}[{i}]", "components", against=f"{name}[0]")


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
    """Static covariates become tokens: a NaN, an infinity or a value beyond float32's reach there
    makes every forecast NaN."""
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
        check_value_range(numeric, list(static.select_dtypes(include=np.number).columns), f"the static covariates "
                          f"of {_where(series, name, i)}")  # fmt: skip


def static_columns(series) -> list:
    """The static covariates' columns of ``series`` (one or a list): the first's, after checking
    that every series of a list has the same (or none); ``[]`` without static covariates."""
    found = [None if s.static_covariates is None else list(s.static_covariates.columns) for s in as_list(series)]
    for i, columns in enumerate(found):
        if columns != found[0]:

            def has(c):
                return "no static covariates" if c is None else f"static covariates {c}"

            raise ValueError(
                f"series[{i}] has {has(columns)} but series[0] has {has(found[0])}: one XCTFormerModel reads the "
                "same static covariates' columns of every series. Give each series the same columns (e.g. with "
                "series.with_static_covariates(frame)), or pass use_static_covariates=False to ignore them."
            )
    return found[0] if found and found[0] is not None else []


def check_names(given: list, fitted: list, where: str, what: str, fix: str = "", against: str = "fit") -> None:
    """``given`` columns are ``fitted``'s (those of ``against``), in the same order: the network
    reads a column by its place. ``fix``: how to reorder them (default: selecting components)."""
    given, fitted = [str(c) for c in given], [str(c) for c in fitted]
    if given == fitted:
        return
    if sorted(given) == sorted(fitted):
        raise ValueError(
            f"{where} has the {what} of {against} in another order ({given}; {against}: {fitted}): the model reads "
            f"each by its place. Reorder them as in {against}, e.g. {fix or f'covariates[{fitted}]'}."
        )
    missing, unknown = [c for c in fitted if c not in given], [c for c in given if c not in fitted]
    raise ValueError(
        f"{where} has other {what} than {against} ({given}; {against}: {fitted}; missing: {missing}, not in "
        f"{against}: {unknown}): pass the ones named as in {against} (or refit the model)."
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
        check_sampled_like(checks.lists["series"], checks.lists[name], lambda i, n=name: checks.where(n, i),
                           lambda i: checks.where("series", i))  # fmt: skip
    return tuple(checks.lists[name] or None for name in named)


def check_sampled_like(targets: list, covariates: list, where, target_where) -> None:
    """Covariates are read at the target's time steps: the same frequency, on the same grid."""
    for i, (target, cov) in enumerate(zip(targets, covariates, strict=False)):
        if cov.freq != target.freq:
            raise ValueError(
                f"{where(i)} has frequency {cov.freq_str!r} but {target_where(i)} has {target.freq_str!r}: covariates "
                "must be sampled like the target. Resample them first (e.g. with TimeSeries.resample(freq) or "
                "pandas' resample)."
            )
        if not (target.has_datetime_index and cov.has_datetime_index):
            continue
        try:
            steps = (cov.start_time() - target.start_time()) / pd.Timedelta(target.freq)
        except (ValueError, TypeError):  # a calendar frequency (months, say): no fixed step to test against
            continue
        if steps != round(steps):
            raise ValueError(
                f"{where(i)} is stamped between the time steps of {target_where(i)} (it starts at "
                f"{cov.start_time()}, the target at {target.start_time()}, every {target.freq_str}): covariates are "
                "read at the target's own time steps. Align their timestamps first (e.g. shift or resample them)."
            )


def check_covariates_sampled_like(series, covariates, name: str) -> None:
    """:func:`check_sampled_like` for ``fit``'s arguments, named as the user passed them."""
    where = lambda i: _where(covariates, name, i)  # noqa: E731
    check_sampled_like(as_list(series), as_list(covariates), where, lambda i: _where(series, "series", i))


def as_dtype(series, dtype):
    """``series`` (one or a list, or None) as ``dtype``: covariates take the target's precision."""
    if series is None:
        return None
    if isinstance(series, TimeSeries):
        return series if series.dtype == dtype else series.astype(dtype)
    return [as_dtype(s, dtype) for s in series]


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
        fitted = _fitted_names(model, name)
        for i, cov in enumerate(covariates if fitted is not None else ()):  # the user's, without encoders'
            if cov.n_components == len(fitted):
                check_names(list(cov.components), fitted, checks.where(name, i), "components")
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
        fitted = getattr(model, "_fitted_static_columns", None)  # absent from saves made before it
        for i, s in enumerate(checks.lists["series"]):
            shape = None if s.static_covariates is None else s.static_covariates_values(copy=False).shape
            if shape != rows_features:
                has = "no static covariates" if shape is None else f"static covariates of shape {shape}"
                raise ValueError(
                    f"{checks.where('series', i)} has {has}, but XCTFormerModel was fitted with static covariates "
                    f"of shape {rows_features} (rows, features): give every series the same static covariates' "
                    "columns, or refit with use_static_covariates=False."
                )
            if fitted:
                where = f"the static covariates of {checks.where('series', i)}"
                fix = f"series.with_static_covariates(series.static_covariates[{fitted}])"
                check_names(list(s.static_covariates.columns), fitted, where, "columns", fix)


def _fitted_names(model, name: str):
    """The components of the covariates ``name`` in fit (the user's, without encoders'), if known."""
    parts = getattr(model, "_fitted_components", None)  # absent from saves made before it
    return None if parts is None else parts[("past_covariates", "future_covariates").index(name) + 1]
