"""The package's license and citation: one license, named the same way everywhere; the paper cited."""

import importlib.metadata
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_license_is_an_spdx_expression_with_its_file():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^license = "MIT"$', pyproject, flags=re.M)
    assert re.search(r'^license-files = \["LICENSE"\]$', pyproject, flags=re.M)
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert importlib.metadata.metadata("xct-estimators")["License-Expression"] == "MIT"


def test_the_citation_names_the_paper():
    yaml = pytest.importorskip("yaml")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    paper = citation["preferred-citation"]
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "MIT"
    assert paper["title"].startswith("XCTFormer: Leveraging Cross-Channel and Cross-Time Dependencies")
    assert [a["family-names"] for a in paper["authors"]] == ["Zexer", "Azencot"]
    version = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), flags=re.M).group(1)
    assert citation["version"] == version
