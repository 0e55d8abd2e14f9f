"""The imputation protocols of ``xct-bench impute``.

``tslib`` (the paper's table): every stride-1 window of length L of the test split, each with a
fresh random mask (a point is hidden where a uniform draw is <= the mask rate), hidden inputs
set to 0, the mask given to the model; MSE and MAE over the hidden points of all windows (a
point hidden in several windows counts each time). Masks are drawn window after window from
``numpy.random.default_rng(seed)``, one ``(L, C)`` block of uniforms per window, so every model
of a run sees the same masks and a plain numpy loop can rebuild them.

``series`` (what a user of the sktime imputer gets): one mask over the whole test split, each
point imputed once (overlapping windows averaged), scored once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .protocols import random_mask

PROTOCOLS = ("tslib", "series")
#: Windows whose masks are drawn and imputed together (a memory bound, not a result setting).
_CHUNK = 64

#: (windows, L, C) values and visible mask -> (windows, L, C) reconstruction.
WindowImputer = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: (T, C) values with NaN at hidden points -> (T, C) values with those points filled.
SeriesImputer = Callable[[np.ndarray], np.ndarray]


def window_starts(n_rows: int, window_length: int, eval_stride: int = 1) -> np.ndarray:
    """Start rows of the evaluated windows: 0, S, 2S, ... up to ``n_rows - window_length``."""
    if n_rows < window_length:
        raise ValueError(f"The test split has {n_rows} rows, fewer than the window length {window_length}.")
    return np.arange(0, n_rows - window_length + 1, eval_stride)


def evaluate_windows(
    impute: WindowImputer,
    values: np.ndarray,
    window_length: int,
    mask_rate: float,
    seed: int,
    eval_stride: int = 1,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """The ``tslib`` protocol: score ``impute`` on every ``eval_stride``-th window of ``values``."""
    values = np.asarray(values, dtype=np.float32)
    starts = window_starts(len(values), window_length, eval_stride)
    windows = np.lib.stride_tricks.sliding_window_view(values, window_length, axis=0)  # (T-L+1, C, L)
    rng = np.random.default_rng(seed)
    squared = absolute = 0.0
    n_hidden = 0
    for i in range(0, len(starts), _CHUNK):
        x = np.ascontiguousarray(windows[starts[i : i + _CHUNK]].transpose(0, 2, 1))
        hidden = (rng.random(x.shape) <= mask_rate) & ~np.isnan(x)
        visible = ~hidden & ~np.isnan(x)
        out = impute(np.where(visible, x, 0.0).astype(np.float32), visible)
        errors = (out - x)[hidden].astype(np.float64)
        squared += float(np.square(errors).sum())
        absolute += float(np.abs(errors).sum())
        n_hidden += int(hidden.sum())
        if progress is not None:
            progress(len(x))
    return {
        "mse": squared / n_hidden,
        "mae": absolute / n_hidden,
        "n_windows": int(len(starts)),
        "n_hidden": n_hidden,
    }


def evaluate_series(impute: SeriesImputer, values: np.ndarray, mask_rate: float, seed: int) -> dict:
    """The ``series`` protocol: hide ``mask_rate`` of ``values`` once, impute, score each point once."""
    values = np.asarray(values, dtype=np.float32)
    hidden = random_mask(values.shape, mask_rate, seed) & ~np.isnan(values)
    errors = (impute(np.where(hidden, np.nan, values)) - values)[hidden].astype(np.float64)
    return {
        "mse": float(np.mean(errors**2)),
        "mae": float(np.mean(np.abs(errors))),
        "n_windows": None,
        "n_hidden": int(hidden.sum()),
    }


def series_by_windows(impute: WindowImputer, values: np.ndarray, window_length: int, stride: int) -> np.ndarray:
    """Impute a whole series with a window imputer: windows every ``stride`` rows (the last one
    ending at the end), overlapping outputs averaged, observed values kept."""
    values = np.asarray(values, dtype=np.float32)
    starts = window_starts(len(values), window_length, stride)
    if starts[-1] != len(values) - window_length:
        starts = np.append(starts, len(values) - window_length)
    total = np.zeros(values.shape, dtype=np.float64)
    count = np.zeros((len(values), 1))
    visible_all = ~np.isnan(values)
    for i in range(0, len(starts), _CHUNK):
        index = starts[i : i + _CHUNK, None] + np.arange(window_length)
        visible = visible_all[index]
        out = impute(np.where(visible, values[index], 0.0).astype(np.float32), visible)
        np.add.at(total, index.reshape(-1), out.reshape(-1, values.shape[1]))
        np.add.at(count, index.reshape(-1), 1.0)
    return np.where(visible_all, values, total / count).astype(np.float32)
