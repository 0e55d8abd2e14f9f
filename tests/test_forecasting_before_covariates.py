"""Without future or static covariates, XCTFormerModel trains and forecasts exactly as the code
before them did (tests/data/before_covariates/make.py made the forecasts, per CPU vector unit where
their rounding differs)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

HERE = Path(__file__).parent / "data" / "before_covariates"


@pytest.mark.parametrize("past_covariates", [False, True])
def test_training_and_forecasts_are_those_of_the_code_before_covariates(past_covariates):
    spec = importlib.util.spec_from_file_location("make_before_covariates", HERE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    kind = "past" if past_covariates else "plain"
    own = HERE / f"forecast_{kind}_{torch.backends.cpu.get_cpu_capability()}.npy"  # this vector unit's rounding
    expected = np.load(own if own.exists() else HERE / f"forecast_{kind}.npy")
    np.testing.assert_allclose(make.trained(past_covariates), expected, rtol=0, atol=1e-6)
