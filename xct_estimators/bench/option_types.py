"""Value types of ``xct-bench``'s options: each parses one option's text or says, in argparse's
words, what it expected."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Optional

from ..nn.hyperparameters import ARCHITECTURE_PARAMS, architecture_type


def unique(items: list) -> list:
    """``items`` without repeats, in their order: ``--horizons 24,24`` is one run, not two."""
    return list(dict.fromkeys(items))


def items(text: str) -> list[str]:
    """The entries of a comma-separated list, stripped; an empty entry (``a,,b``, ``a,``) is refused,
    so a stray comma never drops a run unseen."""
    parts = [part.strip() for part in text.split(",")]
    if "" in parts:
        raise argparse.ArgumentTypeError(f"empty entry in {text!r}: remove the extra comma")
    return parts


def csv(kind, expected: str = "a comma-separated list"):
    """A parser of comma-separated ``kind`` values (an entry's own ``ArgumentTypeError`` names it)."""

    def parse(text: str):
        try:
            return unique([kind(item) for item in items(text)])
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None

    return parse


def positive(kind, what: str):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive {what}, got {text!r}")
        return value

    return parse


def csv_of(choices):
    def parse(text: str):
        picked = csv(str)(text)
        if any(item not in choices for item in picked):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(choices)}, got {text!r}")
        return picked

    return parse


#: Network settings ``--arch`` may override, with their types.
ARCH_KEYS = {name: architecture_type(name) for name in ARCHITECTURE_PARAMS}


def arch(text: str) -> dict:
    out = {}
    for item in csv(str)(text):
        key, _, value = item.partition("=")
        if key not in ARCH_KEYS or not value:
            raise argparse.ArgumentTypeError(
                f"expected KEY=VALUE pairs with KEY one of {', '.join(ARCH_KEYS)}, got {item!r}"
            )
        try:
            out[key] = ARCH_KEYS[key](value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{key} expects a number, got {value!r}") from None
    return out


def arch_text(values: dict) -> str:
    """``--arch``'s value as it is typed."""
    return ",".join(f"{key}={value}" for key, value in values.items())


positive_int = positive(int, "integer")


csv_ints = csv(int, "comma-separated integers")
csv_positive_ints = csv(positive_int)


def mask_rate(text: str) -> float:
    """A share of points to hide: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:  # nan fails too
        raise argparse.ArgumentTypeError(f"expected a mask rate between 0 and 1 (exclusive), got {text!r}")
    return value


mask_rates = csv(mask_rate)
positive_float = positive(float, "number")


def devices(text: str) -> str:
    """Lightning's ``devices`` as text: ``auto``, a count, ``-1`` (all), or indices such as ``0,1``."""
    text = text.strip()
    indices = [part.strip() for part in text.split(",") if part.strip()]
    count = text.isdigit() and int(text) > 0
    listed = "," in text and indices and all(index.isdigit() for index in indices)
    if text in ("auto", "-1") or count or listed:
        return text
    raise argparse.ArgumentTypeError(
        f"expected 'auto', a number of devices (1, 2, ...), -1 for all, or device indices such as 0,1; got {text!r}"
    )


#: The command that writes a results page.
PAGE_MARK = "xct-bench report --markdown"
#: How every results page opens, up to its rebuild command: an existing file is a page exactly
#: when it starts with this and the command (``results_page.HEADER`` goes on from here).
PAGE_OPENING = """# Results

Every number below comes from a record in the folders this page names (one JSON line per run: its
settings, metrics, commit, device, library versions and command). This page is generated from
them; do not edit it by hand. Rebuild it with:

    """
#: How a results folder's ``report.md`` opens (``xct-bench report --output``'s own file).
REPORT_OPENING = "# xct-bench results\n\n"


def _what_else(path: Path, opening: str) -> Optional[str]:
    """What ``path`` is when it is not a results page ``report --markdown`` wrote, else ``None``."""
    if opening.startswith(PAGE_OPENING + PAGE_MARK + " "):
        return None
    if path.name == "results.jsonl":
        return "a file of run records"
    if opening.startswith(REPORT_OPENING):
        return "the report of a results folder (xct-bench rewrites it there after every run)"
    return "not a results page xct-bench wrote (one opens with its generated header)"


def markdown_page(text: str) -> Path:
    """Where ``report --markdown`` may write: a ``.md`` file that is new or a page it wrote before,
    never a folder or a file of records (the page would replace them)."""
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give the page's file name, e.g. {path / 'results.md'}")
    if path.exists():
        try:
            opening = path.read_text(errors="replace")[:4096] if path.is_file() else ""
        except OSError as error:
            raise argparse.ArgumentTypeError(f"cannot read {text} ({error.strerror})") from None
        what = _what_else(path, opening)
        if what:
            raise argparse.ArgumentTypeError(
                f"{text} is {what}, and the page would overwrite it: give a new file name ending in .md "
                "(remove an old file first if you mean to replace it)"
            )
    if path.suffix.lower() not in (".md", ".markdown"):
        raise argparse.ArgumentTypeError(f"{text} is not a Markdown file name: give one ending in .md")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {path.parent} does not exist: create it first")
    if not os.access(path.parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"folder {path.parent} is not writable: give a page path in one you can write")
    return path
