"""A synthetic dataset where a known future input drives the targets with a lag: ``control``.

Hourly, 10,000 steps. ``plan`` is a schedule known in advance (planned events: each hour one
starts with probability :data:`EVENT_RATE` and lasts 1-6 hours; 1 during an event, else 0).
Three targets respond to it with a delay, over several hours, on top of their own patterns::

    load    = sin(daily) + 2.0 * (plan * decay over 12 h)(t - 4)
    price   = 0.5 sin(weekly) - 1.5 * (plan * decay over 24 h)(t - 8)
    level   = AR(1) (0.95) + 1.0 * plan(t - 2)

plus Gaussian noise (sigma :data:`NOISE_STD`). A forecast ``h`` hours ahead depends on the plan
up to ``h - 2`` hours after its start, which only the future covariate tells: ``plan`` is the
dataset's future-covariate column (:data:`FUTURE_COLUMNS`), never a target.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

EVENT_RATE = 0.03
EVENT_HOURS = (1, 6)
NOISE_STD = 0.1
#: (column, pattern, gain, lag in hours, decay length in hours): each target's response to the plan.
RESPONSES = (("load", "daily", 2.0, 4, 12), ("price", "weekly", -1.5, 8, 24), ("level", "ar1", 1.0, 2, 1))
FUTURE_COLUMNS = ("plan",)
COLUMNS = (*(r[0] for r in RESPONSES), *FUTURE_COLUMNS)


def plan(n_steps: int, rng: np.random.Generator) -> np.ndarray:
    """The schedule: events starting at random hours, each 1-6 hours long."""
    schedule = np.zeros(n_steps)
    for start in np.flatnonzero(rng.random(n_steps) < EVENT_RATE):
        schedule[start : start + rng.integers(EVENT_HOURS[0], EVENT_HOURS[1] + 1)] = 1.0
    return schedule


def response(schedule: np.ndarray, gain: float, lag: int, decay_hours: int) -> np.ndarray:
    """``gain`` x the schedule convolved with an exponential decay of ``decay_hours``, ``lag`` hours later."""
    kernel = np.exp(-np.arange(decay_hours) / max(decay_hours / 3, 1))
    kernel /= kernel.max()
    effect = np.convolve(schedule, kernel)[: len(schedule)]
    return gain * np.concatenate([np.zeros(lag), effect[: len(schedule) - lag]])


def _pattern(name: str, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if name == "daily":
        return np.sin(2 * np.pi * t / 24)
    if name == "weekly":
        return 0.5 * np.sin(2 * np.pi * t / 168)
    values = np.zeros(len(t))
    shocks = rng.normal(0.0, 0.1, len(t))
    for i in range(1, len(t)):
        values[i] = 0.95 * values[i - 1] + shocks[i]
    return values


def make_control(n_steps: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """The dataset as a DataFrame with an hourly ``date`` index and the columns :data:`COLUMNS`;
    deterministic given ``seed``."""
    if n_steps < 48:
        raise ValueError(f"n_steps must be at least 48, got {n_steps}.")
    rng = np.random.default_rng(seed)
    t = np.arange(n_steps)
    schedule = plan(n_steps, rng)
    columns = {
        name: _pattern(pattern, t, rng) + response(schedule, gain, lag, decay) + rng.normal(0.0, NOISE_STD, n_steps)
        for name, pattern, gain, lag, decay in RESPONSES
    }
    columns["plan"] = schedule
    index = pd.date_range("2020-01-01", periods=n_steps, freq="h", name="date")
    return pd.DataFrame(columns, index=index)[list(COLUMNS)]
