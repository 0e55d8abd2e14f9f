"""One set of input checks for every prediction path (issue 64, item 2): ``predict``,
``historical_forecasts`` on the direct path and on Darts' path refuse the same mistakes with the
same message, and where Darts' TiDE names a mistake, so does XCTFormerModel."""

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries
from darts.models import TiDEModel

from xct_estimators import XCTFormerModel

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False}
IN, OUT, N = 24, 6, 200
INDEX = pd.date_range("2020", periods=N + 50, freq="h")
T = np.arange(N + 50)
SERIES = TimeSeries.from_times_and_values(INDEX[:N], np.stack([np.sin(T / 3), np.cos(T / 5)], 1)[:N].astype("f4"))
PAST = TimeSeries.from_times_and_values(INDEX[:N], np.cos(T / 7)[:N, None].astype("f4"), columns=["p"])
FUTURE = TimeSeries.from_times_and_values(INDEX, np.sin(T / 7)[:, None].astype("f4"), columns=["f"])
PAST2 = PAST.stack(PAST.with_columns_renamed("p", "q") * 2.0)


def xct():
    return XCTFormerModel(IN, OUT, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, n_epochs=1,
                          random_state=0, pl_trainer_kwargs=QUIET)  # fmt: skip


def tide():
    return TiDEModel(IN, OUT, hidden_size=8, decoder_output_dim=4, n_epochs=1, random_state=0, pl_trainer_kwargs=QUIET)


@pytest.fixture(scope="module")
def fitted():
    """Each kind of model fitted once: past covariates (the direct path of historical_forecasts),
    future covariates (Darts' path), static covariates; TiDE beside each."""
    static = SERIES.with_static_covariates(pd.DataFrame({"size": [1.0]}))
    out = {}
    for name, make in (("xct", xct), ("tide", tide)):
        out[name, "past"] = make().fit(SERIES, past_covariates=PAST)
        out[name, "future"] = make().fit(SERIES, future_covariates=FUTURE)
        out[name, "static"] = make().fit(static)
        out[name, "past2"] = make().fit(SERIES, past_covariates=PAST2)
        out[name, "static2"] = make().fit(SERIES.with_static_covariates(pd.DataFrame({"size": [1.0], "b": [2.0]})))
    return out


def with_value(series: TimeSeries, row: int, value: float) -> TimeSeries:
    values = series.values().copy()
    values[row, 0] = value
    return series.with_values(values)


HALF_HOURLY = TimeSeries.from_times_and_values(
    pd.date_range("2020", periods=2 * N, freq="30min"),
    np.cos(np.arange(2 * N) / 7)[:, None].astype("f4"),
    columns=["p"],
)
# (kind of model, the call's arguments, what XCTFormer's error says, what TiDE's says or None where it is silent)
CASES = {
    "nan_future": ("future", dict(future_covariates=with_value(FUTURE, N - 20, np.nan)),
                   r"future_covariates(\[0\])? contains 1 NaN value", None),
    "inf_series_with_future": ("future", dict(series=with_value(SERIES, 150, np.inf), future_covariates=FUTURE),
                               r"series(\[0\])? contains 1 infinite value", None),
    "nan_series_past": ("past", dict(series=with_value(SERIES, 150, np.nan), past_covariates=PAST),
                        r"series(\[0\])? contains 1 NaN value", None),
    "half_hourly_past": ("past", dict(past_covariates=HALF_HOURLY),
                         r"past_covariates(\[0\])? has frequency '30min' but series(\[0\])? has 'h'.*Resample",
                         "frequency .* does not match"),
    "two_past_components": ("past", dict(past_covariates=PAST.stack(PAST.with_columns_renamed("p", "q"))),
                            r"past_covariates(\[0\])? has 2 components, but XCTFormerModel was fitted with "
                            r"past_covariates of 1 component", r"Received number of components: `2`, expected: `1`"),
    "inf_static": ("static", dict(series=SERIES.with_static_covariates(pd.DataFrame({"size": [np.inf]}))),
                   r"static covariates \['size'\] of series(\[0\])? contain NaN or infinite", None),
    "other_static_columns": ("static",
                             dict(series=SERIES.with_static_covariates(pd.DataFrame({"size": [1.0], "b": [2.0]}))),
                             r"static covariates of shape \(1, 2\), but .* fitted with static covariates of shape "
                             r"\(1, 1\)", "equal number of components"),
    # issue 85: a column is read by its name
    "renamed_future": ("future", dict(future_covariates=FUTURE.with_columns_renamed("f", "g")),
                       r"future_covariates(\[0\])? has other components than fit \(\['g'\]; fit: \['f'\]; "
                       r"missing: \['f'\], not in fit: \['g'\]\)", None),
    "swapped_past": ("past2", dict(past_covariates=PAST2[["q", "p"]]),
                     r"past_covariates(\[0\])? has the components of fit in another order \(\['q', 'p'\]; fit: "
                     r"\['p', 'q'\]\)", None),
    "swapped_static": ("static2", dict(series=SERIES.with_static_covariates(pd.DataFrame({"b": [2.0], "size": [1.0]}))),
                       r"the static covariates of series(\[0\])? has the columns of fit in another order", None),
    "half_past_stamps": ("future", dict(future_covariates=FUTURE.with_times_and_values(
                             INDEX + pd.Timedelta("30min"), FUTURE.values())),
                         r"future_covariates(\[0\])? is stamped between the time steps of series(\[0\])? \(it starts "
                         r"at 2020-01-01 00:30:00", None),
}  # fmt: skip


def call(model, path: str, arguments: dict):
    arguments = {"series": SERIES, **arguments}
    if path == "predict":
        return model.predict(OUT, **arguments)
    optimised = path == "historical_forecasts"
    return model.historical_forecasts(**arguments, start=0.5, forecast_horizon=OUT, retrain=False,
                                      last_points_only=False, enable_optimization=optimised)  # fmt: skip


@pytest.mark.parametrize("path", ["predict", "historical_forecasts", "historical_forecasts_generic"])
@pytest.mark.parametrize("case", list(CASES))
def test_every_path_refuses_the_same_mistake_like_tide_or_better(fitted, case, path):
    kind, arguments, ours, tides = CASES[case]
    with pytest.raises(ValueError, match=ours):
        call(fitted["xct", kind], path, arguments)
    if tides is None:  # TiDE is silent: its forecasts are not finite, or the bad value is ignored
        return
    with pytest.raises(ValueError, match=tides):
        call(fitted["tide", kind], path, arguments)


def test_the_direct_and_darts_paths_both_run_here(fitted, monkeypatch):
    """The past-covariate model takes the direct path, the future-covariate one Darts' path: the
    cases above cover both."""
    import xct_estimators.historical_forecasts as direct

    class Taken(Exception):
        pass

    def direct_path(*args, **kwargs):
        raise Taken

    monkeypatch.setattr(direct, "direct_historical_forecasts", direct_path)
    with pytest.raises(Taken):
        call(fitted["xct", "past"], "historical_forecasts", {"past_covariates": PAST})
    assert len(call(fitted["xct", "future"], "historical_forecasts", {"future_covariates": FUTURE})) > 1


def test_missing_covariates_are_filled_from_fit_on_every_path_as_darts_does(fitted):
    model = fitted["xct", "past"]
    with_them = call(model, "historical_forecasts", {"past_covariates": PAST})
    for path in ("historical_forecasts", "historical_forecasts_generic"):
        without = call(model, path, {})
        np.testing.assert_allclose(without[-1].values(), with_them[-1].values(), rtol=1e-5, atol=1e-6)
    last = call(model, "predict", {"series": SERIES[:-OUT]})  # the covariates of fit, as with_them[-1]'s
    np.testing.assert_allclose(last.values(), with_them[-1].values(), rtol=1e-5, atol=1e-6)


def test_a_model_fitted_on_several_series_names_the_missing_covariates():
    model = xct().fit([SERIES, SERIES], past_covariates=[PAST, PAST])
    for path in ("predict", "historical_forecasts"):
        with pytest.raises(ValueError, match=r"fitted with past_covariates \(1 component\) and none were given"):
            call(model, path, {})


def test_covariates_a_model_never_saw_are_refused(fitted):
    with pytest.raises(ValueError, match="fitted without future_covariates, but future_covariates were given"):
        call(fitted["xct", "past"], "historical_forecasts", {"past_covariates": PAST, "future_covariates": FUTURE})


def test_nan_static_covariates_are_refused_at_fit_unless_ignored():
    nan_static = SERIES.with_static_covariates(pd.DataFrame({"size": [np.nan]}))
    with pytest.raises(ValueError, match=r"static covariates \['size'\] of series contain NaN.*fillna"):
        xct().fit(nan_static)
    ignoring = XCTFormerModel(**{**xct().model_params, "use_static_covariates": False}).fit(nan_static)
    assert np.isfinite(ignoring.predict(OUT).values()).all()


def test_float64_covariates_with_a_float32_series_are_cast_to_it():
    future64 = FUTURE.astype(np.float64)
    model = xct().fit(SERIES, future_covariates=future64)
    np.testing.assert_allclose(
        model.predict(OUT, future_covariates=future64).values(), model.predict(OUT, future_covariates=FUTURE).values()
    )


@pytest.mark.parametrize("n", [-1, 0, 2.5])
def test_a_number_of_steps_that_is_not_positive_is_refused(fitted, n):
    with pytest.raises(ValueError, match=f"n must be a positive integer, the number of steps to forecast; got {n}"):
        fitted["xct", "past"].predict(n, series=SERIES, past_covariates=PAST)


def test_fit_refuses_a_list_with_and_without_static_covariates_and_shifted_stamps():
    static = SERIES.with_static_covariates(pd.DataFrame({"size": [1.0]}))
    with pytest.raises(ValueError, match=r"series\[1\] has no static covariates but series\[0\] has static "
                                         r"covariates \['size'\]"):  # fmt: skip
        xct().fit([static, SERIES])
    shifted = FUTURE.with_times_and_values(INDEX + pd.Timedelta("30min"), FUTURE.values())
    with pytest.raises(ValueError, match=r"future_covariates is stamped between the time steps of series"):
        xct().fit(SERIES, future_covariates=shifted)
