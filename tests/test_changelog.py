"""CHANGELOG.md is Keep a Changelog, written for users: an ``[Unreleased]`` section, then one
section per release (the current version first, with its date), the standard subsections only,
one-line bullets and no measured numbers."""

import re
from pathlib import Path

from test_docs_numbers import measured_numbers

import xct_estimators

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def sections(text: str) -> list[tuple[str, str]]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def test_the_changelog_follows_keep_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text()
    found = sections(text)
    assert found[0][0] == "[Unreleased]"
    assert re.fullmatch(rf"\[{re.escape(xct_estimators.__version__)}\] - \d{{4}}-\d\d-\d\d", found[1][0])
    for title, body in found:
        assert set(re.findall(r"^### (.+)$", body, flags=re.M)) <= KINDS, title


def test_the_first_release_is_told_in_a_few_user_bullets():
    text = (ROOT / "CHANGELOG.md").read_text()
    release = sections(text)[1][1]
    bullets = re.findall(r"^- ", release, flags=re.M)
    assert 15 <= len(bullets) <= 30
    assert measured_numbers(text) == []
