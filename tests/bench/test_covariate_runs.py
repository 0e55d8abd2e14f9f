"""``xct-bench forecast --covariates``: the control dataset, its known-future column, calendar
covariates, and runs with and without them side by side."""

import json

import numpy as np
import pytest
from darts import TimeSeries

from xct_estimators.bench.cli import main
from xct_estimators.bench.control import COLUMNS, RESPONSES, make_control, response
from xct_estimators.bench.datasets import ForecastDataset, load_forecast_dataset
from xct_estimators.bench.forecast.protocol import prepare, run_forecast
from xct_estimators.forecasting import XCTFormerModel


def test_the_plan_drives_each_target_after_its_lag():
    impulse = np.zeros(60)
    impulse[10] = 1.0
    for _, _, gain, lag, decay in RESPONSES:
        effect = response(impulse, gain, lag, decay)
        assert np.all(effect[: 10 + lag] == 0) and effect[10 + lag] == pytest.approx(gain)  # nothing before the lag
        assert np.all(np.abs(effect[10 + lag : 10 + lag + decay]) > 0) and np.all(effect[10 + lag + decay :] == 0)
    frame = make_control(n_steps=3000, seed=1)
    assert list(frame.columns) == list(COLUMNS) and set(np.unique(frame["plan"])) == {0.0, 1.0}
    assert frame.equals(make_control(n_steps=3000, seed=1)) and not frame.equals(make_control(n_steps=3000, seed=2))


def test_known_future_columns_are_covariates_never_targets():
    data = load_forecast_dataset("control", seed=0)
    plain = prepare(data, 96, "M", "none")
    future = prepare(data, 96, "M", "future")
    assert list(plain.train.components) == ["load", "price", "level"] == list(future.train.components)
    assert plain.future == (None, None, None)
    for part, known in zip((future.train, future.val, future.test), future.future, strict=True):
        assert list(known.components) == ["plan"] and known.time_index.equals(part.time_index)
    calendar = prepare(data, 96, "M", "calendar").future[2]
    assert list(calendar.components) == ["hour", "dayofweek"]
    assert calendar.values().min() >= -0.5 and calendar.values().max() <= 0.5


def test_future_covariates_of_a_dataset_without_them_is_a_clear_error():
    series = TimeSeries.from_values(np.random.default_rng(0).normal(size=(400, 2)).astype(np.float32))
    data = ForecastDataset("plain", series, "ratio", "1")
    with pytest.raises(ValueError, match="plain has no known-future columns"):
        prepare(data, 32, "M", "future")
    with pytest.raises(ValueError, match="needs timestamps"):
        prepare(data, 32, "M", "calendar")


def test_a_model_given_the_plan_forecasts_the_response():
    data = ForecastDataset("control", TimeSeries.from_dataframe(make_control(n_steps=1500).astype(np.float32)),
                           "ratio", "load", ("plan",))  # fmt: skip
    prepared = prepare(data, 32, "M", "future")
    model = XCTFormerModel(input_chunk_length=32, output_chunk_length=8, patch_len=8, stride=4, d_model=8,
                           n_heads=1, d_ff=16, e_layers=1, n_epochs=1, random_state=0,
                           pl_trainer_kwargs={"enable_progress_bar": False, "logger": False})  # fmt: skip
    fields, _ = run_forecast(model, prepared, 8)
    assert model.network_.config.n_future_channels == 1 and np.isfinite(fields["mse"])


def test_one_run_holds_each_model_with_and_without_covariates(tmp_path, capsys):
    argv = ["forecast", "--dataset", "control", "--covariates", "none,future", "--models", "xctformer,naive"]
    argv += ["--epochs", "1", "--seq-len", "32", "--horizons", "8", "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    assert "skip: naive takes no future covariates" in capsys.readouterr().out

    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted((r["model"], r["run"].get("covariates", "-")) for r in records) == [
        ("naive", "-"),  # absent at its default: runs recorded before the option keep their identity
        ("xctformer", "-"),
        ("xctformer", "future"),
    ]
