"""The torch floor: one value, refused with the fix below it, the same in pyproject.toml."""

import re
from pathlib import Path

import pytest

from xct_estimators.nn.requirements import MIN_TORCH_TEXT, check_torch


@pytest.mark.parametrize("version", ["2.3.1", "2.3.0+cu121", "1.13.1"])
def test_an_older_torch_is_refused_with_the_fix(version):
    with pytest.raises(ImportError, match=rf"torch {re.escape(version)}\. .*pip install -U 'torch>=2\.4'"):
        check_torch(version)


@pytest.mark.parametrize("version", ["2.4.0", "2.13.0+cpu", "2.10.0.dev20260101", "3.0.0"])
def test_supported_versions_pass(version):
    check_torch(version)


def test_pyproject_requires_the_same_floor():
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()  # (tomllib: Python 3.11+)
    (torch,) = re.findall(r'^\s*"torch([^"]*)",', pyproject, flags=re.M)
    assert torch.startswith(f">={MIN_TORCH_TEXT},") or torch == f">={MIN_TORCH_TEXT}"
