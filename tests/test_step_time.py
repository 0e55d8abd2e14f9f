"""``python -m benchmarks.step_time``: the benchmark runs end to end on the smallest preset and its
floor really removes the elementwise chain."""

import json
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def test_one_network_with_the_floor_and_compiled(tmp_path):
    out = tmp_path / "steps.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.step_time", "--networks", "ETTh1", "--repeats", "1", "--floor", "--compile",
         "--json", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "floor (no elementwise chain)" in done.stdout
    report = json.loads(out.read_text())
    assert report["threads"] == 2 and report["repeats"] == 1 and report["torch"] == torch.__version__
    assert report["fused_path"] == "C++ kernel" or report["fused_path"].startswith("PyTorch operations (")
    (row,) = report["rows"]
    assert row["network"] == "ETTh1" and row["batch"] == row["predict_batch"] == 32 and row["tokens"] == 84
    assert set(row["train_ms"]) == {"plain", "fused", "floor", "compiled"} and min(row["train_ms"].values()) > 0
    assert "compiled (fused + torch.compile)" in done.stdout and report["provenance"]["command"].startswith(
        "python -m benchmarks.step_time --networks ETTh1"
    )
    assert row["peak_mib"]["plain"] > 0 and row["peak_mib"]["fused"] > 0


def test_floor_is_the_two_products_alone():
    from benchmarks.measure import cpu_steps
    from xct_estimators.nn import ops

    q, k, v = (torch.randn(2, 1, 5, 3) for _ in range(3))
    seen = []
    step = cpu_steps.without_chain(lambda: seen.append(ops.fused_crab(q, k, v, torch.randn(1, 5, 5), p=0.5)))
    step()
    torch.testing.assert_close(seen[0], (q @ k.transpose(-2, -1)) @ v)
    assert ops.fused_crab is not cpu_steps.products_only  # restored afterwards
