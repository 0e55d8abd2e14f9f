"""Without future or static covariates, XCTFormerModel trains and forecasts exactly as the code
before them did (tests/data/before_covariates/make.py made the forecasts, per CPU capability and
vendor where their rounding differs)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent / "data" / "before_covariates"


@pytest.mark.parametrize("past_covariates", [False, True])
def test_training_and_forecasts_are_those_of_the_code_before_covariates(past_covariates):
    spec = importlib.util.spec_from_file_location("make_before_covariates", HERE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    kind = "past" if past_covariates else "plain"
    expected = make.reference(kind)  # made on a machine whose kernels round as this one's
    np.testing.assert_allclose(
        make.trained(past_covariates), np.load(expected), rtol=0, atol=1e-6, err_msg=f"against {expected.name}"
    )
