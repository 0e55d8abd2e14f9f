"""sktime's own estimator contract for the XCTFormer estimators."""

from sktime.utils.estimator_checks import parametrize_with_checks

from xct_estimators import XCTFormerAnomalyDetector, XCTFormerForecaster, XCTFormerImputer


@parametrize_with_checks([XCTFormerImputer, XCTFormerAnomalyDetector, XCTFormerForecaster])
def test_sktime_compatible_estimator(obj, test_name):
    from sktime.utils.estimator_checks import check_estimator

    check_estimator(obj, tests_to_run=test_name, raise_exceptions=True)
