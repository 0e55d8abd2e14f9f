"""The pandas frames the sktime forecaster is given: their checks, and a panel's instances."""

from __future__ import annotations

import pandas as pd


def check_regular_index(index: pd.Index, name: str) -> None:
    """Forecasts are placed after the cutoff by the index's frequency: refuse a datetime index
    without one, naming where the steps break."""
    if not isinstance(index, pd.DatetimeIndex) or index.freq is not None or len(index) < 3:
        return
    if pd.infer_freq(index) is not None:
        return
    steps = index[1:] - index[:-1]
    usual = steps.value_counts().idxmax()
    breaks = index[1:][steps != usual]
    shown = ", ".join(str(t) for t in breaks[:3]) + (", ..." if len(breaks) > 3 else "")
    raise ValueError(
        f"{name} has a DatetimeIndex without a regular frequency: {len(breaks)} step(s) differ from the usual "
        f"{usual} (at {shown}). Forecast timestamps come from the frequency: make the index regular, e.g. "
        f"{name}.asfreq(...) and fill the new gaps (XCTFormerImputer), or use a RangeIndex."
    )


def check_x_covers_y(x_index: pd.Index, y_index: pd.Index) -> None:
    missing = y_index[~y_index.isin(x_index)]
    if len(missing):
        shown = ", ".join(str(t) for t in missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise ValueError(
            f"X does not cover y: {len(missing)} of y's {len(y_index)} time points have no row in X ({shown}). "
            "The exogenous values are inputs of every step of y: pass X with (at least) y's index."
        )


def is_panel(frame) -> bool:
    return frame is not None and isinstance(frame.index, pd.MultiIndex)


def instance_levels(frame: pd.DataFrame) -> list[int]:
    return list(range(frame.index.nlevels - 1))


def instances(frame: pd.DataFrame) -> list:
    """``[(key, frame with the time index only), ...]``: the instances of a panel or hierarchy in
    their order, or ``[(None, frame)]`` for one series."""
    if not is_panel(frame):
        return [(None, frame)]
    levels = instance_levels(frame)
    return [(key, part.droplevel(levels)) for key, part in frame.groupby(level=levels, sort=False)]
