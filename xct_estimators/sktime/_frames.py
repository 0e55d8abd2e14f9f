"""The pandas frames the sktime forecaster is given: their checks, and a panel's instances."""

from __future__ import annotations

import pandas as pd


def check_regular_index(index: pd.Index, name: str, after: str = "") -> None:
    """Forecasts are placed after the cutoff by the index's frequency, and a window is read as
    consecutive steps: refuse a datetime index without a frequency, or an integer one with a gap,
    naming where the steps break. ``after``: the call that joined new rows to the context."""
    if pd.api.types.is_integer_dtype(index) and not isinstance(index, pd.MultiIndex) and len(index) > 1:
        steps = index[1:] - index[:-1]
        if (steps != steps[0]).any():
            breaks = index[1:][steps != steps[0]]
            raise ValueError(
                f"{name}{' (with the context kept from before ' + after + ')' if after else ''} skips time points: its "
                f"integer index steps by {steps[0]} but not at {_shown(breaks)}. A window is read as consecutive "
                "steps: pass the rows that continue the data without a gap."
            )
        return
    if not isinstance(index, pd.DatetimeIndex) or index.freq is not None or len(index) < 3:
        return
    if pd.infer_freq(index) is not None:
        return
    steps = index[1:] - index[:-1]
    usual = steps.value_counts().idxmax()
    breaks = index[1:][steps != usual]
    shown = ", ".join(str(t) for t in breaks[:3]) + (", ..." if len(breaks) > 3 else "")
    if after:
        raise ValueError(
            f"{name} (with the context kept from before {after}) skips time points: {len(breaks)} step(s) differ "
            f"from the usual {usual} (at {shown}). A window is read as consecutive steps: pass the rows that "
            "continue the data without a gap."
        )
    raise ValueError(
        f"{name} has a DatetimeIndex without a regular frequency: {len(breaks)} step(s) differ from the usual "
        f"{usual} (at {shown}). Forecast timestamps come from the frequency: make the index regular, e.g. "
        f"{name}.asfreq(...) and fill the new gaps (XCTFormerImputer), or use a RangeIndex."
    )


def _shown(index: pd.Index) -> str:
    return ", ".join(str(t) for t in index[:3]) + (", ..." if len(index) > 3 else "")


def _kind(index: pd.Index) -> str:
    if isinstance(index, (pd.DatetimeIndex, pd.PeriodIndex)):
        return f"a {type(index).__name__}"
    return "an integer index" if pd.api.types.is_integer_dtype(index) else f"a {type(index).__name__}"


def check_x_rows(x_index: pd.Index, steps: pd.Index, what: str, fix: str) -> None:
    """X is read at ``steps`` (y's time points, or the forecast's), by time, not by position: it
    needs a row at each of them, of the same kind of index, and none between them (X sampled more
    often than y would be read in part)."""
    if _kind(x_index) != _kind(steps):
        raise ValueError(
            f"X has {_kind(x_index)} but {what} has {_kind(steps)}: X is matched to y by time. Give X the "
            f"same kind of index as y, with {fix}."
        )
    missing = steps[~steps.isin(x_index)]
    if len(missing):
        span = f"X spans {x_index.min()} to {x_index.max()}" if len(x_index) else "X is empty"
        raise ValueError(
            f"X does not cover {what}: {len(missing)} of {what}'s {len(steps)} time points have no row in X "
            f"({_shown(missing)}; {span}). The exogenous values are inputs of every step: pass X with {fix}."
        )
    inside = x_index[(x_index >= steps.min()) & (x_index <= steps.max())]
    between = inside[~inside.isin(steps)]
    if len(between):
        raise ValueError(
            f"X has {len(between)} row(s) between {what}'s time points ({_shown(between)}): it is sampled more "
            "often than y, and only some of its rows would be read. Resample X to y's frequency first (e.g. "
            "X.resample(<y's frequency>).mean())."
        )


def check_x_matches_y(X: pd.DataFrame, y: pd.DataFrame, fix: str) -> None:
    """:func:`check_x_rows` for every instance of ``y`` (its time points) and ``X`` (the same instance's rows)."""
    x_parts = dict(instances(X))
    for key, part in instances(y):
        if key not in x_parts:
            raise ValueError(
                f"X has no rows for y's instance {key} (X's instances: {list(x_parts)[:5]}"
                f"{' ...' if len(x_parts) > 5 else ''}): X is matched to y by instance and time. Pass X with {fix}, "
                "for every instance of y."
            )
        check_x_rows(x_parts[key].index, part.index, "y" if key is None else f"y's instance {key}", fix)


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


def in_fitted_order(X: pd.DataFrame, fitted: list, who: str) -> pd.DataFrame:
    """``X``'s columns read by name, in the order ``fit`` saw them (another order is the same data);
    other or missing columns are refused, naming them. A Series (one column) is read as it is."""
    if not isinstance(X, pd.DataFrame):
        return X
    columns = list(X.columns)
    if columns == list(fitted):
        return X
    if sorted(map(str, columns)) != sorted(map(str, fitted)) or len(set(map(str, columns))) != len(columns):
        missing = [c for c in fitted if c not in columns]
        unexpected = [c for c in columns if c not in fitted]
        raise ValueError(
            f"X has columns {columns}, but {who} was fitted on {list(fitted)} (missing: {missing}, unexpected: "
            f"{unexpected}): each column is read by its name, so pass the same columns (any order) or fit again."
        )
    by_name = {str(c): c for c in columns}  # labels compared as text: 0 and "0" are one column
    return X[[by_name[str(c)] for c in fitted]].set_axis(list(fitted), axis=1)  # joins with fit's X by label
