"""Every Python example in README.md and docs/*.md runs, in order, one namespace per page, in a
fresh folder. A block that cannot run here (it needs a GPU, a download, or trains for minutes)
is marked on the line before it with ``<!-- not run: the reason -->``, which the page shows
to nobody and this test reads."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:^<!-- not run: (?P<reason>[^>]+) -->\n)?^```python\n(?P<code>.*?)^```", re.S | re.M)


def examples(page: Path) -> list[tuple[int, str, str]]:
    """(line, code, reason not run or "") of every Python block of ``page``."""
    text = page.read_text()
    return [
        (text[: m.start("code")].count("\n") + 1, m.group("code"), m.group("reason") or "")
        for m in BLOCK.finditer(text)
    ]


def test_every_skipped_example_says_why():
    for page in PAGES:
        for line, _, reason in examples(page):
            assert reason == "" or len(reason.split()) >= 3, f"{page.name}:{line}: say why it does not run"


def offline_darts_datasets(folder: Path, monkeypatch) -> None:
    """Darts' ETT loaders read the benchmark data's copies (the same files, so Darts' checksums
    pass) where Darts has not downloaded them yet; without either the page is skipped."""
    from conftest import SHARED_DATA
    from darts.datasets.dataset_loaders import DatasetLoader

    cached = Path(DatasetLoader._DEFAULT_DIRECTORY)
    names = ("ETTh1.csv", "ETTh2.csv", "ETTm1.csv", "ETTm2.csv")
    if all((cached / name).is_file() for name in names):
        return
    if not (SHARED_DATA / "ETT-small").is_dir():
        pytest.skip(f"the page loads a Darts dataset: neither in {cached} nor in {SHARED_DATA}, and no download here")
    folder.mkdir()
    for name in names:
        (folder / name).symlink_to(SHARED_DATA / "ETT-small" / name)
    monkeypatch.setattr(DatasetLoader, "_DEFAULT_DIRECTORY", folder)


@pytest.mark.parametrize("page", [p for p in PAGES if any(not r for _, _, r in examples(p))], ids=lambda p: p.name)
def test_the_examples_of_a_page_run(page, tmp_path, monkeypatch):
    import logging
    import warnings

    monkeypatch.chdir(tmp_path)
    if any("darts.datasets" in code for _, code, reason in examples(page) if not reason):
        offline_darts_datasets(tmp_path / "darts-datasets", monkeypatch)
    lightning = logging.getLogger("pytorch_lightning")
    monkeypatch.setattr(lightning, "level", lightning.level)  # a page may quiet it: undone after
    namespace: dict = {"__name__": "__docs__"}
    with warnings.catch_warnings():  # ... and its warnings filters too
        for line, code, reason in examples(page):
            if not reason:
                exec(compile(code, f"{page.name}:{line}", "exec"), namespace)


def test_the_readme_quickstart_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    for command in ("pip install torch==2.13.0", "pip install -e '.[dev]'", "python -m pytest -q"):
        assert command in readme
        assert command.replace("python ", "python3 ").replace("pip install", "python3 -m pip install --quiet") in ci
    assert "pip install -e . && xct-bench\n" in readme


def test_the_readme_reads_as_a_package_page():
    """PyPI shows the README without the repository: a relative link there leads nowhere."""
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert [link for link in links if not link.startswith(("https://", "http://", "#"))] == []
    assert "pip install xct-estimators" in readme
