"""``xct-bench forecast --dataset sites --covariates static``: a panel whose behaviour a static
covariate sets, each member split and standardised on its own, and runs with and without it."""

import json

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries

from xct_estimators.bench.cli import main
from xct_estimators.bench.datasets import ForecastDataset, load_forecast_dataset
from xct_estimators.bench.forecast.protocol import expected_windows, forecast_test_split, prepare, run_forecast
from xct_estimators.bench.impute.protocol import imputation_splits
from xct_estimators.bench.sites import CYCLE_HOURS, DAILY_AMPLITUDE, make_sites
from xct_estimators.forecasting import XCTFormerModel


def test_a_site_s_size_sets_the_length_of_its_slow_cycle():
    frames = make_sites(seed=3, n_sites=4)
    for frame in frames:
        hours = np.arange(len(frame))
        slow = frame["load"].to_numpy() - DAILY_AMPLITUDE * np.sin(2 * np.pi * frame.index.hour.to_numpy() / 24)
        spectrum = np.abs(np.fft.rfft(slow - slow.mean()))
        period = len(hours) / np.argmax(spectrum[1:]).__add__(1)
        size = frame.attrs["size"]
        assert 0 <= size <= 1
        assert period == pytest.approx(CYCLE_HOURS[0] + size * (CYCLE_HOURS[1] - CYCLE_HOURS[0]), rel=0.1)
    assert all(a.equals(b) for a, b in zip(frames, make_sites(seed=3, n_sites=4), strict=True))
    assert not frames[0].equals(make_sites(seed=4, n_sites=4)[0])


def test_static_covariates_go_with_the_series_only_when_asked():
    data = load_forecast_dataset("sites", seed=0)
    plain, static = prepare(data, 96, "M", "none"), prepare(data, 96, "M", "static")
    assert len(static.train) == len(data.members) and static.future == (None, None, None)
    assert all(series.static_covariates is None for series in plain.train + plain.val + plain.test)
    for member, train, test in zip(data.members, static.train, static.test, strict=True):
        assert test.static_covariates.equals(member.static_covariates)
        assert float(train.values().mean()) == pytest.approx(0, abs=1e-4)  # standardised on its own rows
        assert float(train.values().std()) == pytest.approx(1, abs=1e-3)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: prepare(load_forecast_dataset("control"), 96, "M", "static"), "control has no static covariates"),
        (lambda: prepare(load_forecast_dataset("sites"), 96, "MS", "none"), "sites is a panel of one-target series"),
        (lambda: imputation_splits("sites", None, 0), "sites is a panel of 8 series and xct-bench impute takes one"),
    ],
)
def test_what_a_panel_or_its_static_covariates_cannot_do_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_panel_is_scored_over_every_member_s_test_windows():
    frames = make_sites(seed=0, n_sites=2, n_weeks=3)
    panel = [TimeSeries.from_dataframe(f.astype(np.float32), static_covariates=pd.Series(f.attrs)) for f in frames]
    prepared = prepare(ForecastDataset("sites", panel, "ratio", "load"), 32, "M", "static")
    model = XCTFormerModel(input_chunk_length=32, output_chunk_length=8, patch_len=8, stride=4, d_model=8,
                           n_heads=1, d_ff=16, e_layers=1, n_epochs=1, random_state=0,
                           pl_trainer_kwargs={"enable_progress_bar": False, "logger": False})  # fmt: skip
    fields, example = run_forecast(model, prepared, 8)
    assert model.network_.config.n_static_tokens == 1
    assert fields["n_windows"] == sum(expected_windows(len(test), 32, 8) for test in prepared.test)
    assert example["history"] == prepared.test[0][:32].values()[:, 0].tolist()
    errors = []  # plain numpy: every member's every window and step, against the truth
    for test, forecasts in zip(prepared.test, forecast_test_split(model, prepared, 8), strict=True):
        truth = test.values()[:, 0]
        for start, forecast in enumerate(forecasts, start=32):
            errors.append((forecast.values()[:, 0] - truth[start : start + 8]) ** 2)
    assert fields["mse"] == pytest.approx(float(np.mean(errors)), rel=1e-5)


def test_one_run_holds_each_model_with_and_without_static_covariates(tmp_path, capsys):
    argv = ["forecast", "--dataset", "sites", "--covariates", "none,static", "--models", "xctformer,naive"]
    argv += ["--epochs", "1", "--seq-len", "32", "--horizons", "8", "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "skip: naive takes no static covariates" in out and "(static on sites)" in out
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted((r["model"], r["run"].get("covariates", "-")) for r in records) == [
        ("naive", "-"),
        ("xctformer", "-"),
        ("xctformer", "static"),
    ]
