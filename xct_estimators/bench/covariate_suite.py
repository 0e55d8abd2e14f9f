"""The covariate suite: generated datasets, each isolating one way a known future input acts on a
target (docs/benchmarks.md, Known future inputs, lists them with their formulas).

Every family is hourly, with :data:`N_STEPS` rows (a panel: :data:`PANEL_SERIES` series of
:data:`PANEL_STEPS`), deterministic given the seed. Each target is its own pattern plus the
family's effect of the covariates, an AR(1) component and noise::

    y_c(t) = pattern_c(t) + effect_c(covariates up to t) + ar_c(t) + noise_c(t)
    pattern_c(t) = a_c sin(2 pi t / 24 + p_c) + 0.5 sin(2 pi t / 168 + q_c)
    ar_c(t) = 0.9 ar_c(t - 1) + N(0, 0.1^2),   noise_c(t) ~ N(0, 0.1^2)

The covariates are the frame's last columns (:attr:`Generated.future_columns`), known over any
horizon; they are never targets. A forecast that knew the pattern, the effect and the AR state at
its origin would still miss the noise and the AR shocks since: :func:`noise_floor` is that
forecast's MSE, the lowest a model can expect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np

from .splits import split_borders

if TYPE_CHECKING:
    import pandas as pd

N_STEPS = 5_000
PANEL_SERIES, PANEL_STEPS = 4, 2_500
AR_COEFFICIENT, AR_SHOCK_STD, NOISE_STD = 0.9, 0.1, 0.1
PREFIX = "known-"


@dataclass
class Generated:
    """One series of a family: the frame (targets, then covariates), what its targets are before the
    AR component and the noise (``expected``), the AR component, and its static covariates."""

    frame: pd.DataFrame
    expected: np.ndarray  # (rows, targets)
    ar: np.ndarray  # (rows, targets)
    future_columns: tuple[str, ...]
    static: Optional[dict[str, float]] = None

    @property
    def targets(self) -> list[str]:
        return [c for c in self.frame.columns if c not in self.future_columns]


# -- the covariates --------------------------------------------------------------------------
def _ar1(n: int, coefficient: float, shock_std: float, rng: np.random.Generator) -> np.ndarray:
    shocks = rng.normal(0.0, shock_std, n)
    values = np.empty(n)
    values[0] = shocks[0] / np.sqrt(1 - coefficient**2)  # started in its stationary law
    for i in range(1, n):
        values[i] = coefficient * values[i - 1] + shocks[i]
    return values


def driver(n: int, rng: np.random.Generator) -> np.ndarray:
    """A continuous input that moves within hours (AR(1), coefficient 0.8, unit variance)."""
    return _ar1(n, 0.8, 0.6, rng)


def temperature(n: int, rng: np.random.Generator) -> np.ndarray:
    """A weather forecast: a daily cycle (amplitude 0.6, warmest at 15:00) on a slow wander
    (AR(1), coefficient 0.995, std 0.8)."""
    t = np.arange(n)
    return 0.6 * np.sin(2 * np.pi * (t - 9) / 24) + _ar1(n, 0.995, 0.8 * np.sqrt(1 - 0.995**2), rng)


def events(n: int, rng: np.random.Generator, rate: float, hours: tuple[int, int]) -> np.ndarray:
    """Flags: 1 during an event, else 0; an event starts in an hour with probability ``rate``
    and lasts ``hours[0]`` to ``hours[1]`` hours."""
    flags = np.zeros(n)
    for start in np.flatnonzero(rng.random(n) < rate):
        flags[start : start + rng.integers(hours[0], hours[1] + 1)] = 1.0
    return flags


def lagged(x: np.ndarray, lag: int) -> np.ndarray:
    """``x(t - lag)``, the first ``lag`` values repeating ``x(0)``."""
    return np.concatenate([np.full(lag, x[0]), x[: len(x) - lag]]) if lag else x


def smoothed(x: np.ndarray, hours: float) -> np.ndarray:
    """``EMA_hours(x)``: the exponential moving average of ``x`` with a time constant of ``hours``
    (thermal inertia, or an event's effect that builds while it lasts and fades after)."""
    weight = 1.0 / hours
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = out[i - 1] + weight * (x[i] - out[i - 1])
    return out


# -- the families: (rng, n) -> (covariates by name, effects per target) ------------------------
Effects = tuple[dict[str, np.ndarray], list[np.ndarray]]


def _lagged(rng, n) -> Effects:
    x = driver(n, rng)
    return {"x": x}, [1.0 * x, -0.8 * lagged(x, 3), 0.6 * lagged(x, 8)]


def _multiplicative(rng, n) -> Effects:
    promo = events(n, rng, 0.02, (4, 12))
    t = np.arange(n)
    level = [2.0 + np.sin(2 * np.pi * t / 720 + rng.uniform(0, 2 * np.pi)) for _ in range(3)]
    return {"promo": promo}, [lv * (1 + g * promo) for lv, g in zip(level, (0.5, 0.8, -0.3), strict=True)]


def _quadratic(rng, n) -> Effects:
    x = temperature(n, rng)
    return {"temperature": x}, [0.8 * (x**2 - 1), 0.5 * (lagged(x, 2) ** 2 - 1), -0.6 * (lagged(x, 4) ** 2 - 1)]


def _threshold(rng, n) -> Effects:
    x = driver(n, rng)
    return {"x": x}, [1.5 * (x > 0), -1.0 * (lagged(x, 2) > 0.5), 1.0 * (lagged(x, 4) > -0.5)]


def _saturating(rng, n) -> Effects:
    x = driver(n, rng)
    return {"x": x}, [1.5 * np.tanh(2 * x), -1.0 * np.tanh(lagged(x, 2)), 1.2 * np.tanh(4 * lagged(x, 4))]


def _interaction(rng, n) -> Effects:
    x1, x2 = driver(n, rng), driver(n, rng)
    return {"x1": x1, "x2": x2}, [1.0 * x1 * x2, -0.7 * lagged(x1 * x2, 2), 0.5 * x1 * lagged(x2, 4)]


def _events(rng, n) -> Effects:
    holiday = events(n, rng, 0.004, (12, 24))
    return {"holiday": holiday}, [g * smoothed(holiday, h) for g, h in zip((2.0, -1.5, 1.0), (6, 12, 24), strict=True)]


def _weather(rng, n) -> Effects:
    x = temperature(n, rng)
    return {"temperature": x}, [
        1.0 * smoothed(x, 3),
        1.2 * np.maximum(smoothed(x, 12) - 0.3, 0.0),
        -0.8 * smoothed(x, 24),
    ]


def _some_channels(rng, n) -> Effects:
    x = driver(n, rng)
    zero = np.zeros(n)
    return {"x": x}, [1.2 * lagged(x, 1), zero, -1.0 * lagged(x, 4), zero]


def _retail(rng, n) -> Effects:
    promo, weather = events(n, rng, 0.02, (4, 12)), temperature(n, rng)
    level = 2.0 + np.sin(2 * np.pi * np.arange(n) / 720 + rng.uniform(0, 2 * np.pi))
    return {"promo": promo, "temperature": weather}, [
        level * (1 + 0.6 * lagged(promo, 2)),
        0.7 * (lagged(weather, 3) ** 2 - 1),
        1.5 * smoothed(promo, 8) + 0.5 * weather,
    ]


def _mixture(rng, n) -> Effects:
    x, flag = driver(n, rng), events(n, rng, 0.02, (2, 6))
    return {"x": x, "flag": flag}, [
        1.5 * np.tanh(lagged(x, 1)) + 1.5 * smoothed(flag, 6),
        1.2 * (x > 0.5) * (1 + flag),
        0.6 * (lagged(x, 5) ** 2 - 1),
    ]


@dataclass(frozen=True)
class Family:
    """A family: its covariates and effects, and the one line docs/benchmarks.md shows."""

    effects: Callable[[np.random.Generator, int], Effects]
    formula: str


FAMILIES: dict[str, Family] = {
    "lagged": Family(_lagged, "x; effect: 1.0 x(t), -0.8 x(t-3), 0.6 x(t-8)"),
    "multiplicative": Family(
        _multiplicative,
        "promo (events, 2 %/h, 4-12 h); effect: level_c(t) (1 + g_c promo(t)), g = 0.5, 0.8, -0.3, level_c "
        "= 2 + sin(2 pi t / 720 + r_c)",
    ),
    "quadratic": Family(_quadratic, "temperature; effect: 0.8 (T(t)^2 - 1), 0.5 (T(t-2)^2 - 1), -0.6 (T(t-4)^2 - 1)"),
    "threshold": Family(_threshold, "x; effect: 1.5 [x(t) > 0], -1.0 [x(t-2) > 0.5], 1.0 [x(t-4) > -0.5]"),
    "saturating": Family(_saturating, "x; effect: 1.5 tanh(2 x(t)), -1.0 tanh(x(t-2)), 1.2 tanh(4 x(t-4))"),
    "interaction": Family(_interaction, "x1, x2; effect: 1.0 x1(t) x2(t), -0.7 x1(t-2) x2(t-2), 0.5 x1(t) x2(t-4)"),
    "events": Family(
        _events, "holiday (events, 0.4 %/h, 12-24 h); effect: g_c EMA_h_c(holiday), g = 2.0, -1.5, 1.0, h = 6, 12, 24"
    ),  # fmt: skip
    "weather": Family(
        _weather, "temperature; effect: 1.0 EMA_3(T), 1.2 max(EMA_12(T) - 0.3, 0), -0.8 EMA_24(T)"
    ),  # fmt: skip
    "some-channels": Family(_some_channels, "x; four targets, effect: 1.2 x(t-1), none, -1.0 x(t-4), none"),
    "panel": Family(
        lambda rng, n: ({}, []),  # made by _panel: the response depends on each series' static covariate
        f"{PANEL_SERIES} series, one target each, each with its own x and a static sensitivity s in [-1, 1]; "
        "effect: 1.5 s x(t-2)",
    ),
    "retail": Family(
        _retail,
        "mixture: promo and temperature; effect: level(t) (1 + 0.6 promo(t-2)), 0.7 (T(t-3)^2 - 1), "
        "1.5 EMA_8(promo) + 0.5 T(t)",
    ),  # fmt: skip
    "mixture": Family(
        _mixture,
        "mixture: x and flag (events, 2 %/h, 2-6 h); effect: 1.5 tanh(x(t-1)) + 1.5 EMA_6(flag), "
        "1.2 [x(t) > 0.5] (1 + flag(t)), 0.6 (x(t-5)^2 - 1)",
    ),  # fmt: skip
}
#: The suite's dataset names, as ``xct-bench forecast --dataset`` takes them.
DATASETS = tuple(PREFIX + name for name in FAMILIES)


def _series(covariates: dict, effects: list, rng: np.random.Generator, n: int, static=None) -> Generated:
    import pandas as pd

    t = np.arange(n)
    expected, ar = [], []
    for effect in effects:
        amplitude, phases = rng.uniform(0.5, 1.0), rng.uniform(0, 2 * np.pi, 2)
        pattern = amplitude * np.sin(2 * np.pi * t / 24 + phases[0]) + 0.5 * np.sin(2 * np.pi * t / 168 + phases[1])
        expected.append(pattern + effect)
        ar.append(_ar1(n, AR_COEFFICIENT, AR_SHOCK_STD, rng))
    expected, ar = np.stack(expected, axis=1), np.stack(ar, axis=1)
    observed = expected + ar + rng.normal(0.0, NOISE_STD, expected.shape)
    names = [f"y{i + 1}" for i in range(len(effects))]
    index = pd.date_range("2024-01-01", periods=n, freq="h", name="date")
    frame = pd.DataFrame(observed, index=index, columns=names)
    for name, values in covariates.items():
        frame[name] = values
    return Generated(frame, expected, ar, tuple(covariates), static)


def _panel(rng: np.random.Generator) -> list[Generated]:
    members = []
    for sensitivity in rng.uniform(-1.0, 1.0, PANEL_SERIES):
        x = driver(PANEL_STEPS, rng)
        members.append(_series({"x": x}, [1.5 * sensitivity * lagged(x, 2)], rng, PANEL_STEPS, {"s": sensitivity}))
    return members


def make_family(name: str, seed: int = 0) -> list[Generated]:
    """The series of family ``name`` (with or without the ``known-`` prefix): one, or a panel's;
    deterministic given ``seed``."""
    family = name.removeprefix(PREFIX)
    if family not in FAMILIES:
        raise ValueError(f"Unknown covariate family {name!r}; choose one of {', '.join(DATASETS)}.")
    rng = np.random.default_rng([seed, list(FAMILIES).index(family)])
    if family == "panel":
        return _panel(rng)
    covariates, effects = FAMILIES[family].effects(rng, N_STEPS)
    return [_series(covariates, [np.asarray(e, dtype=float) for e in effects], rng, N_STEPS)]


def oracle_forecasts(member: Generated, origins: np.ndarray, horizon: int) -> np.ndarray:
    """What a model that knew the pattern, the effect and the AR state at each origin would forecast:
    (windows, horizon, targets), for forecasts that start the step after each of ``origins``."""
    steps = np.arange(1, horizon + 1)
    ahead = origins[:, None] + steps[None, :]  # (windows, horizon)
    decay = AR_COEFFICIENT ** steps[None, :, None]
    return member.expected[ahead] + decay * member.ar[origins][:, None, :]


def noise_floor(members: list[Generated], seq_len: int, horizon: int) -> float:
    """The MSE of :func:`oracle_forecasts` on the benchmark's test windows (70/10/20 split per
    series, each target standardised with its training split, windows of stride 1, MSE per window
    averaged over windows and over a panel's series), the lowest a model can expect."""
    per_member = []
    for member in members:
        splits = split_borders(len(member.frame), "ratio", seq_len)
        observed = member.frame[member.targets].to_numpy()
        train = observed[splits.train[0] : splits.train[1]]
        scale = train.std(axis=0)
        start, stop = splits.test
        origins = np.arange(start + seq_len - 1, stop - horizon)
        truth = observed[origins[:, None] + np.arange(1, horizon + 1)[None, :]]
        errors = ((oracle_forecasts(member, origins, horizon) - truth) / scale) ** 2
        per_member.append(errors.mean(axis=(1, 2)).mean())
    return float(np.mean(per_member))
