"""``benchmarks/gpu_check.py --smoke``: the GPU script's every section runs on CPU at tiny sizes."""

import json
import math

import pytest

from benchmarks.measure import networks
from benchmarks.measure.converged import CONVERGED, CONVERGED_RUNS


@pytest.fixture
def gpu_check(benchmark_script):
    return benchmark_script("gpu_check")


def test_smoke_run_writes_both_reports(gpu_check, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert gpu_check.main(["--smoke", "--output", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["smoke"] and report["device"] == "cpu"
    assert report["environment"]["torch"].startswith("2.") and "darts" in report["environment"]
    from xct_estimators.bench.provenance import SOURCE_ROOT, git_state

    commit, _ = git_state()  # records name their code: the commit, or the release outside a checkout (an sdist)
    assert report["environment"]["git commit"].split("-")[0] == commit
    assert len(commit) == 40 if (SOURCE_ROOT / ".git").exists() else commit == "v0.1.0"
    assert report["environment"]["command"] == f"-m benchmarks.gpu_check --smoke --output {tmp_path / 'out'}"
    assert [r["preset"] for r in report["parity"]] == list(networks.PARITY) and all(r["ok"] for r in report["parity"])
    from benchmarks.measure.kernel import call_patterns

    assert [r["case"] for r in report["kernel_correctness"]] == [  # bf16 on a GPU only (the interpreter's is wrong)
        f"{case[0]}, {precision}" for case in call_patterns(smoke=True) for precision in ("float32, TF32", "float32")
    ]
    assert all(r["ok"] for r in report["kernel_correctness"])
    wanted = {r["case"].split("gradients ")[1].split(",")[0]: set(r["errors"]) for r in report["kernel_correctness"]}
    assert wanted["qkvm"] == {"output", "dQ", "dK", "dV", "dM"} and wanted["v"] == {"output", "dV"}
    assert [r["path"] for r in report["kernel_speed"]] == ["fused", "plain"]
    assert all(r["ms"] > 0 and r["tflops"] > 0 for r in report["kernel_speed"])
    assert report["kernel_speed"][0]["kernel_ms"]["other"] > 0  # the profiler's split of the fused step
    assert [r["preset"] for r in report["steps"]] == [p[0] for p in networks.PRESETS]
    for row in report["steps"]:
        chunks = set(networks.CHUNK_MODES) if row["preset"] in networks.PAPER_SCALE else set()
        assert row["flops"] > 0 and set(row["ms"]) == {"fp32", "fp32 plain", "bf16"} | chunks
        assert min(row["ms"].values()) > 0 and set(row["infer_ms"]) == {"fp32", "fp32 plain"} | chunks
    path = report["environment"]["fused CRAB on CPU"]
    assert report["finished"] and (path == "C++ kernel" or path.startswith("PyTorch operations ("))
    assert [r["preset"] for r in report["short_training"]] == list(networks.PAPER_SCALE)
    assert all(math.isfinite(r[run]) for r in report["short_training"] for run in networks.SHORT_RUNS)
    assert [r["preset"] for r in report["converged"]] == [c[0] for c in CONVERGED]
    for row in report["converged"]:
        assert set(row["runs"]) == set(CONVERGED_RUNS), row
        for run in row["runs"].values():
            assert math.isfinite(run["best_val_loss"]) and len(run["val_losses"]) == 2, run
    darts = report["darts"]["cpu"]
    assert math.isfinite(darts["mse"]) and darts["windows"] == 250 - 96 - 96 + 1
    text = (tmp_path / "out" / "report.md").read_text()
    headings = (
        "## Environment",
        "## CRAB's Triton kernels against the plain formula",
        "## One CRAB layer, forward and backward in bf16",
        "## CPU vs device parity",
        "## Training step",
        "## Inference",
        "## Darts path",
        "## The same training to the end",
    )
    for heading in headings:
        assert heading in text
    assert list(tmp_path.iterdir()) == [tmp_path / "out"]  # no darts_logs / lightning_logs left behind


def test_only_the_bf16_modes_train_under_autocast():
    """The first device run measured the fp32 variants (plain path, chunk sizes) under bf16
    autocast because the switch read ``mode != "fp32"``: every fp32 mode must see autocast off."""
    import torch

    seen = {}

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(1))

        def forward(self, x):
            seen[mode] = torch.is_autocast_enabled("cpu")
            return x * self.weight

    probe = Probe()
    optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    for mode in (*networks.MODES, *networks.CHUNK_MODES, *networks.INFERENCE_MODES):
        networks.train_step(probe, optimizer, torch.ones(2, 1), torch.zeros(2, 1), mode, "cpu")
    assert seen == {mode: mode.startswith("bf16") for mode in seen} and {"fp32 plain", "bf16+compile"} <= set(seen)


def test_short_training_only_prints_the_three_runs_of_one_network(gpu_check, capsys):
    argv = ["--short-training-only", "--smoke", "--steps", "2", "--batch", "2", "--preset", "MSL anomaly"]
    assert gpu_check.main(argv) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "held-out loss" in line]
    assert [line.split(": held-out")[0] for line in lines] == [
        f"MSL anomaly, batch 2, 2 steps, {run}" for run in networks.SHORT_RUNS
    ]
    assert all(math.isfinite(float(line.rsplit(" ", 1)[1])) for line in lines)


def test_kernel_only_run_reports_the_kernel_and_the_imputation_steps(gpu_check, tmp_path, monkeypatch):
    """The short device run (``--kernel-only``): correctness, the layer's speed and the default
    path against the plain one on the Weather and ETTh1 imputation networks, nothing else."""
    monkeypatch.chdir(tmp_path)
    assert gpu_check.main(["--smoke", "--kernel-only", "--output", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["finished"] and "parity" not in report and "darts" not in report
    assert [r["preset"] for r in report["steps"]] == list(networks.KERNEL_NETWORKS)
    for row in report["steps"]:
        assert set(row["ms"]) == {"fp32", "fp32 plain", "bf16"} and row["flops"] > 0  # no compiling in a smoke run
    text = (tmp_path / "out" / "report.md").read_text()
    assert "| fused |" in text and "Weather imputation" in text
    lines = [json.loads(line) for line in (tmp_path / "out" / "compile_modes.jsonl").read_text().splitlines()]
    assert lines[0]["environment"]["fused CRAB on the device"] == "no GPU"
    assert {(line["preset"], line["mode"]) for line in lines[1:]} == {
        (name, mode) for name in networks.KERNEL_NETWORKS for mode in ("fp32", "fp32 plain", "bf16")
    }
    assert all(line["ms"] > 0 and line["seconds_with_compile"] > 0 for line in lines[1:])


def test_the_kernel_table_names_the_time_of_each_kernel():
    from benchmarks.measure.gpu_report import kernel_tables

    row = dict(path="fused", shape=(1, 1, 8, 4), ms=2.0, tflops=1.0, peak_tflops=989.0, percent_of_peak=0.1)
    row.update(peak_mb=1.0, kernel_ms={"_key_kernel": 1.25, "other": 0.5})
    text = "\n".join(kernel_tables({"kernel_correctness": [], "kernel_speed": [row]}))
    assert "fused, ms per step by kernel (profiler): _key_kernel 1.25, other 0.50" in text


@pytest.mark.parametrize(
    ("dtypes", "expected"),
    [
        (["bfloat16", "float16"], "Triton kernels in bfloat16, float16; float32 without TF32: PyTorch operations"),
        (["bfloat16", "float16", "float32"], "Triton kernels in bfloat16, float16, float32"),
        ([], "PyTorch operations (compute capability 7.5; the kernels need 8.0)"),
    ],
)
def test_the_environment_names_the_dtypes_the_triton_kernels_take(monkeypatch, dtypes, expected):
    """A GPU whose kernels take bf16 but not float32 without TF32 is not reported as too old."""
    from benchmarks.measure import kernel

    monkeypatch.setattr(kernel.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(kernel, "_triton_dtypes", lambda: dtypes)
    monkeypatch.setattr(kernel.crab_gpu, "unavailable_reason", lambda: None)
    monkeypatch.setattr(kernel.torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    assert kernel._device_path() == expected


def test_the_docs_step_table_joins_one_runs_records_and_refuses_another_gpus(tmp_path):
    from benchmarks.measure.gpu_report import compile_modes_table

    def record(name, gpu, preset):
        environment = {"gpu": gpu, "git commit": "abcdef0123", "torch": "2.11", "TF32 matrix products": False}
        lines = [{"environment": environment}, {"preset": preset, "batch": 32, "mode": "bf16", "ms": 12.34}]
        path = tmp_path / name / "compile_modes.jsonl"
        path.parent.mkdir()
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path

    first, second = record("a", "H200", "ETTh1 imputation"), record("b", "H200", "MSL anomaly")
    table = compile_modes_table([first, second], tmp_path)
    assert "| ETTh1 imputation | 32 | 12.3 |" in table and "| MSL anomaly | 32 | 12.3 |" in table
    assert "records: `a/compile_modes.jsonl`, `b/compile_modes.jsonl`" in table
    with pytest.raises(ValueError, match="another GPU or commit"):
        compile_modes_table([first, record("c", "H100", "MSL anomaly")], tmp_path)


def test_the_kernel_check_fails_unless_the_triton_kernels_ran(monkeypatch):
    from benchmarks.measure import kernel
    from xct_estimators.nn import crab_gpu

    monkeypatch.setattr(crab_gpu, "module", lambda: None)  # Triton missing or switched off
    (row,) = kernel.kernel_correctness("cpu", smoke=True)
    assert not row["ok"] and "the Triton kernels did not load" in row["error"]


def test_the_kernel_check_covers_every_call_pattern():
    """With and without a mask, dropout on and off, and every combination of wanted gradients."""
    from benchmarks.measure.kernel import call_patterns

    patterns = call_patterns(smoke=False)
    assert len(patterns) == 2 * (15 + 7)  # dropout on and off; Q, K, V, M and Q, K, V: every non-empty subset
    masked = {needs for _, has_mask, _, needs in patterns if has_mask}
    assert (False, False, False, True) in masked and (True, True, True, False) in masked
    assert all(not needs[3] for _, has_mask, _, needs in patterns if not has_mask)
