"""sktime's ``X`` is read by time, as given, or refused (issue 64, item 3): a row of the horizon
missing, an index of another kind or year, or X sampled more often than y is named with its fix."""

import numpy as np
import pandas as pd
import pytest

from xct_estimators import XCTFormerForecaster

PARAMS = XCTFormerForecaster.get_test_params()[0]  # output_chunk_length: the largest fh step in fit, 3
T = np.arange(200)
Y = pd.DataFrame({"a": np.sin(T[:160] / 5)}, index=pd.date_range("2020", periods=160, freq="h"))
X = pd.DataFrame({"x": np.cos(T / 7)}, index=pd.date_range("2020", periods=200, freq="h"))
FUTURE = X.iloc[160:]


@pytest.fixture(scope="module")
def fitted():
    return XCTFormerForecaster(**PARAMS).fit(Y, X=X.iloc[:160], fh=[1, 2, 3])


def shifted(frame, offset):
    moved = frame.copy()
    moved.index = moved.index + offset
    return moved


HALF_HOURLY = pd.DataFrame(
    {"x": np.cos(np.arange(80) / 3)}, index=pd.date_range("2020-01-07 16:00", periods=80, freq="30min")
)
CASES = {
    "beyond the chunk, half covered": (list(range(1, 11)), FUTURE.iloc[:5],
                                       r"5 of the forecast horizon's 10 time points have no row in X"),
    "a row missing in the middle": ([1, 2, 3], FUTURE.drop(FUTURE.index[1]),
                                    r"1 of the forecast horizon's 3 time points .*2020-01-07 17:00:00"),
    "a year later": ([1, 2, 3], shifted(FUTURE, pd.DateOffset(years=1)), r"X spans 2021-01-07 16:00:00"),
    "a RangeIndex": ([1, 2, 3], FUTURE.reset_index(drop=True),
                     r"X has an integer index but the forecast horizon has a DatetimeIndex"),
    "every 30 minutes": ([1, 2, 3], HALF_HOURLY, r"X has 2 row\(s\) between .* Resample X to y's frequency"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_x_that_does_not_fit_the_horizon_is_refused(fitted, case):
    fh, x, message = CASES[case]
    with pytest.raises(ValueError, match=message):
        fitted.predict(fh=fh, X=x)


def test_x_is_read_by_time_not_position(fitted):
    """Rows before the cutoff, or past the horizon, change nothing; the horizon's rows do."""
    given = fitted.predict(fh=[1, 2, 3], X=FUTURE)
    pd.testing.assert_frame_equal(fitted.predict(fh=[1, 2, 3], X=X), given)
    other = FUTURE.copy()
    other.iloc[:3] += 5.0
    assert not np.allclose(fitted.predict(fh=[1, 2, 3], X=other).to_numpy(), given.to_numpy())


@pytest.mark.parametrize(
    "x, message",
    [
        (pd.DataFrame({"x": np.cos(np.arange(320) / 7)}, index=pd.date_range("2020", periods=320, freq="30min")),
         r"X has 159 row\(s\) between y's time points"),
        (X.reset_index(drop=True), "X has an integer index but y has a DatetimeIndex"),
        (shifted(X, pd.DateOffset(years=1)), r"X does not cover y: 160 of y's 160 time points"),
    ],
)  # fmt: skip
def test_fit_refuses_x_that_does_not_fit_y(x, message):
    with pytest.raises(ValueError, match=message):
        XCTFormerForecaster(**PARAMS).fit(Y, X=x, fh=[1, 2, 3])


def test_fit_reads_x_at_ys_time_points_when_x_is_longer():
    """X starting a day before y trains on the rows of y's own time points, not on X's first rows."""
    day_before = shifted(X.iloc[:24], -pd.Timedelta("1D")) * 0 + 9.0
    longer = XCTFormerForecaster(**PARAMS).fit(Y, X=pd.concat([day_before, X.iloc[:160]]), fh=[1, 2, 3])
    exact = XCTFormerForecaster(**PARAMS).fit(Y, X=X.iloc[:160], fh=[1, 2, 3])
    pd.testing.assert_frame_equal(longer.X_context_, exact.X_context_)
    pd.testing.assert_frame_equal(longer.predict(X=FUTURE), exact.predict(X=FUTURE))


def test_update_of_a_panel_checks_x_per_instance():
    """Rows of X past one instance's end lie between other instances' time points in a MultiIndex;
    each instance is checked on its own, so they are not mistaken for rows sampled in between."""
    hours = pd.date_range("2020", periods=200, freq="h")

    def panel(frame, stop, extra=0):
        rows = {"a": stop + extra, "b": stop}
        parts = {key: frame.iloc[:n].set_axis(hours[:n]) for key, n in rows.items()}
        return pd.concat(parts, names=["site", "time"])

    y = pd.DataFrame({"v": np.sin(T / 5)})
    x = pd.DataFrame({"x": np.cos(T / 7)})
    fitted = XCTFormerForecaster(**PARAMS).fit(panel(y, 150), X=panel(x, 150), fh=[1, 2, 3])
    fitted.update(panel(y, 160), X=panel(x, 160, extra=5), update_params=False)
    with pytest.raises(ValueError, match=r"X does not cover y's instance \('a',\): 10 of .* 170 time points"):
        fitted.update(panel(y, 170), X=panel(x, 160), update_params=False)


# -- issue 85: columns by name, update checked as fit is, no X is not a guess -------------------
X2 = pd.DataFrame({"x": np.cos(T / 7), "z": np.sin(T / 3)}, index=X.index)


@pytest.fixture(scope="module")
def fitted_two():
    return XCTFormerForecaster(**PARAMS).fit(Y, X=X2.iloc[:160], fh=[1, 2, 3])


def test_x_columns_are_read_by_name(fitted_two):
    given = fitted_two.predict(fh=[1, 2, 3], X=X2.iloc[160:])
    pd.testing.assert_frame_equal(fitted_two.predict(fh=[1, 2, 3], X=X2.iloc[160:][["z", "x"]]), given)
    with pytest.raises(ValueError, match=r"X has columns \['x', 'w'\], but XCTFormerForecaster was fitted on "
                                         r"\['x', 'z'\] \(missing: \['z'\], unexpected: \['w'\]\)"):  # fmt: skip
        fitted_two.predict(fh=[1, 2, 3], X=X2.iloc[160:].rename(columns={"z": "w"}))


def test_predict_without_x_is_refused_when_fit_had_x(fitted_two):
    with pytest.raises(ValueError, match=r"fitted with X \(columns \['x', 'z'\]\).* pass X with a row for every step"):
        fitted_two.predict(fh=[1, 2, 3])


def test_update_checks_what_fit_checks():
    """A hole between the context and the new rows, a renamed X column or no X at all is refused at
    update, before any forecast."""
    f = XCTFormerForecaster(**PARAMS).fit(Y.iloc[:150], X=X2.iloc[:150], fh=[1, 2, 3])
    later = pd.DataFrame({"a": np.sin(T[155:160] / 5)}, index=X.index[155:160])
    with pytest.raises(ValueError, match=r"y \(with the context kept from before update\) skips time points"):
        f.update(later, X=X2.iloc[155:160], update_params=False)
    following = pd.DataFrame({"a": np.sin(T[150:155] / 5)}, index=X.index[150:155])
    with pytest.raises(ValueError, match=r"missing: \['z'\], unexpected: \['w'\]"):
        f.update(following, X=X2.iloc[150:155].rename(columns={"z": "w"}), update_params=False)
    with pytest.raises(ValueError, match=r"fitted with X \(columns \['x', 'z'\]\): pass X with a row at every time"):
        f.update(following, update_params=False)
    f.update(following, X=X2.iloc[150:155][["z", "x"]], update_params=False)  # by name: accepted
    assert f.X_context_.index[-1] == X.index[154] and list(f.X_context_.columns) == ["x", "z"]


def test_quantiles_between_the_trained_levels_are_interpolated_and_beyond_them_refused():
    """Levels outside the trained ones are refused, not clamped; levels between two trained ones
    lie linearly between them; the forecast and the trained levels stay what they were."""
    f = XCTFormerForecaster(**PARAMS, quantiles=[0.1, 0.5, 0.9]).fit(Y, fh=[1, 2, 3])
    trained = f.predict_quantiles(alpha=[0.1, 0.5, 0.9])
    between = f.predict_quantiles(alpha=[0.3, 0.5])
    np.testing.assert_allclose(between[("a", 0.3)], (trained[("a", 0.1)] + trained[("a", 0.5)]) / 2, rtol=1e-6)
    pd.testing.assert_series_equal(between[("a", 0.5)], trained[("a", 0.5)])
    np.testing.assert_allclose(f.predict()["a"], trained[("a", 0.5)], rtol=1e-6)
    with pytest.raises(ValueError, match=r"quantile level\(s\) \[0.01, 0.05\] lie outside the trained levels \[0.1, "
                                         r"0.5, 0.9\] \(predict_interval: coverage up to 0.8\)"):  # fmt: skip
        f.predict_quantiles(alpha=[0.01, 0.05, 0.9])
    with pytest.raises(ValueError, match="lie outside the trained levels"):
        f.predict_interval(coverage=0.99)
    assert f.predict_interval(coverage=0.5).shape == (3, 2)


def test_x_given_to_a_forecaster_fitted_without_it_is_refused():
    f = XCTFormerForecaster(**PARAMS).fit(Y, fh=[1, 2, 3])
    with pytest.raises(ValueError, match=r"fitted without X, so the X given \(columns \['x'\]\) would not be read"):
        f.predict(X=FUTURE)


def test_integer_column_names_match_their_text():
    fitted = XCTFormerForecaster(**PARAMS).fit(Y, X=X.iloc[:160].set_axis([0], axis=1), fh=[1, 2, 3])
    given = fitted.predict(X=FUTURE.set_axis([0], axis=1))
    pd.testing.assert_frame_equal(fitted.predict(X=FUTURE.set_axis(["0"], axis=1)), given)
