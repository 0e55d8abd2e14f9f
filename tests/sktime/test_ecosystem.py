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


def panel(lengths=(80, 80, 80), columns=2, ahead=0):
    """Daily instances ending on 2021-01-31, or ``ahead`` days later (X over the horizon too)."""
    frames = {}
    for i, n in enumerate(lengths):
        t = np.arange(n + ahead)
        index = pd.date_range(end=pd.Timestamp("2021-01-31") + pd.Timedelta(days=ahead), periods=n + ahead, freq="D")
        frames[f"unit{i}"] = pd.DataFrame({f"c{j}": np.sin(t / (4 + i + j)) + i for j in range(columns)}, index=index)
    y = pd.concat(frames, names=["unit", "time"])
    return y


def test_a_panel_trains_one_global_model_and_forecasts_every_instance(monkeypatch):
    from xct_estimators import XCTFormerModel

    seen = []
    original_fit = XCTFormerModel.fit

    def spy(self, series, *args, **kwargs):
        seen.append(len(series) if isinstance(series, list) else 1)
        return original_fit(self, series, *args, **kwargs)

    monkeypatch.setattr(XCTFormerModel, "fit", spy)
    y = panel()
    forecaster = XCTFormerForecaster(**FORECASTER).fit(y, fh=[1, 2, 3])
    assert seen == [3] and not hasattr(forecaster, "forecasters_")  # one network, three series
    prediction = forecaster.predict()
    expected = pd.MultiIndex.from_product(
        [["unit0", "unit1", "unit2"], pd.date_range("2021-02-01", periods=3, freq="D")], names=["unit", "time"]
    )
    assert prediction.index.equals(expected) and list(prediction.columns) == ["c0", "c1"]
    assert not prediction.isna().any().any()
    # the same network forecasts each instance as the Darts model does on that series alone
    alone = forecaster.darts_model_.predict(3, series=forecaster._series(y.loc["unit1"].iloc[-24:]), verbose=False)
    np.testing.assert_allclose(prediction.loc["unit1"].to_numpy(), alone.values(), rtol=1e-5)


def test_short_instances_are_left_out_of_training_but_still_forecast():
    y = panel(lengths=(80, 26, 80))  # 26: an input window (24), not a training sample (24 + 3)
    with pytest.warns(UserWarning, match=r"Instance\(s\) \[\('unit1',\)\] of y have fewer than .* = 27"):
        forecaster = XCTFormerForecaster(**FORECASTER).fit(y, fh=[1, 2, 3])
    prediction = forecaster.predict()
    assert prediction.shape == (9, 2) and not prediction.isna().any().any()
    too_short = panel(lengths=(80, 10, 80))
    with pytest.warns(UserWarning, match="left out of training"):
        forecaster = XCTFormerForecaster(**FORECASTER).fit(too_short, fh=[1, 2])
    with pytest.raises(ValueError, match=r"\(\('unit1',\), 10\).* fewer than input_chunk_length=24"):
        forecaster.predict()


def test_a_hierarchy_with_exogenous_x_is_one_model_too():
    y = panel(columns=1)
    X = panel(columns=1, ahead=2).rename(columns={"c0": "x"}) * 0.5  # X reaches over the horizon
    y = pd.concat({"north": y}, names=["region"])
    X = pd.concat({"north": X}, names=["region"])
    forecaster = XCTFormerForecaster(**FORECASTER).fit(y, X=X, fh=[1, 2])
    prediction = forecaster.predict(X=X)
    assert prediction.index.nlevels == 3 and prediction.shape == (6, 1)
    assert list(prediction.index.names) == ["region", "unit", "time"]


def test_panel_x_is_matched_to_y_by_instance_not_by_order():
    y = panel(columns=1)
    X = panel(columns=1, ahead=2).rename(columns={"c0": "x"}) * 0.5
    shuffled = pd.concat([X.loc[["unit2"]], X.loc[["unit0"]], X.loc[["unit1"]]])
    forecaster = XCTFormerForecaster(**FORECASTER).fit(y, X=X, fh=[1, 2])
    other = XCTFormerForecaster(**FORECASTER).fit(y, X=shuffled, fh=[1, 2])
    pd.testing.assert_frame_equal(forecaster.predict(X=X), other.predict(X=shuffled))


def test_a_panel_x_without_rows_for_an_instance_names_the_instance():
    y = panel(columns=1)
    X = panel(columns=1).rename(columns={"c0": "x"}).drop(index="unit1", level="unit")
    with pytest.raises(
        ValueError, match=r"X has no rows for y's instance \('unit1',\) \(X's instances: \[\('unit0',\)"
    ):
        XCTFormerForecaster(**FORECASTER).fit(y, X=X, fh=[1, 2])


def test_a_panel_x_without_rows_for_an_instance_at_predict_names_the_instance():
    y = panel(columns=1)
    X = panel(columns=1, ahead=2).rename(columns={"c0": "x"})
    forecaster = XCTFormerForecaster(**FORECASTER).fit(y, X=X, fh=[1, 2])
    with pytest.raises(ValueError, match=r"X has no rows for the forecast horizon of instance \('unit1',\)"):
        forecaster.predict(X=X.drop(index="unit1", level="unit"))
