"""Models saved by the code before the one-home refactor (tests/data/before_refactor/make.py) still
load and give the outputs they gave then."""

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
from darts import TimeSeries

from xct_estimators import XCTFormerModel

SAVES = Path(__file__).parent / "data" / "before_refactor"


def _values() -> np.ndarray:
    t = np.arange(200, dtype=np.float32)
    return np.stack([np.sin(t / 6), np.cos(t / 9), np.sin(t / 4) * 0.5], axis=1).astype(np.float32)


def test_a_saved_darts_model_loads_and_forecasts_as_before():
    model = XCTFormerModel.load(str(SAVES / "xctformer_model.pt"))
    series = TimeSeries.from_values(_values(), columns=["a", "b", "c"])
    forecast = model.predict(8, series=series).values()
    np.testing.assert_allclose(forecast, np.load(SAVES / "xctformer_model_forecast.npy"), rtol=0, atol=1e-6)
    assert model.d_model == 8 and model.network_.config.d_model == 8 and model.channel_names_ == ["a", "b", "c"]


def test_a_pickled_imputer_loads_and_imputes_as_before():
    frame = pd.DataFrame(_values().astype(np.float64), columns=["a", "b", "c"])
    frame.iloc[::7, 0] = np.nan
    frame.iloc[3::11, 2] = np.nan
    with open(SAVES / "xctformer_imputer.pkl", "rb") as file:
        imputer = pickle.load(file)
    np.testing.assert_allclose(
        imputer.transform(frame).to_numpy(), np.load(SAVES / "xctformer_imputer_transform.npy"), rtol=0, atol=1e-6
    )
    engine = imputer.engine_
    assert engine.d_model == 8 and engine.architecture["patch_len"] == 4  # the old engine's one dict, expanded
    assert imputer.channel_names_ == ["a", "b", "c"] and imputer.network_ is engine.module.net
    assert imputer.get_params()["devices"] == "auto"  # a parameter added since: its default


def test_a_pickled_forecaster_loads_and_predicts_as_before():
    with open(SAVES / "xctformer_forecaster.pkl", "rb") as file:
        forecaster = pickle.load(file)
    predicted = forecaster.predict().to_numpy()
    np.testing.assert_allclose(predicted, np.load(SAVES / "xctformer_forecaster_predict.npy"), rtol=0, atol=1e-6)
    assert forecaster.channel_names_ == ["a", "b", "c"]
    assert forecaster.get_params()["validation_fraction"] == 0.1  # a parameter added since: its default
