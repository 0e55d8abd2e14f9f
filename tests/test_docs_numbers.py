"""No measured number is typed by hand into the README or the user docs: measurements live in
records, and the docs show them only inside generated blocks (``benchmarks/docs_tables.py``) or on
the generated results page (``docs/results.md``)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GENERATED = re.compile(r"<!-- generated: [\w-]+ -->.*?<!-- end generated -->", re.S)
CODE = re.compile(r"^```.*?^```", re.S | re.M)
#: What a measurement looks like in prose: a metric with three or more decimals (0.390), a time
#: in milliseconds or a speed-up factor, a relative gap (+1.3 %), a wall time in seconds.
MEASURED = re.compile(
    r"\b\d\.\d{3,}\b"
    r"|\b\d+(?:\.\d+)?\s?ms\b"
    r"|\b\d+(?:\.\d+)?x (?:faster|slower|speed-up)|\b\d+\.\d+x\b"
    r"|[+-]\d+(?:\.\d+)?\s?%"
    r"|\b\d+(?:\.\d+)? s (?:of|per|a|to)\b"
)
#: Numbers that are settings, not measurements: mask rates, the synthetic data's frequencies, SMD's alpha.
SETTINGS = {"0.125", "0.375", "0.002", "0.005"}


def measured_numbers(text: str) -> list[str]:
    prose = CODE.sub("", GENERATED.sub("", text))
    return [m.group(0) for m in MEASURED.finditer(prose) if m.group(0) not in SETTINGS]


@pytest.mark.parametrize("path", [p for p in DOCS if p.name != "results.md"], ids=lambda p: p.name)
def test_no_measured_number_is_typed_by_hand(path):
    assert measured_numbers(path.read_text()) == []


def test_the_check_finds_measurements():
    assert measured_numbers("MSE 0.390 vs 0.389, 23.3 ms, 3.3x faster, +1.3 % gap, 205 s of training") == [
        "0.390", "0.389", "23.3 ms", "3.3x faster", "+1.3 %", "205 s of"
    ]  # fmt: skip
    assert measured_numbers("the step is 0.43-0.75x of plain") == ["0.75x"]
    assert measured_numbers("mask rates 0.125 and 0.375\n<!-- generated: x -->\n0.390\n<!-- end generated -->") == []
