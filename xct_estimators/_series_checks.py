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
        where = f"{name}[{i}]" if isinstance(series, Sequence) else name
        if not np.isfinite(values).all():
            kind = "NaN" if np.isnan(values).any() else "infinite"
            bad = int((~np.isfinite(values)).sum())
            raise ValueError(
                f"{where} contains {bad} {kind} value(s); XCTFormerModel needs finite values. "
                "Fill missing values first, e.g. with darts.dataprocessing.transformers."
                "MissingValuesFiller or xct_estimators.XCTFormerImputer, and remove infinities."
            )
        check_value_range(values, list(s.components), where)
