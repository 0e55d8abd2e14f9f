"""Future and static covariates in XCTFormerModel: their horizon values and static rows become
tokens, so the forecast follows what is known about the future."""

import numpy as np
import pandas as pd
import pytest
import torch
from darts import TimeSeries

from xct_estimators import XCTFormerModel
from xct_estimators.forecasting import lowest_window_mean

IN, OUT = 32, 8


def model(tmp_path, **changes) -> XCTFormerModel:
    kwargs = dict(input_chunk_length=IN, output_chunk_length=OUT, patch_len=8, stride=4, d_model=16, n_heads=2,
                  d_ff=32, e_layers=1, n_epochs=2, batch_size=32, random_state=0, work_dir=str(tmp_path),
                  pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False})  # fmt: skip
    kwargs.update(changes)
    return XCTFormerModel(**kwargs)


def driven(n=400):
    """A target that follows a known control signal three steps later."""
    rng = np.random.default_rng(0)
    control = (rng.random(n + 50) < 0.1).astype(np.float32)
    target = np.convolve(control, np.ones(4), mode="full")[: n + 50]
    target = np.roll(target, 3) + 0.05 * rng.standard_normal(n + 50)
    series = TimeSeries.from_values(np.stack([target, np.sin(np.arange(n + 50) / 5)], 1).astype(np.float32)[:n])
    return series, TimeSeries.from_values(control[:, None], columns=["control"])


def test_future_covariates_reach_the_forecast(tmp_path):
    series, control = driven()
    fitted = model(tmp_path)
    fitted.fit(series, future_covariates=control)
    config = fitted.network_.config
    assert (config.n_channels, config.n_future_channels, config.future_len) == (3, 1, OUT)
    assert fitted.channel_names_ == ["0", "1", "control"]
    forecast = fitted.predict(OUT, future_covariates=control).values()
    changed = control.values().copy()
    changed[len(series) : len(series) + OUT] = 1.0 - changed[len(series) : len(series) + OUT]  # the horizon only
    moved = fitted.predict(OUT, future_covariates=TimeSeries.from_values(changed, columns=["control"])).values()
    assert forecast.shape == (OUT, 2) and not np.allclose(forecast, moved)


def test_static_covariates_are_tokens_unless_switched_off(tmp_path):
    series = driven()[0].with_static_covariates(pd.DataFrame({"site": [1.0], "height": [2.0]}))
    fitted = model(tmp_path)
    fitted.fit(series)
    assert (fitted.network_.config.n_static_tokens, fitted.network_.config.static_features) == (1, 2)
    forecast = fitted.predict(OUT).values()
    other = series.with_static_covariates(pd.DataFrame({"site": [5.0], "height": [-2.0]}))
    assert not np.allclose(forecast, fitted.predict(OUT, series=other).values())
    ignoring = model(tmp_path, use_static_covariates=False)
    ignoring.fit(series)
    assert ignoring.network_.config.n_static_tokens == 0


def test_a_model_fitted_on_a_panel_names_its_channels_and_maps_its_dependencies(tmp_path):
    from xct_estimators.explain import dependency_map, horizon_dependency_map

    series, control = driven()
    sites = [series.with_static_covariates(pd.DataFrame({"size": [size]})) for size in (0.2, 0.8)]
    fitted = model(tmp_path, n_epochs=1)
    fitted.fit(sites, future_covariates=[control, control])
    assert fitted.channel_names_ == ["0", "1", "control"]  # Darts keeps none of a panel's series
    assert list(dependency_map(fitted).coords["key_channel"].values) == ["0", "1"]  # the decoder reads "control"
    assert horizon_dependency_map(fitted).sizes["lag"] == IN  # the decoder's filters read the window's length


def test_calendar_encoders_and_the_preset_work_with_future_covariates(tmp_path):
    values = driven()[0].values()
    series = TimeSeries.from_times_and_values(pd.date_range("2024-01-01", periods=len(values), freq="h"), values)
    encoded = XCTFormerModel.from_preset(
        "ETTh1", output_chunk_length=OUT, input_chunk_length=IN, n_epochs=1, work_dir=str(tmp_path),
        add_encoders={"datetime_attribute": {"future": ["hour", "dayofweek"]}},
        pl_trainer_kwargs={"enable_progress_bar": False},
    )  # fmt: skip
    encoded.fit(series)
    config = encoded.network_.config
    assert (config.d_model, config.n_future_channels) == (8, 2)  # the preset's width, two calendar channels
    assert encoded.predict(OUT).shape == (OUT, 2, 1)


def test_historical_forecasts_with_future_covariates_equal_predict(tmp_path):
    from xct_estimators import historical_forecasts

    series, control = driven()
    fitted = model(tmp_path)
    fitted.fit(series[:300], future_covariates=control)
    assert not historical_forecasts.applies(fitted, 1, OUT, False, None)  # Darts' path: covariate tokens
    backtest = fitted.historical_forecasts(
        series, future_covariates=control, start=320, forecast_horizon=OUT, retrain=False, last_points_only=False
    )
    direct = fitted.predict(OUT, series=series[:320], future_covariates=control)
    np.testing.assert_allclose(backtest[0].values(), direct.values(), atol=1e-5)


def test_bad_future_covariates_are_clear_errors(tmp_path):
    series, control = driven()
    broken = control.values().copy()
    broken[5] = np.nan
    with pytest.raises(ValueError, match="future_covariates contains 1 NaN"):
        model(tmp_path).fit(series, future_covariates=TimeSeries.from_values(broken))
    fitted = model(tmp_path)
    fitted.fit(series, future_covariates=control)
    with pytest.raises(ValueError, match="future_covariates"):
        fitted.predict(OUT, future_covariates=control[: len(series) + 2])  # not as far as the horizon


def test_a_saved_model_with_future_covariates_forecasts_the_same_after_loading(tmp_path):
    series, control = driven()
    fitted = model(tmp_path)
    fitted.fit(series, future_covariates=control)
    fitted.save(str(tmp_path / "model.pt"))
    loaded = XCTFormerModel.load(str(tmp_path / "model.pt"))
    saved, restored = fitted.network_.known_future.state_dict(), loaded.network_.known_future.state_dict()
    assert saved.keys() == restored.keys() and {"known_mean", "known_std", "level_std", "level_floor"} <= saved.keys()
    for name, value in saved.items():
        torch.testing.assert_close(restored[name], value)
    np.testing.assert_allclose(
        loaded.predict(OUT, future_covariates=control).values(), fitted.predict(OUT, future_covariates=control).values()
    )
    checkpoint = torch.load(tmp_path / "model.pt.ckpt", weights_only=False)  # a development build's, no gain
    weights, gain = checkpoint["state_dict"], ("gain.", "offset", "level_floor")
    checkpoint["state_dict"] = {
        k: v for k, v in weights.items() if not k.startswith(tuple("net.known_future." + g for g in gain))
    }
    torch.save(checkpoint, tmp_path / "model.pt.ckpt")
    lacked = r"\(its weights lack net.known_future.gain, net.known_future.level_floor, net.known_future.offset\)"
    refused = r"model.pt: .*development build.*" + lacked
    with pytest.raises(ValueError, match=refused):
        XCTFormerModel.load(str(tmp_path / "model.pt"))
    before = fitted.predict(OUT, future_covariates=control).values()
    for strict in (True, False):  # the weights alone, into a fitted model: refused, and the model kept
        with pytest.raises(ValueError, match=r"refit the model .* " + lacked):
            fitted.load_weights(str(tmp_path / "model.pt"), strict=strict)
        np.testing.assert_array_equal(fitted.predict(OUT, future_covariates=control).values(), before)


def test_fit_gives_the_decoder_the_training_data_s_statistics_encoders_included(tmp_path):
    """The decoder standardises each future covariate, the user's and an encoder's, with the training
    data's mean and std, and adds in units of the targets' training std."""
    series, control = driven()
    hours = TimeSeries.from_times_and_values(
        pd.date_range("2024-01-01", periods=len(series), freq="h"), series.values()
    )  # fmt: skip
    plan = TimeSeries.from_times_and_values(
        pd.date_range("2024-01-01", periods=len(control), freq="h"), 5.0 * control.values() + 3.0, columns=["plan"]
    )  # fmt: skip
    fitted = model(tmp_path, add_encoders={"datetime_attribute": {"future": ["hour"]}})
    fitted.fit(hours, future_covariates=plan)
    decoder = fitted.network_.known_future
    hour = np.arange(len(plan)) % 24  # the encoder's covariate over the rows the dataset holds
    np.testing.assert_allclose(decoder.known_mean, [plan.values().mean(), hour.mean()], rtol=1e-4)
    np.testing.assert_allclose(decoder.known_std, [plan.values().std(), hour.std()], rtol=1e-4)
    np.testing.assert_allclose(decoder.level_std, hours.values().std(axis=0), rtol=1e-4)
    window_means = hours.to_dataframe().rolling(fitted.input_chunk_length).mean().min()  # the gain's floor
    np.testing.assert_allclose(decoder.level_floor, window_means.values, rtol=1e-4, atol=1e-6)


def test_the_floor_is_the_lowest_window_mean_of_the_series_long_enough_for_a_window():
    rng = np.random.default_rng(0)
    long, short = rng.normal(size=(40, 2)), np.full((5, 2), -100.0)
    brute = np.min([long[i : i + 8].mean(axis=0) for i in range(33)], axis=0)
    np.testing.assert_allclose(lowest_window_mean([long, short], 8, fallback=np.zeros(2)), brute)
    np.testing.assert_array_equal(lowest_window_mean([short], 8, fallback=np.array([1.0, 2.0])), [1.0, 2.0])


def test_a_panel_s_floor_is_the_lowest_window_mean_within_one_series(tmp_path):
    """No window spans two series: here the windows across the join are the lowest of all."""
    low = np.r_[np.full(IN // 2, -5.0), np.full(60, 15.0)].astype(np.float32)  # every window's mean is at least 5
    first, second = TimeSeries.from_values(low[::-1].copy()), TimeSeries.from_values(low)
    control = TimeSeries.from_values(np.zeros((len(low) + OUT, 1), np.float32), columns=["control"])
    fitted = model(tmp_path, n_epochs=1)
    fitted.fit([first, second], future_covariates=[control, control])
    np.testing.assert_allclose(fitted.network_.known_future.level_floor, [5.0], atol=1e-5)  # not the buffer's 0


def test_a_static_covariate_far_from_its_training_constant_gives_a_finite_moderate_forecast(tmp_path):
    """One series: its static covariate is a constant in training (std 0), scaled by its size, so a
    series with three times that value forecasts on the same scale, not 1e13."""
    series = driven()[0].with_static_covariates(pd.DataFrame({"size": [1e15]}))
    fitted = model(tmp_path).fit(series)
    other = series.with_static_covariates(pd.DataFrame({"size": [3e15]}))
    assert np.abs(fitted.predict(OUT, series=other).values()).max() < 100


def test_covariates_are_matched_by_name_across_a_list_a_refit_and_with_encoders(tmp_path):
    series, control = driven()
    two = control.stack(control.with_columns_renamed("control", "other") * 2.0)
    swapped = two[["other", "control"]]
    with pytest.raises(ValueError, match=r"future_covariates\[1\] has the components of future_covariates\[0\] in "
                                         r"another order"):  # fmt: skip
        model(tmp_path).fit([series, series], future_covariates=[two, swapped])
    fitted = model(tmp_path).fit(series, future_covariates=two)
    with pytest.raises(ValueError, match=r"future_covariates has the components of the first fit in another order"):
        fitted.fit(series, future_covariates=swapped, epochs=1)
    indexed = TimeSeries.from_times_and_values(pd.date_range("2024", periods=len(series), freq="h"), series.values())
    timed = TimeSeries.from_times_and_values(pd.date_range("2024", periods=len(two), freq="h"), two.values(),
                                             columns=two.components)  # fmt: skip
    encoded = model(tmp_path, add_encoders={"datetime_attribute": {"future": ["hour"]}})
    encoded.fit(indexed, future_covariates=timed)
    with pytest.raises(ValueError, match=r"has the components of fit in another order \(\['other', 'control'\]"):
        encoded.predict(OUT, future_covariates=timed[["other", "control"]])
