"""CHANGELOG.md is Keep a Changelog, written for users: an ``[Unreleased]`` section, then one
section per release (the current version first, with its date), the standard subsections only,
short bullets and no measured numbers."""

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


def test_each_unreleased_entry_says_its_change_in_two_lines_at_most():
    unreleased = sections((ROOT / "CHANGELOG.md").read_text())[0][1]
    entries = re.findall(r"^- .*\n(?:  .*\n)*", unreleased, flags=re.M)
    assert entries
    long = [entry.splitlines()[0] for entry in entries if entry.count("\n") > 2]
    assert long == [], "a CHANGELOG entry says what changed for a user in one or two lines"
