import copy
import pickle

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries
from sktime.forecasting.compose import TransformedTargetForecaster
from sktime.forecasting.model_evaluation import evaluate
from sktime.forecasting.model_selection import ForecastingGridSearchCV
from sktime.split import ExpandingWindowSplitter
from sktime.transformations.series.exponent import ExponentTransformer

from xct_estimators import XCTFormerForecaster, XCTFormerModel

QUIET = {"enable_progress_bar": False, "logger": False}
NETWORK = dict(input_chunk_length=16, patch_len=4, stride=2, d_model=8, n_heads=1, d_ff=16, e_layers=1)
TINY = dict(**NETWORK, n_epochs=1, batch_size=16, random_state=0, pl_trainer_kwargs=QUIET)


def frame(n=200, columns=("a", "b"), seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None]
    values = (
        5
        + np.sin(2 * np.pi * t / np.array([12.0, 7.0, 9.0][: len(columns)]))
        + 0.05 * rng.normal(size=(n, len(columns)))
    )
    return pd.DataFrame(values, columns=list(columns), index=pd.period_range("2020-01", periods=n, freq="D"))


@pytest.mark.parametrize("validation_fraction", [0.1, 0.0])
def test_forecasts_equal_the_underlying_darts_model(validation_fraction):
    """With validation (the default), the last 10 % of y (20 steps) are held out and validated on
    from the 16 steps before them; without it, every step trains."""
    y = frame()
    forecaster = XCTFormerForecaster(**TINY, validation_fraction=validation_fraction).fit(y, fh=[1, 2, 3, 4])
    ours = forecaster.predict()
    assert list(ours.index) == list(pd.period_range(y.index[-1] + 1, periods=4, freq="D"))
    model = XCTFormerModel.from_params(
        output_chunk_length=4,
        **NETWORK,
        n_epochs=1,
        batch_size=16,
        random_state=0,
        learning_rate=1e-3,
        pl_trainer_kwargs=QUIET,
    )  # fmt: skip (the forecaster's recipe: from_params')
    series = TimeSeries.from_values(y.to_numpy(np.float32))
    if validation_fraction:
        model.fit(series[:-20], val_series=series[-36:])
    else:
        model.fit(series)
    np.testing.assert_allclose(ours.to_numpy(), model.predict(4, series=series).values(), rtol=0, atol=1e-6)


def test_validation_restores_the_best_epoch_and_a_short_y_trains_without_it():
    y = frame()
    forecaster = XCTFormerForecaster(**{**TINY, "n_epochs": 3}).fit(y, fh=[1, 2])
    trainer = forecaster.darts_model_.trainer
    assert {type(c).__name__ for c in trainer.callbacks} >= {"KeepBestValidationWeights", "EarlyStoppingAfterWarmup"}
    with pytest.warns(UserWarning, match="too short to hold out validation steps"):
        XCTFormerForecaster(**TINY).fit(y[:19], fh=[1, 2])


def test_exogenous_columns_and_autoregressive_horizon():
    data = frame(columns=("a", "b", "c"))
    y, X = data[["a"]], data[["b", "c"]]
    forecaster = XCTFormerForecaster(output_chunk_length=3, **TINY).fit(y.iloc[:190], X=X.iloc[:190], fh=[1, 2, 3])
    assert forecaster.darts_model_.network.config.n_channels == 3
    long = forecaster.predict(fh=np.arange(1, 8), X=X.iloc[190:])
    assert long.shape == (7, 1) and np.isfinite(long.to_numpy()).all()
    swapped = forecaster.predict(fh=[1, 2], X=X.iloc[190:][["c", "b"]])  # read by name
    pd.testing.assert_frame_equal(swapped, forecaster.predict(fh=[1, 2], X=X.iloc[190:]))


def test_update_extends_the_context():
    y = frame()
    forecaster = XCTFormerForecaster(**TINY).fit(y.iloc[:150], fh=[1, 2])
    before = forecaster.predict()
    forecaster.update(y.iloc[150:170], update_params=False)
    after = forecaster.predict()
    assert after.index[0] == y.index[170]
    assert not np.allclose(before.to_numpy(), after.to_numpy())


def test_quantiles_give_ordered_intervals():
    y = frame(400, columns=("a",))
    # a constant rate: three one-cycle epochs leave this tiny network's quantile heads still crossed
    tiny = {**TINY, "n_epochs": 3, "lr_schedule": None}
    forecaster = XCTFormerForecaster(quantiles=[0.1, 0.5, 0.9], **tiny).fit(y, fh=[1, 2, 3])
    assert forecaster.get_tag("capability:pred_int")
    quantiles = forecaster.predict_quantiles(alpha=[0.1, 0.5, 0.9])
    assert (quantiles[("a", 0.1)] <= quantiles[("a", 0.9)]).all()
    interval = forecaster.predict_interval(coverage=0.8)
    assert (interval[("a", 0.8, "lower")] <= interval[("a", 0.8, "upper")]).all()
    assert not XCTFormerForecaster(**TINY).get_tag("capability:pred_int")


def test_pickle_and_deepcopy_keep_the_fitted_network():
    y = frame()
    forecaster = XCTFormerForecaster(**TINY).fit(y, fh=[1, 2])
    expected = forecaster.predict()
    for restored in (pickle.loads(pickle.dumps(forecaster)), copy.deepcopy(forecaster)):
        pd.testing.assert_frame_equal(restored.predict(), expected)


def test_pipeline_grid_search_and_evaluate_from_the_docs():
    y = frame(160, columns=("a",))["a"]
    pipeline = TransformedTargetForecaster(
        [("square", ExponentTransformer(power=2)), ("forecast", XCTFormerForecaster(**TINY))]
    )
    search = ForecastingGridSearchCV(
        pipeline,
        cv=ExpandingWindowSplitter(initial_window=120, step_length=20, fh=[1, 2, 3]),
        param_grid={"forecast__d_model": [8, 16]},
    )
    search.fit(y, fh=[1, 2, 3])
    assert search.best_params_["forecast__d_model"] in (8, 16)
    assert search.predict().shape == (3,)
    results = evaluate(
        forecaster=XCTFormerForecaster(**TINY), y=y,
        cv=ExpandingWindowSplitter(initial_window=120, step_length=20, fh=[1, 2, 3]),
    )  # fmt: skip
    assert len(results) == 2 and np.isfinite(results.iloc[:, 0]).all()


def test_nan_in_y_suggests_the_imputer():
    y = frame()
    y.iloc[10, 0] = np.nan
    with pytest.raises(ValueError, match="1 missing value.*XCTFormerImputer"):
        XCTFormerForecaster(**TINY).fit(y, fh=[1])


def test_too_short_y_is_a_clear_error():
    with pytest.raises(ValueError, match="too short for one training sample"):
        XCTFormerForecaster(**TINY).fit(frame(18), fh=[1, 2, 3, 4])


def test_future_x_reaches_the_forecast():
    """X over the horizon is an input: forecasts move when only its future rows change, and the
    steps between fh's need rows (sktime's tag says so)."""
    rng = np.random.default_rng(0)
    control = pd.DataFrame({"control": (rng.random(260) < 0.2).astype(float)})
    y = pd.DataFrame({"load": np.convolve(control["control"], np.ones(3), mode="full")[:260] + 0.01 * rng.random(260)})
    forecaster = XCTFormerForecaster(input_chunk_length=16, patch_len=4, stride=2, d_model=8, n_heads=1, d_ff=16,
                                     e_layers=1, n_epochs=2, random_state=0)  # fmt: skip
    forecaster.fit(y.iloc[:240], X=control.iloc[:240], fh=[1, 2, 3])
    assert forecaster.get_tag("capability:non_contiguous_X") is False
    future = control.iloc[240:243]
    first = forecaster.predict(X=future)
    flipped = 1.0 - future
    assert not np.allclose(first.to_numpy(), forecaster.predict(X=flipped).to_numpy())
    np.testing.assert_allclose(first.to_numpy(), forecaster.predict(X=future).to_numpy())  # same X, same forecast
