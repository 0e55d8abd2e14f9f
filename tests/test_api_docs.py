"""The API reference (``docs/api``): Sphinx builds it from the docstrings with warnings as errors,
so a broken docstring fails here, and it has a page for every public estimator and function."""

import re
import shutil
from pathlib import Path

import pytest

API = Path(__file__).resolve().parents[1] / "docs" / "api"


def test_every_public_name_has_a_page_in_the_reference():
    import xct_estimators
    import xct_estimators.explain as explain
    import xct_estimators.sktime as sktime_estimators

    listed = set(re.findall(r"^   (\w+)$", (API / "index.rst").read_text(), flags=re.M))
    public = set(xct_estimators.__all__) | set(sktime_estimators.__all__)
    public |= {"list_presets", "get_preset", "XCTFormerConfig", "XCTFormerNet", "search", "best_params"}
    public |= {
        name for name, value in vars(explain).items() if callable(value) and value.__module__ == explain.__name__
    }
    public -= {name for name in public if name.startswith("_")}
    assert public <= listed, f"docs/api/index.rst lacks {sorted(public - listed)}"


def test_the_reference_builds_without_a_warning(tmp_path):
    build = pytest.importorskip("sphinx.cmd.build", reason="the docs extra: pip install 'xct-estimators[docs]'")
    pytest.importorskip("numpydoc", reason="the docs extra: pip install 'xct-estimators[docs]'")
    source = tmp_path / "api"
    shutil.copytree(API, source, ignore=shutil.ignore_patterns("_build", "generated"))
    status = build.build_main(["-W", "--keep-going", "-q", "-b", "html", str(source), str(tmp_path / "html")])
    assert status == 0, "Sphinx warned: run python -m sphinx -W -b html docs/api docs/api/_build and fix the docstring"
    pages = {p.stem for p in (tmp_path / "html" / "generated").glob("*.html")}
    assert {
        "xct_estimators.XCTFormerModel",
        "xct_estimators.XCTFormerForecaster",
        "xct_estimators.tune.search",
    } <= pages
