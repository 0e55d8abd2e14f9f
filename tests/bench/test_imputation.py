"""The imputation protocols against plain-numpy rebuilds of their rules, and the baselines."""

import numpy as np
import pandas as pd
import pytest

from xct_estimators.bench.impute.protocol import (
    LinearImputer,
    SktimeWindowImputer,
    evaluate_series,
    evaluate_windows,
    series_by_windows,
    window_starts,
)


def window_mean(x, visible):
    """A deterministic reconstructor: each channel of a window by the mean of its visible points."""
    total = np.where(visible, x, 0.0).sum(axis=1, keepdims=True)
    return np.broadcast_to(total / np.maximum(visible.sum(axis=1, keepdims=True), 1), x.shape).astype(np.float32)


def values(rows=300, channels=3, seed=0):
    rng = np.random.default_rng(seed)
    return (np.cumsum(rng.normal(size=(rows, channels)), axis=0) / 10).astype(np.float32)


@pytest.mark.parametrize("eval_stride", [1, 7])
def test_tslib_protocol_matches_a_plain_numpy_rebuild(eval_stride):
    data, length, rate, seed = values(), 40, 0.3, 5
    result = evaluate_windows(window_mean, data, length, rate, seed, eval_stride)

    rng = np.random.default_rng(seed)
    squared, absolute, hidden_count, n_windows = 0.0, 0.0, 0, 0
    for start in range(0, len(data) - length + 1, eval_stride):  # every window, in order
        window = data[start : start + length]
        hidden = rng.random(window.shape) <= rate  # a fresh mask per window
        visible = ~hidden
        inputs = np.where(visible, window, 0.0)  # hidden inputs set to 0
        recon = np.empty_like(window)
        for c in range(window.shape[1]):
            recon[:, c] = inputs[visible[:, c], c].mean() if visible[:, c].any() else 0.0
        errors = (recon - window)[hidden].astype(np.float64)
        squared += (errors**2).sum()
        absolute += np.abs(errors).sum()
        hidden_count += hidden.sum()
        n_windows += 1

    assert result["n_windows"] == n_windows == len(window_starts(len(data), length, eval_stride))
    assert result["n_hidden"] == hidden_count  # a point hidden in several windows counts each time
    assert result["mse"] == pytest.approx(squared / hidden_count, rel=1e-6)
    assert result["mae"] == pytest.approx(absolute / hidden_count, rel=1e-6)


def test_tslib_protocol_gives_every_model_the_same_masks():
    seen = []

    def record(x, visible):
        seen.append(visible.copy())
        return x

    evaluate_windows(record, values(), 40, 0.25, 3)
    first = np.concatenate(seen)
    seen.clear()
    evaluate_windows(record, values(seed=1), 40, 0.25, 3)
    assert np.array_equal(first, np.concatenate(seen))
    assert 0.2 < 1 - first.mean() < 0.3


def test_tslib_protocol_never_shows_hidden_values():
    data = values()

    def peek(x, visible):
        assert np.all(x[~visible] == 0.0)
        return x

    evaluate_windows(peek, data, 40, 0.5, 0)


def test_linear_baseline_is_per_window_numpy_interp():
    data, length = values(rows=120), 30
    imputer = LinearImputer()
    rng = np.random.default_rng(0)
    x = np.stack([data[s : s + length] for s in (0, 50, 90)])
    visible = rng.random(x.shape) > 0.4
    out = imputer.impute_windows(np.where(visible, x, 0.0).astype(np.float32), visible)
    for w in range(len(x)):
        for c in range(x.shape[2]):
            keep = visible[w, :, c]
            expected = np.interp(np.arange(length), np.flatnonzero(keep), x[w, keep, c])
            np.testing.assert_allclose(out[w, :, c], expected, rtol=1e-5, atol=1e-6)


def test_series_protocol_scores_each_hidden_point_once():
    data = values()
    linear = evaluate_series(LinearImputer().impute_series, data, 0.25, seed=2)
    hidden = np.random.default_rng(2).random(data.shape) < 0.25
    expected = pd.DataFrame(np.where(hidden, np.nan, data)).interpolate(limit_direction="both").to_numpy()
    assert linear["n_hidden"] == hidden.sum()
    assert linear["mse"] == pytest.approx(float(np.mean((expected - data)[hidden] ** 2)), rel=1e-5)


def test_series_by_windows_averages_overlaps_and_keeps_observed_values():
    data = values(rows=100)
    masked = data.copy()
    masked[10:15, 0] = np.nan
    filled = series_by_windows(lambda x, visible: np.full_like(x, 7.0), masked, 40, 20)
    assert np.array_equal(filled[~np.isnan(masked)], data[~np.isnan(masked)])
    assert np.all(filled[10:15, 0] == 7.0)


def test_sktime_baseline_fills_every_hidden_point_within_the_window():
    data = values(rows=60)
    visible = np.ones((1, 60, 3), bool)
    visible[0, 10:13, 1] = False
    out = SktimeWindowImputer(method="nearest").impute_windows(data[None], visible)
    assert not np.isnan(out).any()
    assert np.array_equal(out[visible], data[None][visible])
    assert out[0, 10, 1] == data[9, 1] and out[0, 12, 1] == data[13, 1]


def test_saits_without_pypots_names_the_extra(monkeypatch):
    import sys

    from xct_estimators.bench.impute.protocol import SAITSImputer

    monkeypatch.setitem(sys.modules, "pypots", None)
    monkeypatch.setitem(sys.modules, "pypots.imputation", None)
    with pytest.raises(ImportError, match=r"pip install 'xct-estimators\[baselines\]'"):
        SAITSImputer(32, 0.25, epochs=2, train_stride=4, seed=0, device="cpu")


def test_saits_baseline_runs_both_protocols():
    pytest.importorskip("pypots", reason="PyPOTS is in the optional 'baselines' extra")
    from xct_estimators.bench.impute.protocol import SAITSImputer

    data = values(rows=400)
    saits = SAITSImputer(32, 0.25, epochs=2, train_stride=4, seed=0, device="cpu")
    saits.fit(data[:250], data[230:320])
    windows = evaluate_windows(saits.impute_windows, data[300:], 32, 0.25, 0, 8)
    series = evaluate_series(saits.impute_series, data[300:], 0.25, 0)
    assert windows["n_windows"] == len(range(0, 100 - 32 + 1, 8))
    assert np.isfinite([windows["mse"], series["mse"]]).all()


@pytest.mark.parametrize(
    "options, peak, guarded",
    [({}, 0.005, True), ({"paper_recipe": True}, 0.005, False), ({"learning_rate": 1e-3}, 1e-3, True)],
)
def test_xctformer_rolls_back_a_diverged_epoch_unless_it_trains_the_papers_way(options, peak, guarded):
    from xct_estimators.bench.impute.protocol import build_imputer
    from xct_estimators.bench.impute.settings import ImputeSettings
    from xct_estimators.callbacks import RollBackOnDivergence

    imputer = build_imputer("xctformer", "ETTh2", 0.125, ImputeSettings(**options))
    assert imputer.engine.learning_rate == pytest.approx(peak)
    assert imputer.settings["learning_rate"] == pytest.approx(peak)  # part of the run's identity
    callbacks = imputer.engine.pl_trainer_kwargs.get("callbacks", [])
    assert any(isinstance(c, RollBackOnDivergence) for c in callbacks) == guarded
    assert ("rollback_on_divergence" in imputer.settings) == guarded  # so is the rollback


def test_two_peak_rates_are_refused_before_work(capsys):
    from xct_estimators.bench.cli import main

    assert main(["impute", "--paper-recipe", "--learning-rate", "1e-3", "--output", "/nonexistent/x"]) == 2
    assert "--paper-recipe trains at the preset's peak rate and --learning-rate" in capsys.readouterr().err
