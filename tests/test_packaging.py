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


#: What the sdist must hold beyond the package: its tests and everything they read or run.
SDIST_FOLDERS = ("tests", "docs", "benchmarks", ".ci")
SDIST_FILES = ("README.md", "CHANGELOG.md", "CITATION.cff", "LICENSE", "pyproject.toml", "MANIFEST.in")
NOT_SHIPPED = ("__pycache__", ".pytest_cache", "_build", "generated")


def _source_files() -> set[str]:
    found = set(SDIST_FILES)
    for folder in SDIST_FOLDERS:
        for path in (ROOT / folder).rglob("*"):
            relative = path.relative_to(ROOT)
            if path.is_file() and not set(relative.parts) & set(NOT_SHIPPED):
                found.add(relative.as_posix())
    return found


def test_the_sdist_and_the_wheel_hold_what_users_and_tests_need(tmp_path):
    import shutil
    import subprocess
    import sys
    import tarfile
    import zipfile

    pytest.importorskip("build", reason="the dev extra: pip install -e '.[dev]'")
    pytest.importorskip("twine", reason="the dev extra: pip install -e '.[dev]'")
    setuptools = importlib.metadata.version("setuptools")
    if int(setuptools.split(".")[0]) < 77:  # the build backend pyproject names; the dev extra brings it
        pytest.skip(f"setuptools {setuptools} cannot build this package (>=77): pip install -e '.[dev]'")
    # a clean copy: setuptools adds every file an old egg-info lists, whatever MANIFEST.in says
    source = tmp_path / "source"
    shutil.copytree(
        ROOT, source, ignore=shutil.ignore_patterns(".git", "*.egg-info", ".*cache", "build", "dist", *NOT_SHIPPED)
    )
    run = dict(cwd=source, capture_output=True, text=True)
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), "."], **run)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "deprecat" not in (built.stdout + built.stderr).lower()
    (sdist,) = tmp_path.glob("*.tar.gz")
    (wheel,) = tmp_path.glob("*.whl")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert _source_files() - in_sdist == set(), "MANIFEST.in leaves these out of the sdist"
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        metadata = archive.read(next(n for n in in_wheel if n.endswith(".dist-info/METADATA"))).decode()
    assert "xct_estimators/nn/csrc/crab.cpp" in in_wheel  # the kernels' sources, built on first use
    assert "xct_estimators/nn/csrc/pairwise.cpp" in in_wheel
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in in_wheel)
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in in_wheel)
    assert "License-Expression: MIT" in metadata and "Project-URL: Paper" in metadata
    assert "Classifier: Programming Language :: Python :: 3" in metadata
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], **run)
    assert checked.returncode == 0, checked.stdout + checked.stderr
