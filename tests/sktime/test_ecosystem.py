"""sktime users' first hour (issue 13): pipelines with the imputer, sktime 1.3's remember_data."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sktime.forecasting.compose import ForecastingPipeline, TransformedTargetForecaster

from xct_estimators import XCTFormerForecaster, XCTFormerImputer

IMPUTER = dict(window_length=24, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, n_epochs=1,
               random_state=0, accelerator="cpu", validation_fraction=0.0)  # fmt: skip
FORECASTER = dict(input_chunk_length=24, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1,
                  n_epochs=1, random_state=0)  # fmt: skip


def sines(n=300, seed=0, gaps=0.0):
    t = np.arange(n)
    frame = pd.DataFrame({"a": np.sin(t / 5), "b": np.cos(t / 7)})
    return frame.mask(np.random.default_rng(seed).random(frame.shape) < gaps) if gaps else frame


def test_the_documented_pipeline_imputer_then_forecaster_predicts():
    y = sines(gaps=0.1)
    pipeline = TransformedTargetForecaster([("impute", XCTFormerImputer(**IMPUTER)),
                                            ("forecast", XCTFormerForecaster(**FORECASTER))])  # fmt: skip
    pipeline.fit(y, fh=[1, 2, 3])
    prediction = pipeline.predict()
    assert prediction.shape == (3, 2) and not prediction.isna().any().any()
    assert list(prediction.index) == [300, 301, 302]


def test_imputer_on_x_predicts_with_a_two_row_future_x():
    y = sines()
    X = pd.DataFrame({"x": np.cos(np.arange(302) / 3)}).mask(np.random.default_rng(1).random((302, 1)) < 0.1)
    X.iloc[300, 0] = np.nan  # the future X has a gap too
    pipeline = ForecastingPipeline([("impute", XCTFormerImputer(**IMPUTER)),
                                    ("forecast", XCTFormerForecaster(**FORECASTER))])  # fmt: skip
    pipeline.fit(y, X=X.iloc[:300], fh=[1, 2])
    with pytest.warns(UserWarning, match="2 time steps, fewer than window_length=24"):
        prediction = pipeline.predict(X=X.iloc[300:302])
    assert prediction.shape == (2, 2) and not prediction.isna().any().any()


def test_construction_does_not_warn_and_update_is_a_capability():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        forecaster = XCTFormerForecaster()
    assert forecaster.get_config()["remember_data"] is False
    assert forecaster.get_tag("capability:update") is True


@pytest.mark.parametrize("remember_data", [False, True])
def test_update_without_refit_moves_the_context_whatever_remember_data_says(remember_data):
    y = sines(320)
    forecaster = XCTFormerForecaster(**FORECASTER).set_config(remember_data=remember_data)
    forecaster.fit(y.iloc[:300], fh=[1, 2])
    before = forecaster.predict()
    forecaster.update(y.iloc[300:320], update_params=False)
    after = forecaster.predict()
    assert list(after.index) == [320, 321] and not after.isna().any().any()
    # the same as a forecaster fitted on the first 300 rows predicting from the last 24 of 320
    reference = forecaster.darts_model_.predict(2, series=forecaster._series(y.iloc[-24:]), verbose=False)
    np.testing.assert_allclose(after.to_numpy(), reference.values(), rtol=1e-5)
    assert not np.allclose(before.to_numpy(), after.to_numpy())
    pd.testing.assert_frame_equal(forecaster.y_context_, y.iloc[-24:])
