"""A synthetic panel whose behaviour depends on a static attribute: ``sites``.

:data:`N_SITES` hourly series of :data:`N_WEEKS` weeks, one per site, each with a static covariate
``size`` in [0, 1] (drawn per seed). A site's load swings in a slow cycle whose length grows with
its size (a large reservoir fills and empties slowly), from :data:`CYCLE_HOURS`'s first value to
its second; a daily cycle and AR(1) noise come on top::

    load = 0.5 sin(2 pi hour / 24) + 1.5 sin(2 pi t / cycle(size) + phase) + AR(1) + noise

An input window of 96 hours shows less than half of a long cycle, too little to tell its length:
``size`` tells it (to a model that reads static covariates), and identifies the site.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

N_SITES, N_WEEKS = 8, 20
CYCLE_HOURS = (48, 240)  # size 0, size 1
CYCLE_AMPLITUDE, DAILY_AMPLITUDE = 1.5, 0.5
AR_COEFFICIENT, AR_SHOCK_STD, NOISE_STD = 0.9, 0.1, 0.1
STATIC_COLUMNS = ("size",)


def make_sites(seed: int = 0, n_sites: int = N_SITES, n_weeks: int = N_WEEKS) -> list[pd.DataFrame]:
    """One DataFrame per site (hourly ``date`` index, a ``load`` column) with its ``size`` in
    ``frame.attrs["size"]``; deterministic given ``seed``."""
    rng = np.random.default_rng(seed)
    index = pd.date_range("2024-01-01", periods=n_weeks * 7 * 24, freq="h", name="date")
    t = np.arange(len(index))
    daily = DAILY_AMPLITUDE * np.sin(2 * np.pi * index.hour.to_numpy() / 24)
    frames = []
    for size in rng.uniform(0.0, 1.0, n_sites):
        cycle = CYCLE_HOURS[0] + size * (CYCLE_HOURS[1] - CYCLE_HOURS[0])
        noise = np.zeros(len(t))
        shocks = rng.normal(0.0, AR_SHOCK_STD, len(t))
        for i in range(1, len(t)):
            noise[i] = AR_COEFFICIENT * noise[i - 1] + shocks[i]
        slow = CYCLE_AMPLITUDE * np.sin(2 * np.pi * t / cycle + rng.uniform(0, 2 * np.pi))
        frame = pd.DataFrame({"load": daily + slow + noise + rng.normal(0.0, NOISE_STD, len(t))}, index=index)
        frame.attrs["size"] = float(size)
        frames.append(frame)
    return frames
