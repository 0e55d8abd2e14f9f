import json

import numpy as np
import pytest
from darts import TimeSeries

from xct_estimators.bench.datasets import ForecastDataset
from xct_estimators.bench.forecast.protocol import (
    expected_windows,
    forecast_test_split,
    prepare,
    run_forecast,
    score,
)
from xct_estimators.bench.synthetic import make_synthetic
from xct_estimators.forecasting import XCTFormerModel

SEQ_LEN, HORIZON = 32, 8


@pytest.fixture(scope="module")
def small_synthetic():
    frame = make_synthetic(n_steps=600, seed=0)
    return ForecastDataset("synthetic", TimeSeries.from_dataframe(frame), "ratio", "target")


def numpy_scores(actual: np.ndarray, forecasts: np.ndarray, seq_len: int) -> dict[str, float]:
    """The metrics rebuilt in plain numpy: ``forecasts[i]`` predicts ``actual[seq_len + i : seq_len + i + H]``."""
    n_windows, horizon = forecasts.shape[:2]
    rows = seq_len + np.arange(n_windows)[:, None] + np.arange(horizon)[None, :]
    errors = forecasts - actual[rows]
    return {"mse": float(np.mean(errors**2)), "mae": float(np.mean(np.abs(errors)))}


def tiny_model():
    return XCTFormerModel(
        input_chunk_length=SEQ_LEN, output_chunk_length=HORIZON, patch_len=8, stride=8, d_model=8, n_heads=1,
        d_ff=16, e_layers=1, n_epochs=1, batch_size=64, random_state=0,
        pl_trainer_kwargs={"enable_progress_bar": False, "logger": False, "enable_checkpointing": False},
    )  # fmt: skip


def test_prepare_standardises_on_train_only(small_synthetic):
    data = prepare(small_synthetic, SEQ_LEN, "MS")
    assert data.train.components.tolist() == ["target"] and data.train_covariates.n_components == 6
    train = np.concatenate([data.train.values(), data.train_covariates.values()], axis=1)
    np.testing.assert_allclose(train.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(train.std(axis=0), 1, atol=1e-3)
    assert len(data.train) == 420 and len(data.val) == 60 + SEQ_LEN and len(data.test) == 120 + SEQ_LEN
    m = prepare(small_synthetic, SEQ_LEN, "M")
    assert m.train.n_components == 7 and m.train_covariates is None


def test_darts_backtest_equals_numpy_over_the_same_windows(small_synthetic):
    data = prepare(small_synthetic, SEQ_LEN, "MS")
    model = tiny_model()
    model.fit(data.train, past_covariates=data.train_covariates)
    forecasts = forecast_test_split(model, data, HORIZON)
    assert len(forecasts) == expected_windows(len(data.test), SEQ_LEN, HORIZON) == 120 - HORIZON + 1
    assert forecasts[0].start_time() == data.test.time_index[SEQ_LEN]
    through_darts = score(model, data, forecasts)
    stacked = np.stack([f.values() for f in forecasts])
    direct = numpy_scores(data.test.values(), stacked, SEQ_LEN)
    assert through_darts["mse"] == pytest.approx(direct["mse"], abs=1e-6)
    assert through_darts["mae"] == pytest.approx(direct["mae"], abs=1e-6)
    # the first forecast is the prediction from the test split's first SEQ_LEN rows
    first = model.predict(HORIZON, series=data.test[:SEQ_LEN], past_covariates=data.test_covariates, verbose=False)
    np.testing.assert_allclose(first.values(), stacked[0], atol=1e-5)


def test_numpy_scores_indexing():
    actual = np.arange(20, dtype=float)[:, None]
    forecasts = np.stack([actual[5 + i : 8 + i] + 1.0 for i in range(13)])  # perfect but off by one
    assert numpy_scores(actual, forecasts, seq_len=5) == {"mse": 1.0, "mae": 1.0}


def test_ms_model_without_past_covariates_is_trained_jointly_and_scored_on_the_target(small_synthetic):
    from darts.models import RNNModel

    data = prepare(small_synthetic, SEQ_LEN, "MS")
    trainer = {"enable_progress_bar": False, "logger": False}
    model = RNNModel(SEQ_LEN, model="RNN", hidden_dim=4, training_length=SEQ_LEN + HORIZON, n_epochs=1, random_state=0,
                     pl_trainer_kwargs=trainer)  # fmt: skip
    assert not model.supports_past_covariates
    fields, example = run_forecast(model, data, HORIZON)
    assert fields["ms_mode"].startswith("all columns as targets")
    assert model.training_series.n_components == 7  # the six covariates and the target
    assert model.training_series.components[-1] == "target"
    assert fields["n_windows"] == 120 - HORIZON + 1 and example["channel"] == "target"


def test_a_horizon_longer_than_a_split_is_refused(small_synthetic):
    data = prepare(small_synthetic, SEQ_LEN, "MS")  # the validation split (10 %) is the shortest
    with pytest.raises(ValueError, match="validation split has 92 rows, fewer than look-back 32 \\+ horizon 61"):
        run_forecast(tiny_model(), data, 61)


@pytest.mark.parametrize("features", ["M", "MS"])
def test_the_naive_baseline_is_the_last_input_value_repeated(small_synthetic, features):
    from xct_estimators.bench.forecast.protocol import build_model

    data = prepare(small_synthetic, SEQ_LEN, features)
    model = build_model("naive", "synthetic", HORIZON, seq_len=SEQ_LEN, progress=False)
    fields, _ = run_forecast(model, data, HORIZON)
    actual = data.test.values()[:, -1:]  # the target (the last column in M as in MS)
    n_windows = expected_windows(len(data.test), SEQ_LEN, HORIZON)
    last = actual[SEQ_LEN - 1 : SEQ_LEN - 1 + n_windows]  # each window's last input step
    rebuilt = numpy_scores(actual, np.repeat(last[:, None, :], HORIZON, axis=1), SEQ_LEN)
    if features == "MS":
        assert fields["mse"] == pytest.approx(rebuilt["mse"], rel=1e-6)
        assert fields["mae"] == pytest.approx(rebuilt["mae"], rel=1e-6)
    else:  # every channel scored: rebuild all of them
        every = data.test.values()
        last = every[SEQ_LEN - 1 : SEQ_LEN - 1 + n_windows]
        rebuilt = numpy_scores(every, np.repeat(last[:, None, :], HORIZON, axis=1), SEQ_LEN)
        assert fields["mse"] == pytest.approx(rebuilt["mse"], rel=1e-6)


def test_the_searched_recipe_reads_its_own_look_back_beside_the_others(tmp_path, monkeypatch):
    import dataclasses

    from conftest import SHARED_DATA

    from xct_estimators.bench.cli import main
    from xct_estimators.nn import presets

    if not (SHARED_DATA / "ETT-small" / "ETTh1.csv").is_file():
        pytest.skip(f"ETTh1 is not in {SHARED_DATA}")
    small = dict(input_len=48, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1)
    monkeypatch.setitem(presets.SEARCHED, ("ETTh1", 96), dataclasses.replace(presets.get_preset("ETTh1"), **small))
    argv = ["forecast", "--dataset", "ETTh1", "--models", "xctformer_searched,naive", "--epochs", "1", "--seq-len"]
    argv += ["32", "--horizons", "24", "--data-dir", str(SHARED_DATA), "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    records = {r["model"]: r for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())}
    searched, naive = records["xctformer_searched"], records["naive"]
    assert (searched["seq_len"], naive["seq_len"]) == (48, 32)  # its own look-back; --seq-len for the others
    assert searched["settings"]["input_chunk_length"] == 48 and searched["settings"]["d_model"] == 8
    assert searched["n_windows"] == naive["n_windows"]  # the same test targets at either look-back
    assert searched["recipe"] == {"searched_at": 96}


def test_the_searched_recipe_is_refused_on_data_it_was_not_searched_on(tmp_path, capsys, monkeypatch):
    from xct_estimators.bench.cli import main
    from xct_estimators.nn import presets

    monkeypatch.setattr(presets, "SEARCHED", {("ETTm1", 96): presets.get_preset("ETTm1")})  # control's preset
    argv = ["forecast", "--dataset", "control", "--models", "xctformer_searched", "--output", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "--models xctformer_searched: control has no searched recipe of its own (recorded: ETTm1)" in (
        capsys.readouterr().err
    )
