"""The paper's synthetic cross-channel, cross-time dataset (App. D), generated in-package: a target
built only from lagged patches of four sines, beside two random-walk distractors. Its formula is in
docs/benchmarks.md (Datasets); the paper gives no phases or start values, so ours are fixed here."""

from __future__ import annotations

import numpy as np
import pandas as pd

PATCH_LEN = 16
PATCH_STRIDE = 8
WEIGHT_PERIOD = 20  # patches
NOISE_STD = 0.02
#: (amplitude, frequency in cycles per step, phase in radians) of var_1..var_4.
SINES = ((1.0, 0.02, 0.0), (3.0, 0.03, 0.5), (2.0, 0.01, 1.0), (5.0, 0.002, 1.5))
#: Step standard deviation of the random-walk distractors var_5, var_6.
WALK_STDS = (0.1, 0.15)
#: (weight 0.5 pair) -> ((source index, lag in patches) used with w, (source, lag) used with 1 - w).
PAIRS = (((0, 1), (1, 2)), ((2, 2), (3, 3)))
COLUMNS = ("var_1", "var_2", "var_3", "var_4", "var_5", "var_6", "target")


def sine(index: int, t: np.ndarray) -> np.ndarray:
    """Source ``var_{index+1}`` at (possibly negative) integer steps ``t``."""
    amplitude, frequency, phase = SINES[index]
    return amplitude * np.sin(2 * np.pi * frequency * t + phase)


def triangle_weight(k: np.ndarray) -> np.ndarray:
    """w(k): 0, 0.1, ..., 1.0, 0.9, ..., 0.1, 0, ... over patch index k (period 20)."""
    phase = np.mod(k, WEIGHT_PERIOD)
    return np.where(phase <= WEIGHT_PERIOD // 2, phase / 10.0, 2.0 - phase / 10.0)


def noiseless_target(n_steps: int) -> np.ndarray:
    """The target before noise: the average of every blended patch covering each step."""
    total = np.zeros(n_steps)
    count = np.zeros(n_steps)
    n_patches = (n_steps - 1) // PATCH_STRIDE + 1
    for k in range(n_patches):
        start = k * PATCH_STRIDE
        t = np.arange(start, min(start + PATCH_LEN, n_steps))
        w = triangle_weight(k)
        patch = np.zeros(len(t))
        for (first, first_lag), (second, second_lag) in PAIRS:
            patch += 0.5 * (
                w * sine(first, t - first_lag * PATCH_STRIDE) + (1 - w) * sine(second, t - second_lag * PATCH_STRIDE)
            )
        total[t] += patch
        count[t] += 1
    return total / count


def make_synthetic(n_steps: int = 10_000, seed: int = 0, freq: str = "h") -> pd.DataFrame:
    """The synthetic dataset as a DataFrame with a ``date`` index and the columns :data:`COLUMNS`.

    Deterministic given ``seed`` (which drives the random walks and the target noise).
    """
    if n_steps < PATCH_LEN:
        raise ValueError(f"n_steps must be at least {PATCH_LEN}, got {n_steps}.")
    rng = np.random.default_rng(seed)
    t = np.arange(n_steps)
    columns = [sine(i, t) for i in range(len(SINES))]
    columns += [np.cumsum(rng.normal(0.0, std, n_steps)) for std in WALK_STDS]
    columns.append(noiseless_target(n_steps) + rng.normal(0.0, NOISE_STD, n_steps))
    index = pd.date_range("2020-01-01", periods=n_steps, freq=freq, name="date")
    return pd.DataFrame(np.stack(columns, axis=1), index=index, columns=list(COLUMNS))
