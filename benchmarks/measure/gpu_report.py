"""The GPU check's report: ``report.json`` and ``report.md``, written after every section."""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks.measure import compact_table
from benchmarks.measure.converged import CONVERGED_RUNS
from benchmarks.measure.networks import CHUNK_MODES, INFERENCE_MODES, MODES


def markdown(report: dict) -> str:
    sections = (
        _environment_section,
        kernel_tables,
        _parity_section,
        step_tables,
        _training_sections,
        _closing_sections,
    )
    return "\n".join(line for section in sections for line in section(report)) + "\n"


def _environment_section(report: dict) -> list[str]:
    mode = "smoke (tiny sizes)" if report["smoke"] else "full"
    lines = ["# GPU check", "", f"mode: {mode}, device: {report['device']}", "", "## Environment", ""]
    return lines + [f"- {k}: {v}" for k, v in report["environment"].items()]


def kernel_tables(report: dict, passed_cases: bool = True) -> list[str]:
    """The CRAB kernel's correctness (``passed_cases=False``: only the cases that failed) and one
    layer's speed."""
    cases = [r for r in report.get("kernel_correctness", []) if passed_cases or not r["ok"]]
    lines = ["", "## CRAB's Triton kernels against the plain formula (float64 reference)", ""] if cases else []
    lines += (
        ["| case | shape (B, H, N, M, d) | largest relative errors | within its tolerance |", "|---|---|---|---|"]
        if cases
        else []
    )
    for r in cases:
        errors = ", ".join(f"{k} {v:.1e}" for k, v in r["errors"].items())
        errors = r.get("error", errors).replace("|", "/")
        lines.append(f"| {r['case']} | {tuple(r['shape'])} | {errors} | {r['ok']} ({r.get('tolerance', 1e-4):g}) |")
    if not report.get("kernel_speed"):
        return lines
    lines += ["", "## One CRAB layer, forward and backward in bf16 (Weather imputation shape)", ""]
    lines += ["| path | shape (B, H, N, d) | ms | TFLOP/s | peak used | % of peak | peak MiB |", "|---" * 7 + "|"]
    for r in report.get("kernel_speed", []):
        if "error" in r:
            errors = [line for line in r["error"].strip().splitlines() if "Error" in line] or [r["error"].strip()]
            reason = errors[-1].strip().replace("|", "/")
            lines.append(f"| {r['path']} | {tuple(r['shape'])} | failed: {reason} ||||||")
            continue
        percent = "-" if r["percent_of_peak"] is None else f"{r['percent_of_peak']:.1f}"
        memory_mb = "-" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        lines.append(
            f"| {r['path']} | {tuple(r['shape'])} | {r['ms']:.2f} | {r['tflops']:.1f} | "
            f"{r['peak_tflops'] or 'unknown'} | {percent} | {memory_mb} |"
        )
    for r in report.get("kernel_speed", []):
        if r.get("kernel_ms"):
            parts = ", ".join(f"{name} {ms:.2f}" for name, ms in r["kernel_ms"].items())
            lines += ["", f"{r['path']}, ms per step by kernel (profiler): {parts}"]
    return lines


def _parity_section(report: dict) -> list[str]:
    """CPU against the device, same weights and inputs."""
    lines: list[str] = []
    lines += [
        "",
        "## CPU vs device parity (fp32, TF32 off, eval mode)",
        "",
        "| preset | max |output diff| | max |grad diff| | within 1e-4 |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['preset']} | {r['max_abs_output_diff']:.2e} | {r['max_abs_grad_diff']:.2e} | {r['ok']} |"
        for r in report.get("parity", [])
    ]
    return lines


def step_tables(report: dict) -> list[str]:
    """Training and inference steps per mode, and every failed measurement."""
    lines: list[str] = []
    if not report.get("steps"):
        return lines
    modes = [m for m in (*MODES, *CHUNK_MODES) if any(m in row["ms"] for row in report.get("steps", []))]
    lines += [
        "",
        "## Training step (forward, backward, Adam) at the preset's batch size",
        "",
        "fp32 and bf16 are the default (fused CRAB); plain: `fused_attention=False`; chunk: the fused "
        "path with that many scores per chunk. Milliseconds, median; peak device memory in MiB in brackets.",
        "",
        "| preset | batch | tokens | GFLOP/step | "
        + " | ".join(modes)
        + " | fp32 TFLOP/s | "
        + " | ".join(f"{m} speed-up" for m in modes[1:])
        + " |",
        "|---" * (4 + 2 * len(modes)) + "|",
    ]
    for row in report.get("steps", []):
        ms, mem = [row["ms"].get(m) for m in modes], [row["peak_mb"].get(m) for m in modes]
        cells = " | ".join(
            "-" if v is None else (f"{v:.1f}" + ("" if b is None else f" [{b:.0f}]"))
            for v, b in zip(ms, mem, strict=True)
        )
        speed = " | ".join(f"{ms[0] / v:.2f}x" if v else "-" for v in ms[1:])
        lines.append(
            f"| {row['preset']} | {row['batch']} | {row['tokens']} | {row['flops'] / 1e9:.1f} | {cells} | "
            f"{row['tflops_fp32']:.2f} | {speed} |"
        )
    if any(row.get("infer_ms") for row in report.get("steps", [])):
        lines += [
            "",
            "## Inference (no-grad forward, eval mode) at the preset's batch size, ms",
            "",
            "| preset | " + " | ".join(INFERENCE_MODES) + " |",
            "|---" * (1 + len(INFERENCE_MODES)) + "|",
        ]
        for row in report["steps"]:
            cells = " | ".join(
                "-" if row["infer_ms"].get(m) is None else f"{row['infer_ms'][m]:.2f}" for m in INFERENCE_MODES
            )
            lines.append(f"| {row['preset']} | {cells} |")
    failures = [(r["preset"], "parity", r["error"]) for r in report.get("parity", []) if r.get("error")]
    failures += [(r["preset"], m, e) for r in report.get("steps", []) for m, e in r.get("errors", {}).items()]
    for preset, what, error in failures:
        lines += ["", f"## Failed: {preset}, {what}", "", "```", error, "```"]
    return lines


def _training_sections(report: dict) -> list[str]:
    """The short and the converged fp32-against-bf16 trainings."""
    lines: list[str] = []
    if report.get("short_training"):
        lines += [
            "",
            "## Same short training, fp32 vs bf16 (held-out loss; one-cycle schedule)",
            "",
            "| preset | steps | fp32 | bf16 | fp32, other dropout | bf16 gap | fp32 spread |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in report["short_training"]:
            gap, spread = row["bf16"] / row["fp32"] - 1, row["fp32, other dropout"] / row["fp32"] - 1
            lines.append(
                f"| {row['preset']} | {row['steps']} | {row['fp32']:.5f} | {row['bf16']:.5f} | "
                f"{row['fp32, other dropout']:.5f} | {gap:+.1%} | {spread:+.1%} |"
            )
    if report.get("converged"):
        header = "| preset | epochs | train stride | " + " | ".join(CONVERGED_RUNS) + " | bf16 gap | fp32 seed spread |"
        lines += [
            "",
            "## The same training to the end, fp32 vs bf16-mixed (engine, real data; best validation loss)",
            "",
            header,
            "|---" * (5 + len(CONVERGED_RUNS)) + "|",
        ]
        for row in report["converged"]:
            loss = {run: row["runs"].get(run, {}).get("best_val_loss") for run in CONVERGED_RUNS}
            cells = " | ".join("-" if v is None else f"{v:.5f}" for v in loss.values())
            fp32, bf16, other = loss.values()
            gap = f"{bf16 / fp32 - 1:+.1%}" if fp32 and bf16 else "-"
            spread = f"{other / fp32 - 1:+.1%}" if fp32 and other else "-"
            note = f" ({row['skipped']})" if row.get("skipped") else ""
            settings = f"{row['epochs']} | {row['train_stride']}"
            lines.append(f"| {row['preset']}{note} | {settings} | {cells} | {gap} | {spread} |")
    return lines


def _closing_sections(report: dict) -> list[str]:
    """Profiles, the Darts path, the paper run, notes and the total time."""
    lines: list[str] = []
    for name, table in report.get("profiles", {}).items():
        lines += ["", f"## Where the bf16 step's time goes: {name}", "", "```", table, "```"]
    if "darts" in report:
        lines += [
            "",
            "## Darts path (from_preset ETTh1 96, 2 epochs, historical_forecasts on the test split)",
            "",
            "```",
            json.dumps(report["darts"], indent=2),
            "```",
        ]
    if report.get("paper_run"):
        lines += ["", "## Paper-scale run", "", "```", json.dumps(report["paper_run"], indent=2), "```"]
    lines += [f"- note: {note}" for note in report.get("notes", [])]
    lines += ["", f"total: {report.get('seconds', 0):.0f} s" + ("" if report.get("finished") else " (unfinished)")]
    return lines


def save(report: dict, output: Path, start: float) -> None:
    """Write both reports now: a run cut short keeps every finished section."""
    report["seconds"] = time.perf_counter() - start
    (output / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (output / "report.md").write_text(markdown(report))


def read_compile_modes(paths: list[Path]) -> tuple[dict, list[dict]]:
    """The environment and the step lines of ``compile_modes.jsonl`` records of one GPU check run
    (its networks may be split over several records); records of another GPU or commit are refused."""
    environment, steps = None, []
    for path in paths:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        environment = environment or lines[0]["environment"]
        if any(lines[0]["environment"][key] != environment[key] for key in ("gpu", "git commit")):
            raise ValueError(f"{path} measured another GPU or commit than {paths[0]}: name one run's records.")
        steps += lines[1:]
    return environment, steps


def compile_modes_table(paths: list[Path], root: Path) -> str:
    """The docs' table of one GPU check run's ``compile_modes.jsonl`` records: training-step times
    per network (rows) and the precision, compile and attention modes measured (columns)."""
    environment, lines = read_compile_modes(paths)
    steps: dict[tuple[str, int], dict[str, float]] = {}
    for line in lines:
        steps.setdefault((line["preset"], line["batch"]), {})[line["mode"]] = line["ms"]
    modes = [mode for mode in MODES if any(mode in ms for ms in steps.values())]
    header = ["network", "batch", *(mode.replace("+", " + ") for mode in modes)]
    rows = [
        [preset, batch, *(f"{ms[m]:.1f}" if m in ms else "-" for m in modes)] for (preset, batch), ms in steps.items()
    ]
    named = ", ".join(f"`{path.relative_to(root).as_posix()}`" for path in paths)
    return compact_table(header, rows) + (
        f"\nms per training step (forward, backward, Adam); plain: `fused_attention=False`, else CRAB's fused "
        f"kernels. {environment['gpu']}, torch {environment['torch']}, TF32 "
        f"{'on' if environment.get('TF32 matrix products') else 'off'}, commit {environment['git commit'][:7]}; "
        f"record{'s' if len(paths) > 1 else ''}: {named}.\n"
    )
