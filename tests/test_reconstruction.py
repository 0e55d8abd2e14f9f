import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries
from darts.ad import QuantileDetector
from sklearn.metrics import roc_auc_score

from xct_estimators import ReconstructionEngine, XCTFormerAnomalyDetector, XCTFormerImputer, XCTFormerScorer

FAST = dict(window_length=48, patch_len=8, stride=4, n_epochs=5, learning_rate=0.005, random_state=0,
            progress_bar=False, accelerator="cpu")  # fmt: skip


def mixed_sines(n, channels, seed=0, noise=0.02):
    """Channels that are mixtures of a few shared fast sines: strong cross-channel structure."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    latent = np.stack([np.sin(2 * np.pi * t / 6.3), np.sin(2 * np.pi * t / 9.7 + 1), np.sin(2 * np.pi * t / 4.1)], 1)
    return latent @ rng.normal(size=(3, channels)) + noise * rng.normal(size=(n, channels))


def test_imputation_beats_linear_interpolation_and_keeps_observed_values():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(mixed_sines(2000, 5), columns=list("abcde"))
    missing = rng.random(X.shape) < 0.25
    X_missing = X.mask(missing)
    Xt = XCTFormerImputer(mask_rate=0.25, **FAST).fit_transform(X_missing)
    assert Xt.index.equals(X.index) and list(Xt.columns) == list(X.columns)
    assert not Xt.isna().any().any()
    observed = ~missing
    assert np.array_equal(Xt.to_numpy()[observed], X_missing.to_numpy()[observed])  # bit-identical
    mse = ((Xt.to_numpy() - X.to_numpy())[missing] ** 2).mean()
    linear = X_missing.interpolate(limit_direction="both").to_numpy()
    mse_linear = ((linear - X.to_numpy())[missing] ** 2).mean()
    assert mse <= 0.5 * mse_linear, (mse, mse_linear)


def daily_channels(n=3000, channels=4, seed=0):
    """Hourly points of smooth, strongly correlated channels: mixtures of a daily cycle and its
    harmonics (periods 24, 12 and 8 hours), little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    latent = np.stack([np.sin(2 * np.pi * t / p + i) for i, p in enumerate((24, 12, 8))], 1)
    return latent @ rng.normal(size=(3, channels)) + 0.01 * rng.normal(size=(n, channels))


def test_default_imputer_beats_interpolation_twice_over():
    """A user's hand check: only window_length given, 1,500 x 4 values, 25 % missing."""
    truth = pd.DataFrame(daily_channels(1500), columns=list("abcd"))
    missing = np.random.default_rng(1).random(truth.shape) < 0.25
    X = truth.mask(missing)
    imputer = XCTFormerImputer(window_length=96, random_state=0)
    filled = imputer.fit_transform(X)
    mse = ((filled - truth).to_numpy()[missing] ** 2).mean()
    mse_interpolate = ((X.interpolate(limit_direction="both") - truth).to_numpy()[missing] ** 2).mean()
    assert mse <= 0.5 * mse_interpolate, (mse, mse_interpolate)
    engine = imputer.engine_
    assert engine.best_epoch is not None and len(engine.val_losses) == engine.epochs_trained
    # Early stopping ended training, or the cap came within `patience` epochs of the best one
    # (the validation loss was still falling then).
    stopped_early = engine.epochs_trained < imputer.n_epochs
    still_improving = engine.best_epoch >= engine.epochs_trained - 1 - engine.patience
    assert stopped_early or still_improving, (engine.epochs_trained, engine.best_epoch, engine.val_losses[-5:])


def anomalous_test_series(seed=0):
    """Training data, test data with injected spikes and level shifts, and the labels."""
    rng = np.random.default_rng(seed)
    t = np.arange(3000)
    latent = np.stack([np.sin(2 * np.pi * t / 12), np.sin(2 * np.pi * t / 31 + 1)], 1)
    values = latent @ rng.normal(size=(2, 4)) + 0.05 * rng.normal(size=(3000, 4))
    train, test = values[:2000].copy(), values[2000:].copy()
    labels = np.zeros(len(test), bool)
    events = []
    for position in (100, 300, 550, 800):  # spikes
        test[position, rng.integers(4)] += 4.0
        labels[position] = True
        events.append((position, position + 1))
    for start, stop in ((420, 440), (900, 915)):  # level shifts
        test[start:stop, 1] += 2.5
        labels[start:stop] = True
        events.append((start, stop))
    return train, test, labels, events


def test_scorer_ranks_spikes_and_level_shifts_and_quantile_detector_finds_them():
    train, test, labels, events = anomalous_test_series()
    scorer = XCTFormerScorer(**FAST).fit(TimeSeries.from_values(train))
    scores = scorer.score(TimeSeries.from_values(test))
    assert scores.n_components == 1 and len(scores) == len(test)
    assert roc_auc_score(labels, scores.values().ravel()) >= 0.95
    detector = QuantileDetector(high_quantile=0.97).fit(scorer.score(TimeSeries.from_values(train)))
    flags = detector.detect(scores).values().ravel().astype(bool)
    for start, stop in events:
        assert flags[start:stop].any(), (start, stop)
    assert flags.mean() < 0.35
    per_component = XCTFormerScorer(component_wise=True, **FAST).fit(TimeSeries.from_values(train))
    assert per_component.score(TimeSeries.from_values(test)).n_components == 4


def test_scorer_works_with_darts_eval_metric():
    train, test, labels, _ = anomalous_test_series()
    scorer = XCTFormerScorer(**FAST).fit(TimeSeries.from_values(train))
    anomalies = TimeSeries.from_values(labels.astype(float)[:, None])
    auc = scorer.eval_metric(anomalies, TimeSeries.from_values(test), metric="AUC_ROC")
    assert auc >= 0.95


def test_detector_scores_and_predictions():
    train, test, labels, events = anomalous_test_series()
    detector = XCTFormerAnomalyDetector(alpha=0.03, **FAST).fit(pd.DataFrame(train))
    scores = detector.transform_scores(pd.DataFrame(test))
    assert scores.shape == (len(test), 1)
    assert roc_auc_score(labels, scores["score"]) >= 0.95
    flagged = detector.predict(pd.DataFrame(test))["ilocs"].to_numpy()
    for start, stop in events:
        assert ((flagged >= start) & (flagged < stop)).any(), (start, stop)
    # the threshold is fixed at fit: the (1 - alpha) quantile of the training scores
    assert detector.threshold_ == pytest.approx(np.quantile(detector.train_scores_, 0.97))
    assert np.array_equal(flagged, np.flatnonzero(scores["score"].to_numpy() > detector.threshold_))
    assert len(detector.predict_scores(pd.DataFrame(test))) == len(flagged)
    # a batch made only of anomalies is not judged against itself: its spikes are still flagged
    threshold = detector.threshold_
    spikes = detector.predict(pd.DataFrame(test[80:140]))["ilocs"].to_numpy()
    assert detector.threshold_ == threshold and 20 in spikes  # the spike at test step 100
    # columns are read by name: the same data in another column order flags the same steps
    frame = pd.DataFrame(test, columns=[f"c{i}" for i in range(test.shape[1])])
    named = XCTFormerAnomalyDetector(alpha=0.03, **FAST).fit(pd.DataFrame(train, columns=frame.columns))
    expected = named.predict(frame)["ilocs"].to_numpy()
    assert np.array_equal(named.predict(frame[frame.columns[::-1]])["ilocs"].to_numpy(), expected)
    with pytest.raises(ValueError, match=r"missing: \['c0'\], unexpected: \['other'\]"):
        named.predict(frame.rename(columns={"c0": "other"}))


def test_reconstruction_averages_overlapping_windows_over_any_length():
    engine = ReconstructionEngine(window_stride=10, **FAST).fit(mixed_sines(300, 3))
    for length in (48, 49, 131):
        out = engine.reconstruct(mixed_sines(length, 3, seed=2))
        assert out.shape == (length, 3) and np.isfinite(out).all()


@pytest.fixture(scope="module")
def fitted_imputer():
    return XCTFormerImputer(**{**FAST, "n_epochs": 1}).fit(pd.DataFrame(mixed_sines(200, 3)))


def test_window_longer_than_series_is_a_clear_error():
    with pytest.raises(ValueError, match="has 30 time steps, shorter than window_length=48"):
        XCTFormerImputer(**FAST).fit(pd.DataFrame(mixed_sines(30, 2)))


def test_all_nan_column_is_a_clear_error():
    X = pd.DataFrame(mixed_sines(200, 3))
    X[1] = np.nan
    with pytest.raises(ValueError, match=r"Channel\(s\) \[1\] have no observed value"):
        XCTFormerImputer(**FAST).fit(X)


def test_inf_is_a_clear_error(fitted_imputer):
    X = pd.DataFrame(mixed_sines(200, 3))
    X.iloc[5, 0] = np.inf
    with pytest.raises(ValueError, match="1 infinite value"):
        fitted_imputer.transform(X)


def test_fewer_channels_at_transform_is_a_clear_error(fitted_imputer):
    with pytest.raises(ValueError, match=r"fitted on \[0, 1, 2\] \(missing: \[2\], unexpected: \[\]\)"):
        fitted_imputer.transform(pd.DataFrame(mixed_sines(200, 2)))
    with pytest.raises(ValueError, match="has 2 channels, but the model was fitted on 3"):
        fitted_imputer.engine_.reconstruct(mixed_sines(200, 2))


def test_presets_give_the_paper_rows():
    imputer = XCTFormerImputer.from_preset("ETTh2")
    assert (imputer.window_length, imputer.patch_len, imputer.d_model, imputer.learning_rate) == (1024, 64, 160, 0.005)
    detector = XCTFormerAnomalyDetector.from_preset("SMD")
    assert (detector.window_length, detector.d_model, detector.alpha) == (100, 168, 0.005)
    assert XCTFormerAnomalyDetector.from_preset("MSL").alpha == 0.01
    assert XCTFormerScorer.from_preset("SMAP").engine.architecture["d_ff"] == 128


def test_window_stride_longer_than_window_is_refused():
    with pytest.raises(ValueError, match="window_stride=40 exceeds window_length=32"):
        ReconstructionEngine(window_length=32, window_stride=40)


def test_short_batches_after_fit_continue_the_training_series():
    """A 10-row batch after fitting on 300 rows: reconstructed as the end of a window whose first
    steps are the training series' last ones (the same window `reconstruct` sees at the end of
    train + batch), with a warning; the imputer, detector and scorer all accept it."""
    values = mixed_sines(310, 3, seed=3)
    train, batch = values[:300], values[300:]
    engine = ReconstructionEngine(**FAST).fit(train)
    with pytest.warns(UserWarning, match="10 time steps, fewer than window_length=48.*continuation"):
        short = engine.reconstruct(batch)
    whole = engine._reconstruct(np.concatenate([train[-38:], batch]).astype(np.float32))  # one window, nothing averaged
    np.testing.assert_allclose(short, whole[-10:], rtol=1e-5, atol=1e-6)

    X = pd.DataFrame(values, columns=list("abc"))
    X_missing = X.copy()
    X_missing.iloc[302, 1] = np.nan
    imputer = XCTFormerImputer(**{**FAST, "n_epochs": 1}).fit(X.iloc[:300])
    with pytest.warns(UserWarning, match="continuation of the training series"):
        filled = imputer.transform(X_missing.iloc[300:])
    assert filled.shape == (10, 3) and not filled.isna().any().any()

    detector = XCTFormerAnomalyDetector(**{**FAST, "n_epochs": 1}).fit(X.iloc[:300])
    with pytest.warns(UserWarning, match="continuation"):
        scores = detector.transform_scores(X.iloc[300:])
    assert scores.shape == (10, 1) and np.isfinite(scores.to_numpy()).all()
    # the same steps at the end of the whole series sit in the same one window (starts 0, 24, ..., 240, 262)
    whole = detector.transform_scores(X)["score"].to_numpy()[300:]
    np.testing.assert_allclose(scores["score"].to_numpy(), whole, rtol=1e-4)
    with pytest.warns(UserWarning, match="continuation"):
        short_flags = detector.predict(X.iloc[300:])["ilocs"].to_numpy()
    whole_flags = detector.predict(X)["ilocs"].to_numpy()
    np.testing.assert_array_equal(short_flags, whole_flags[whole_flags >= 300] - 300)

    series = TimeSeries.from_values(values.astype(np.float32))
    scorer = XCTFormerScorer(**{**FAST, "n_epochs": 1}).fit(series[:300])
    with pytest.warns(UserWarning, match="continuation"):
        scored = scorer.score(series[300:])
    assert len(scored) == 10


@pytest.fixture(scope="module")
def filling_engine():
    return ReconstructionEngine(mask_rate=0.25, fill="linear", **{**FAST, "n_epochs": 1}).fit(mixed_sines(300, 3))


def test_hidden_passes_take_each_points_error_from_the_pass_that_hid_it(filling_engine):
    values = mixed_sines(120, 3, seed=4)
    values[7, 1] = np.nan  # unobserved: no error
    errors = filling_engine.score(values, hidden_passes=3)
    seen = np.ones(values.shape, dtype=bool)
    seen[7, 1] = False
    assert errors.shape == values.shape and np.isnan(errors[7, 1]) and np.isfinite(errors[seen]).all()
    steps, channels = np.meshgrid(np.arange(120), np.arange(3), indexing="ij")
    for t, c in [(0, 0), (10, 2), (61, 1), (119, 0)]:
        hidden = ((steps + channels) % 3 == (t + c) % 3) & ~np.isnan(values)  # the pass that hides (t, c)
        masked = filling_engine.check_values(np.where(hidden, np.nan, values), fitting=False)
        alone = filling_engine._reconstruct_checked(masked, skip_heads=True)
        assert errors[t, c] == pytest.approx((alone[t, c] - values[t, c]) ** 2, rel=1e-5)
    assert not np.allclose(errors, filling_engine.score(values), equal_nan=True)  # not the seen-point error


@pytest.mark.parametrize("passes", [0, 1, True, 2.0, "4"])
def test_a_bad_number_of_hidden_passes_is_refused(filling_engine, passes):
    with pytest.raises(ValueError, match="hidden_passes must be None or an integer >= 2"):
        filling_engine.score(mixed_sines(60, 3), hidden_passes=passes)


def test_the_detector_and_the_scorer_score_hidden_points_with_hidden_passes():
    tiny = {**FAST, "n_epochs": 1, "mask_rate": 0.25, "hidden_passes": 3, "error_scaling": "none"}
    X = pd.DataFrame(mixed_sines(300, 3))
    detector = XCTFormerAnomalyDetector(**tiny).fit(X)
    hidden = detector.engine_.score(X.to_numpy(), hidden_passes=3)
    assert np.allclose(detector.transform_scores(X)["score"], np.nanmean(hidden, axis=1), rtol=1e-5)
    scorer = XCTFormerScorer(**tiny).fit(TimeSeries.from_dataframe(X))
    scores = scorer.score(TimeSeries.from_dataframe(X)).values()[:, 0]
    assert np.allclose(scores, np.nanmean(scorer.engine.score(X.to_numpy(), hidden_passes=3), axis=1), rtol=1e-5)
    for estimator in (XCTFormerAnomalyDetector, XCTFormerScorer):
        with pytest.raises(ValueError, match="hidden_passes must be None or an integer >= 2, got 1"):
            estimator(hidden_passes=1)


def test_hidden_passes_without_mask_rate_warn_that_the_network_never_learned_to_fill():
    engine = ReconstructionEngine(**{**FAST, "n_epochs": 1}).fit(mixed_sines(200, 3))
    with pytest.warns(UserWarning, match="trained without mask_rate.*Train with mask_rate"):
        engine.score(mixed_sines(60, 3), hidden_passes=2)


def test_scores_on_clean_data_show_no_pattern_by_place_in_the_window():
    """Averaged plainly, the steps at a window's start (in one patch only: the tokenizer pads the
    end) score about a fifth higher than the rest on clean data, and get flagged more; each step is
    read where two patches see it instead."""
    rng = np.random.default_rng(0)
    t = np.arange(3000)
    values = np.stack([np.sin(t / (5 + i)) + 0.5 * np.sin(t / (17 + 3 * i)) for i in range(4)], 1)
    values = (values + 0.05 * rng.standard_normal(values.shape)).astype(np.float32)
    engine = ReconstructionEngine(window_length=48, patch_len=8, stride=4, d_model=16, n_heads=2, d_ff=32,
                                  e_layers=1, n_epochs=4, random_state=0, progress_bar=False)  # fmt: skip
    engine.fit(values[:2000])
    errors = engine.score(values[2000:]).mean(axis=1)
    place = np.arange(len(errors)) % engine.window_stride  # windows start every stride from the first step
    assert 0.8 < errors[place < 4].mean() / errors[place >= 4].mean() < 1.12
