"""The direct retrain=False path gives what Darts' generic path gives, window for window."""

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries

import xct_estimators.historical_forecasts as direct
from xct_estimators import XCTFormerModel

IN, OUT = 32, 8


def dated(values, start="2021-01-01", freq="h"):
    index = pd.date_range(start, periods=len(values), freq=freq, name="time")
    return TimeSeries.from_times_and_values(
        index, values.astype(np.float32), columns=[f"c{i}" for i in range(values.shape[1])]
    )


def waves(n, channels, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None]
    return np.sin(2 * np.pi * t / rng.uniform(6, 30, channels)) + 0.05 * rng.standard_normal((n, channels))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    target = dated(waves(300, 2, 0))
    covariates = dated(waves(340, 2, 1), start="2020-12-31 00:00")  # starts 24 steps earlier, ends later
    model = XCTFormerModel(
        IN, OUT, patch_len=8, stride=8, d_model=8, n_heads=1, d_ff=16, n_epochs=1, batch_size=16, random_state=0,
        work_dir=str(tmp_path_factory.mktemp("hf")), pl_trainer_kwargs={"enable_progress_bar": False, "logger": False},
    )  # fmt: skip
    model.fit(target, past_covariates=covariates)
    return model, target, covariates


def both_paths(monkeypatch, model, **kwargs):
    fast = model.historical_forecasts(retrain=False, verbose=False, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(direct, "applies", lambda *args: False)
        generic = model.historical_forecasts(retrain=False, verbose=False, **kwargs)
    return fast, generic


def assert_same(fast, generic):
    if isinstance(fast, TimeSeries):
        fast, generic = [fast], [generic]
    assert len(fast) == len(generic)
    for a, b in zip(fast, generic, strict=True):
        assert a.time_index.equals(b.time_index) and a.freq == b.freq
        assert list(a.components) == list(b.components)
        np.testing.assert_allclose(a.values(), b.values(), atol=1e-5)


@pytest.mark.parametrize(
    "options",
    [
        dict(forecast_horizon=OUT, stride=1, last_points_only=False),
        dict(forecast_horizon=3, stride=5, last_points_only=False),
        dict(forecast_horizon=OUT, stride=1, last_points_only=True),
        dict(forecast_horizon=4, stride=3, last_points_only=True),
        dict(forecast_horizon=OUT, stride=2, last_points_only=False, start=100, start_format="position"),
        dict(forecast_horizon=OUT, stride=1, last_points_only=False, overlap_end=True),
    ],
)
def test_direct_path_equals_darts_generic_path(monkeypatch, fitted, options):
    model, target, covariates = fitted
    fast, generic = both_paths(monkeypatch, model, series=target, past_covariates=covariates, **options)
    assert_same(fast, generic)


def test_list_of_series(monkeypatch, fitted):
    model, target, covariates = fitted
    series = [target, target[40:] * 2.0]
    fast, generic = both_paths(monkeypatch, model, series=series, past_covariates=[covariates, covariates],
                               forecast_horizon=OUT, last_points_only=False)  # fmt: skip
    assert len(fast) == 2
    for a, b in zip(fast, generic, strict=True):
        assert_same(a, b)


def test_direct_path_is_used_and_checks_input(fitted):
    model, target, covariates = fitted
    assert direct.applies(model, 1, OUT, False, None)
    assert not direct.applies(model, 1, OUT + 1, False, None)  # autoregressive: Darts' path
    with pytest.raises(ValueError, match="components"):
        model.historical_forecasts(target.stack(target), past_covariates=covariates, retrain=False)
