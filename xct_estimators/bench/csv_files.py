"""Reading a dataset from a CSV file: the Time-Series-Library layout, read right or refused with
the file, line and column, and what the file must look like."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from darts import TimeSeries

from .._checks import MAX_ABS_VALUE

LAYOUT = (
    "comma-separated, a header line, a column named 'date' (e.g. 2020-01-01 00:00:00), then one numeric column "
    "per channel, one row per time step"
)


def read_csv(path: Path, as_published: bool = False) -> TimeSeries:
    """The file's channels as one series, indexed by its dates at their frequency.

    ``as_published``: one of the paper's files, read row by row as the Time-Series-Library reads
    it; a repeated or missing time step there stays as published (the series is then indexed by
    row). A user's file must step regularly: a gap is refused with how to fill it."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"CSV file {path} not found.")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a readable CSV ({error}): the file must be {LAYOUT}.") from None
    _check_layout(frame, path)
    dates = frame.pop("date") if "date" in frame.columns else None
    _refuse_bad_values(frame, path)
    if dates is not None:
        index = _parse_dates(dates, path)
        if as_published and index.inferred_freq is None:
            index = pd.RangeIndex(len(frame))  # the protocol splits and windows by row, as published
        else:
            _refuse_unordered_dates(index, path)
            _refuse_missing_steps(index, path)
            index.freq = index.inferred_freq
        frame.index = index
    return TimeSeries.from_dataframe(frame.astype(np.float32))


def _check_layout(frame: pd.DataFrame, path: Path) -> None:
    header = ",".join(map(str, frame.columns))
    for separator, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "'|'")):
        if len(frame.columns) == 1 and separator in header:
            raise ValueError(
                f"{path} separates its columns with {name} (header {header!r}), but the file must be {LAYOUT}. "
                f"Convert it, e.g. pandas.read_csv(path, sep={separator!r}).to_csv(new_path, index=False)."
            )
    values = [column for column in frame.columns if column != "date"]
    if not values:
        raise ValueError(f"{path} has no value column (header {header!r}): the file must be {LAYOUT}.")
    if frame.empty:
        raise ValueError(f"{path} has a header ({header!r}) but no rows: the file must be {LAYOUT}, a row a time step.")
    if "date" not in frame.columns:
        for column in values:
            text = frame[column].head(20)
            if (
                not pd.api.types.is_numeric_dtype(text)
                and pd.to_datetime(text, errors="coerce", format="mixed").notna().all()
            ):
                raise ValueError(
                    f"{path}: column {column!r} holds dates, but the dates are read from a column named 'date': "
                    f"rename it to 'date' (the file must be {LAYOUT})."
                )


def _refuse_bad_values(frame: pd.DataFrame, path: Path) -> None:
    """Benchmark data must be complete and in float32's range: name the first bad cells."""
    numeric = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    for bad, what, fix in (
        (~np.isfinite(numeric), "missing, non-numeric or infinite value(s)",
         "benchmark data must be complete: fill or remove those rows (or restore the file if it was truncated "
         "or edited; see docs/benchmarks.md, Datasets)"),
        (np.abs(numeric) > MAX_ABS_VALUE, f"value(s) beyond ±{MAX_ABS_VALUE:.0e}",
         "the data are read as float32 and standardised, which overflows there: divide those columns by a "
         "constant first"),
    ):  # fmt: skip
        if bad.any():
            rows, cols = np.nonzero(bad)
            cells = ", ".join(
                f"line {r + 2} column {frame.columns[c]!r}" for r, c in zip(rows[:5], cols[:5], strict=True)
            )
            more = ", ..." if bad.sum() > 5 else ""
            raise ValueError(f"{path} has {int(bad.sum())} {what} ({cells}{more}): {fix}.")


def _parse_dates(dates: pd.Series, path: Path) -> pd.DatetimeIndex:
    if pd.api.types.is_numeric_dtype(dates):
        raise ValueError(
            f"{path}: column 'date' holds numbers (line 2: {dates.iloc[0]}), not dates: write dates such as "
            "2020-01-01 00:00:00, or remove the column to index the rows by position (then without calendar "
            "covariates)."
        )
    try:
        parsed = pd.to_datetime(dates, errors="coerce")
    except ValueError:  # pandas refuses several UTC offsets in one column
        offsets = dates.astype(str).str.extract(r"([+-]\d\d:?\d\d|Z)$", expand=False)
        other = int(np.flatnonzero(offsets.ne(offsets.iloc[0]).to_numpy())[0])
        raise ValueError(
            f"{path}: the dates mix UTC offsets (line 2: {dates.iloc[0]!r}, line {other + 2}: {dates.iloc[other]!r}): "
            "write every date with one offset, or in UTC, so that the rows are evenly spaced in time."
        ) from None
    if parsed.isna().any():
        line = int(np.flatnonzero(parsed.isna())[0]) + 2
        raise ValueError(f"{path}: line {line} has a date pandas cannot read: write dates as 2020-01-01 00:00:00.")
    return pd.DatetimeIndex(parsed)


def _refuse_unordered_dates(index: pd.DatetimeIndex, path: Path) -> None:
    """The protocol splits by row: rows out of time order would train on the future."""
    repeated = np.flatnonzero(index.duplicated())
    if repeated.size:
        raise ValueError(
            f"{path}: the date {index[repeated[0]]} appears twice (line {repeated[0] + 2}; {repeated.size} repeated "
            "date(s) in all): one row per time step is expected; remove the duplicate rows."
        )
    backwards = np.flatnonzero(np.diff(index.asi8) < 0)
    if backwards.size:
        line = backwards[0] + 3
        raise ValueError(
            f"{path}: dates are not in increasing order (line {line}, {index[backwards[0] + 1]}, comes after "
            f"{index[backwards[0]]}): sort the file by its date column."
        )


def _refuse_missing_steps(index: pd.DatetimeIndex, path: Path) -> None:
    """Windows are cut by row: a missing time step would join two stretches as if adjacent."""
    if len(index) < 3 or index.inferred_freq is not None:
        return
    steps = pd.Series(index[1:] - index[:-1])
    usual = steps.mode().iloc[0]
    breaks = np.flatnonzero((steps != usual).to_numpy())
    first = int(breaks[0])
    missing = int(sum(max(round(steps.iloc[b] / usual) - 1, 0) for b in breaks))
    alias = re.sub(r"^1(?=\D)", "", pd.tseries.frequencies.to_offset(usual).freqstr)
    raise ValueError(
        f"{path}: the dates step every {usual} but not everywhere: line {first + 3} ({index[first + 1]}) comes "
        f"{steps.iloc[first]} after line {first + 2} ({index[first]}) ({len(breaks)} irregular step(s), about "
        f"{missing} missing time step(s) in all). Windows are cut by row, so every step needs a row: fill the "
        f"missing rows first, e.g. frame.set_index('date').asfreq('{alias}').interpolate(), or resample the file "
        "to a regular step."
    )
