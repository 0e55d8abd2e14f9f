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


def check_component_count(series, expected: int) -> None:
    """The series to predict have the components the model was fitted on."""
    for i, s in enumerate(as_list(series)):
        if s.n_components != expected:
            raise ValueError(
                f"{_where(series, 'series', i)} has {s.n_components} components, but XCTFormerModel was "
                f"fitted on series with {expected} components: predict with series of the same components "
                "as in fit (or refit the model)."
            )
