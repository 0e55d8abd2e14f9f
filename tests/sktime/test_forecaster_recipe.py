"""The sktime forecaster trains with the tuner's recipe, so ``best_params`` reproduce in sktime."""

import numpy as np
import pandas as pd
import pytest
import torch
from darts import TimeSeries

from xct_estimators import XCTFormerForecaster, XCTFormerModel
from xct_estimators.nn import get_preset

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False, "accelerator": "cpu"}
#: What ``tune.best_params(study)`` hands over: architecture and peak learning rate.
BEST = dict(patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, learning_rate=5e-3)


def _frame(rows=260):
    t = np.arange(rows, dtype=np.float32)[:, None]
    return pd.DataFrame(np.sin(t / np.array([5.0, 7.0, 11.0])).astype(np.float32), columns=["a", "b", "c"])


def _validation_mse(predict, frame, start=200, horizon=6, length=24):
    errors = [
        predict(frame.iloc[s - length : s]) - frame.iloc[s : s + horizon].to_numpy() for s in range(start, 250, 5)
    ]
    return float(np.mean(np.square(errors)))


def test_best_params_give_the_same_validation_loss_through_darts_and_sktime():
    frame = _frame()
    train = frame.iloc[:200]
    common = dict(n_epochs=2, batch_size=16, random_state=0)
    darts = XCTFormerModel.from_params(24, 6, **BEST, **common, pl_trainer_kwargs=QUIET)
    darts.fit(TimeSeries.from_values(train.to_numpy(), columns=list(train.columns)))
    whole = dict(validation_fraction=0.0)  # trains on all of train, as the Darts fit without val_series
    forecaster = XCTFormerForecaster(input_chunk_length=24, output_chunk_length=6, **BEST, **common, **whole)
    forecaster.fit(train, fh=list(range(1, 7)))
    schedule = forecaster.darts_model_.model_params
    assert schedule["lr_scheduler_cls"] is torch.optim.lr_scheduler.OneCycleLR
    assert schedule["lr_scheduler_kwargs"]["max_lr"] == BEST["learning_rate"]

    def through(model):
        return lambda window: model.predict(6, series=TimeSeries.from_values(window.to_numpy()), verbose=False).values()

    darts_loss = _validation_mse(through(darts), frame)
    sktime_loss = _validation_mse(through(forecaster.darts_model_), frame)
    assert sktime_loss == pytest.approx(darts_loss, rel=1e-6)

    constant = XCTFormerForecaster(
        input_chunk_length=24, output_chunk_length=6, **BEST, **common, **whole, lr_schedule=None
    )
    constant.fit(train, fh=list(range(1, 7)))
    assert constant.darts_model_.model_params.get("lr_scheduler_cls") is None  # the user's override
    assert _validation_mse(through(constant.darts_model_), frame) != pytest.approx(darts_loss, rel=1e-3)


def test_from_preset_takes_the_papers_settings():
    preset = get_preset("ETTh1", "forecast")
    forecaster = XCTFormerForecaster.from_preset("ETTh1", n_epochs=1)
    params = forecaster.get_params()
    assert params["input_chunk_length"] == preset.seq_len and params["n_epochs"] == 1
    assert params["learning_rate"] == preset.learning_rate and params["batch_size"] == preset.batch_size
    assert {k: params[k] for k in preset.architecture()} == preset.architecture()
    assert params["lr_schedule"] == "one_cycle"
    with pytest.raises(ValueError, match="lr_schedule must be one of"):
        XCTFormerForecaster(input_chunk_length=24, n_epochs=1, lr_schedule="cosine").fit(_frame(), fh=[1])
