"""The covariate suite: each family's targets are the documented pattern plus the documented effect
of its covariates (rebuilt here in plain numpy from the frame's own columns), and the noise floor
is what the benchmark's own scoring gives the forecast that misses only the noise."""

from types import SimpleNamespace

import numpy as np
import pytest
from darts import TimeSeries

from xct_estimators.bench import covariate_suite as suite
from xct_estimators.bench.datasets import load_forecast_dataset
from xct_estimators.bench.forecast.protocol import prepare, score


def ema(x, hours):
    out, value = [], x[0]
    for v in x:
        value += (v - value) / hours
        out.append(value)
    return np.array(out)


def lag(x, k):
    return np.concatenate([np.full(k, x[0]), x[:-k]]) if k else x


#: family -> the effect on each target, from the frame's covariate columns (docs/benchmarks.md's table)
EFFECTS = {
    "lagged": lambda f: [f.x, -0.8 * lag(f.x, 3), 0.6 * lag(f.x, 8)],
    "quadratic": lambda f: [
        0.8 * (f.temperature**2 - 1),
        0.5 * (lag(f.temperature, 2) ** 2 - 1),
        -0.6 * (lag(f.temperature, 4) ** 2 - 1),
    ],  # fmt: skip
    "threshold": lambda f: [1.5 * (f.x > 0), -1.0 * (lag(f.x, 2) > 0.5), 1.0 * (lag(f.x, 4) > -0.5)],
    "saturating": lambda f: [1.5 * np.tanh(2 * f.x), -np.tanh(lag(f.x, 2)), 1.2 * np.tanh(4 * lag(f.x, 4))],
    "interaction": lambda f: [f.x1 * f.x2, -0.7 * lag(f.x1 * f.x2, 2), 0.5 * f.x1 * lag(f.x2, 4)],
    "events": lambda f: [2.0 * ema(f.holiday, 6), -1.5 * ema(f.holiday, 12), ema(f.holiday, 24)],
    "weather": lambda f: [
        ema(f.temperature, 3),
        1.2 * np.maximum(ema(f.temperature, 12) - 0.3, 0),
        -0.8 * ema(f.temperature, 24),
    ],  # fmt: skip
    "some-channels": lambda f: [1.2 * lag(f.x, 1), 0 * f.x, -lag(f.x, 4), 0 * f.x],
    "mixture": lambda f: [
        1.5 * np.tanh(lag(f.x, 1)) + 1.5 * ema(f.flag, 6),
        1.2 * (f.x > 0.5) * (1 + f.flag),
        0.6 * (lag(f.x, 5) ** 2 - 1),
    ],  # fmt: skip
}


def explained(expected: np.ndarray, effect: np.ndarray) -> tuple[float, float]:
    """Least squares of ``expected`` on the pattern's sines and cosines, a constant and ``effect``:
    (the effect's coefficient, the largest residual)."""
    t = np.arange(len(expected))
    basis = [np.ones_like(t, dtype=float), effect.astype(float)]
    basis += [f(2 * np.pi * t / period) for period in (24, 168) for f in (np.sin, np.cos)]
    coefficients, *_ = np.linalg.lstsq(np.stack(basis, axis=1), expected, rcond=None)
    return coefficients[1], np.abs(np.stack(basis, axis=1) @ coefficients - expected).max()


@pytest.mark.parametrize("family", sorted(EFFECTS))
def test_each_target_is_its_pattern_plus_the_documented_effect(family):
    (member,) = suite.make_family(family, seed=3)
    frame = member.frame
    assert list(frame.columns[-len(member.future_columns) :]) == list(member.future_columns)
    columns = SimpleNamespace(**{name: frame[name].to_numpy() for name in frame.columns})
    for c, effect in enumerate(EFFECTS[family](columns)):
        if not np.any(effect):
            coefficient, residual = 1.0, explained(member.expected[:, c], np.ones(len(frame)))[1]
        else:
            coefficient, residual = explained(member.expected[:, c], np.asarray(effect))
        assert coefficient == pytest.approx(1.0, abs=1e-6) and residual < 1e-6, (family, c)
    observed = frame[member.targets].to_numpy() - member.expected - member.ar
    assert abs(observed.std() - suite.NOISE_STD) < 0.01  # what is left is the noise


def test_a_multiplicative_effect_scales_with_the_target_s_level():
    (member,) = suite.make_family("multiplicative", seed=3)
    promo, t = member.frame.promo.to_numpy(), np.arange(len(member.frame))
    for c, gain in enumerate((0.5, 0.8, -0.3)):
        # level_c(t) (1 + g promo) = (2 + sin(2 pi t / 720 + r)) (1 + g promo): a sine and a cosine of the slow cycle
        slow = [np.sin(2 * np.pi * t / 720), np.cos(2 * np.pi * t / 720)]
        basis = [np.ones(len(t)), promo, *slow, *(s * promo for s in slow)]
        basis += [f(2 * np.pi * t / period) for period in (24, 168) for f in (np.sin, np.cos)]
        coefficients, *_ = np.linalg.lstsq(np.stack(basis, axis=1), member.expected[:, c], rcond=None)
        assert coefficients[1] == pytest.approx(2 * gain, abs=1e-6)  # the level's mean, 2, times the gain
        assert np.abs(np.stack(basis, axis=1) @ coefficients - member.expected[:, c]).max() < 1e-6


def test_the_panel_s_response_follows_each_series_static_sensitivity():
    members = suite.make_family("known-panel", seed=3)
    assert len(members) == suite.PANEL_SERIES and len({m.static["s"] for m in members}) == suite.PANEL_SERIES
    for member in members:
        coefficient, residual = explained(
            member.expected[:, 0], 1.5 * member.static["s"] * lag(member.frame.x.to_numpy(), 2)
        )
        assert coefficient == pytest.approx(1.0, abs=1e-6) and residual < 1e-6
    data = load_forecast_dataset("known-panel", seed=3)
    assert [s.static_covariates.loc[s.static_covariates.index[0], "s"] for s in data.series] == pytest.approx(
        [m.static["s"] for m in members]
    )
    prepared = prepare(data, covariates="all")  # statics and the known-future column both kept
    assert prepared.train[0].static_covariates is not None and prepared.future[0][0].components.tolist() == ["x"]
    assert prepare(data, covariates="none").train[0].static_covariates is None


def test_families_are_deterministic_per_seed_and_differ_between_seeds():
    first, again, other = (suite.make_family("lagged", seed) for seed in (1, 1, 2))
    assert first[0].frame.equals(again[0].frame) and not first[0].frame.equals(other[0].frame)
    with pytest.raises(ValueError, match="Unknown covariate family 'known-cubic'; choose one of known-lagged"):
        suite.make_family("known-cubic")


@pytest.mark.parametrize("dataset, horizon", [("known-weather", 24), ("known-panel", 8)])
def test_the_noise_floor_is_the_benchmark_score_of_the_forecast_that_misses_only_the_noise(dataset, horizon):
    """The oracle's forecasts, standardised as the benchmark standardises, scored by the protocol's
    own ``score`` (Darts' backtest and metrics), give :func:`noise_floor`."""
    from darts.models import NaiveSeasonal

    seq_len, seed = 96, 5
    members = suite.make_family(dataset, seed)
    data = prepare(load_forecast_dataset(dataset, seed=seed), seq_len=seq_len, covariates="all")
    forecasts = []
    for member, test in zip(members, data.test_members, strict=True):
        n = len(member.frame)
        start = n - len(test)  # the test split's first row
        train = member.frame[member.targets].to_numpy()[: int(n * 0.7)]
        origins = np.arange(start + seq_len - 1, n - horizon)
        oracle = (suite.oracle_forecasts(member, origins, horizon) - train.mean(axis=0)) / train.std(axis=0)
        times = [test.time_index[o - start + 1 : o - start + 1 + horizon] for o in origins]
        forecasts.append(
            [
                TimeSeries.from_times_and_values(t, v, columns=test.components)
                for t, v in zip(times, oracle, strict=True)
            ]
        )
    scored = score(NaiveSeasonal(K=1), data, forecasts if len(members) > 1 else forecasts[0])
    assert scored["mse"] == pytest.approx(suite.noise_floor(members, seq_len, horizon), rel=1e-4)
