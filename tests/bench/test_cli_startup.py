"""`xct-bench --help` and argument errors answer before torch, Darts, Lightning or sktime load:
the parser reads plain data (``bench.catalog``, the presets), the runners import the rest.
``benchmarks/cli_startup.py`` prints how long they take."""

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "darts", "pytorch_lightning", "lightning", "sktime", "sklearn", "pandas")
PROBE = """
import json, sys
from xct_estimators.bench.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(json.dumps({"code": code, "loaded": sorted(m for m in %r if m in sys.modules)}))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["forecast", "--help"],
        ["tune", "--help"],
        ["impute", "--mask-rates", "1.5"],
        ["forecast", "--models", "prophet"],
        ["forecast", "--devices", "bogus"],
        ["detect", "--protocol", "nope"],
        ["report", "--output", "/nonexistent/xct-bench-results"],
        ["tune", "--task", "forecast", "--train-stride", "2"],  # refused by option combinations alone
        ["tune", "--task", "impute", "--space", "/nonexistent/space.json"],
        ["forecast", "--ray-address", "auto"],
        ["report", "--markdown", "/nonexistent/page.md"],
    ],
)
def test_help_and_argument_errors_load_no_heavy_library(argv):
    probe = subprocess.run([sys.executable, "-c", PROBE % (HEAVY,), *argv], capture_output=True, text=True, check=True)
    result = json.loads(probe.stdout.strip().splitlines()[-1])
    assert result["code"] in (0, 2) and result["loaded"] == [], result
