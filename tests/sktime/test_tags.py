"""The sktime tags that users and sktime's registry read: dependencies and people."""

import json
import re
import subprocess
import sys

import pytest
from sktime.utils.dependencies import _check_estimator_deps

from xct_estimators import XCTFormerAnomalyDetector, XCTFormerForecaster, XCTFormerImputer

ESTIMATORS = [XCTFormerImputer, XCTFormerAnomalyDetector, XCTFormerForecaster]
#: Import name -> distribution name of the soft dependencies an estimator module may pull in.
SOFT = {"darts": "darts", "torch": "torch", "pytorch_lightning": "pytorch-lightning", "pyod": "pyod"}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_python_dependencies_list_every_soft_dependency_used_in_fit(cls):
    fit = "est.fit(data, fh=[1, 2])" if cls is XCTFormerForecaster else "est.fit(data)"
    code = (
        f"import sys, json, numpy as np, pandas as pd; from {cls.__module__} import {cls.__name__} as C; "
        "data = pd.DataFrame(np.random.default_rng(0).normal(size=(200, 2)), columns=['a', 'b']); "
        f"est = C(**C.get_test_params()[0]); {fit}; "
        f"print(json.dumps([m for m in {list(SOFT)!r} if m in sys.modules]))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported = json.loads(run.stdout)
    declared = cls.get_class_tag("python_dependencies")
    # an entry is a requirement ("torch>=2.4") or a list of alternatives (["u8darts>=0.48", "darts>=0.48"])
    entries = [entry if isinstance(entry, list) else [entry] for entry in declared]
    names = [[re.split(r"[<>=!~ ]", requirement)[0] for requirement in entry] for entry in entries]
    assert len(names) == len(imported)
    assert all(any(SOFT[m] in alternatives for alternatives in names) for m in imported)
    assert _check_estimator_deps(cls, severity="none")  # sktime can resolve every name


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_authors_and_maintainers_are_ours_not_sktimes_placeholders(cls):
    for tag in ("authors", "maintainers"):
        assert cls.get_class_tag(tag) == ["xct-estimators developers"]
