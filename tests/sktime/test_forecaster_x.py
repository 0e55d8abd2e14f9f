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
