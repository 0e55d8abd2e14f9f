"""Where each split of a forecasting dataset starts and ends: the paper's (Time-Series-Library's)
borders, and the rows a dataset needs for one window in each split."""

from __future__ import annotations

from dataclasses import dataclass

_HOURS_PER_MONTH = 30 * 24


@dataclass(frozen=True)
class Splits:
    """Row ranges ``[start, stop)`` of each split; val and test start ``seq_len`` rows early."""

    train: tuple[int, int]
    val: tuple[int, int]
    test: tuple[int, int]


def split_borders(n_rows: int, kind: str, seq_len: int) -> Splits:
    """The paper's (Time-Series-Library's) split borders for a dataset of ``n_rows`` rows.

    ETT hourly: train [0, 8640), val [8640 - L, 11520), test [11520 - L, 14400); ETT minute: the
    same times 4; any other dataset: 70 % / 10 % / 20 % with val and test moved back by L, so
    their first window's input lies in the previous split.
    """
    splits = _borders(n_rows, kind, seq_len)
    if kind != "ratio" and n_rows < splits.test[1]:
        raise ValueError(f"An ETT dataset needs at least {splits.test[1]} rows, got {n_rows}.")
    if splits.val[0] <= 0:
        raise ValueError(f"The dataset ({n_rows} rows) is too short for an input length of {seq_len}.")
    return splits


def _borders(n_rows: int, kind: str, seq_len: int) -> Splits:
    """:func:`split_borders` without its checks (the borders of a dataset too short may be negative)."""
    if kind in ("ett_hour", "ett_minute"):
        unit = _HOURS_PER_MONTH * (4 if kind == "ett_minute" else 1)
        train_end, val_end, test_end = 12 * unit, 16 * unit, 20 * unit
    elif kind == "ratio":
        train_end = int(n_rows * 0.7)
        test_len = int(n_rows * 0.2)
        val_end, test_end = n_rows - test_len, n_rows
    else:
        raise ValueError(f"Unknown split kind {kind!r}; use 'ett_hour', 'ett_minute' or 'ratio'.")
    return Splits((0, train_end), (train_end - seq_len, val_end), (val_end - seq_len, test_end))


def rows_needed(kind: str, seq_len: int, horizon: int) -> int:
    """The fewest rows of a dataset split as ``kind`` whose every split holds one window of
    ``seq_len`` + ``horizon`` rows (validation's and test's look-back reach into the split before)."""
    if kind != "ratio":
        return _borders(0, kind, seq_len).test[1]  # the paper's 20 months
    n = seq_len + horizon
    while min(stop - start for start, stop in vars(_borders(n, kind, seq_len)).values()) < seq_len + horizon:
        n += 1
    return n


def check_rows(n_rows: int, kind: str, seq_len: int, horizon: int, where: str) -> None:
    """Refuse, before anything trains, a dataset with a split too short for one window, naming the
    split, its rows and the rows the dataset needs."""
    needed = rows_needed(kind, seq_len, horizon)
    if n_rows >= needed:
        return
    if kind != "ratio":
        raise ValueError(f"{where}: an ETT dataset needs {needed} rows (the paper's 20 months), got {n_rows}.")
    before = f", with the {seq_len} rows of look-back before it"
    names = {
        "train": "training split (the first 70 %",
        "val": f"validation split (the next 10 %{before}",
        "test": f"test split (the last 20 %{before}",
    }
    for split, (start, stop) in vars(_borders(n_rows, kind, seq_len)).items():
        if stop - start < seq_len + horizon:
            raise ValueError(
                f"{where}: the {names[split]}) has {max(stop - start, 0)} rows, fewer than look-back {seq_len} + "
                f"horizon {horizon}. The dataset has {n_rows} rows and needs at least {needed}: use a longer "
                "series, or shorter --seq-len or --horizons."
            )
