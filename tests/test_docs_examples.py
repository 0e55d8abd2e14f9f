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


@pytest.mark.parametrize("page", [p for p in PAGES if any(not r for _, _, r in examples(p))], ids=lambda p: p.name)
def test_the_examples_of_a_page_run(page, tmp_path, monkeypatch):
    import logging
    import warnings

    monkeypatch.chdir(tmp_path)
    lightning = logging.getLogger("pytorch_lightning")
    monkeypatch.setattr(lightning, "level", lightning.level)  # a page may quiet it: undone after
    namespace: dict = {"__name__": "__docs__"}
    with warnings.catch_warnings():  # ... and its warnings filters too
        for line, code, reason in examples(page):
            if not reason:
                exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
