"""The results page's sections that only this project's records have: the GPU check's kernel and
converged comparison, the SMAP analysis, and what the paper reports that no record covers."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.measure.estimates import RECORDS, STEP_RECORDS
from benchmarks.measure.gpu_report import kernel_tables, step_tables
from benchmarks.measure.queue import QUEUE, Runs
from xct_estimators.bench import paper
from xct_estimators.bench.record import Record
from xct_estimators.bench.tables import markdown_table
from xct_estimators.bench.tasks import TASKS

#: The paper's datasets whose benchmark files this project could not obtain, and why.
UNOBTAINED_DATA = {
    name: "its files were not obtainable from the sources this project can reach (too large), so nothing was run"
    for name in ("electricity", "traffic", "SMD", "SWaT", "PSM")
}


def demoted(text: str) -> str:
    return "\n".join("#" + line if line.startswith("## ") else line for line in text.splitlines())


def converged_section(folder: Path) -> str:
    """A ``gpu_check.py`` record's converged comparison: best validation loss in fp32, bf16-mixed
    and fp32 with another seed (the spread bf16's gap is read against)."""
    report = json.loads((Path(folder) / "report.json").read_text())
    environment = report["environment"]
    runs = ("fp32", "bf16-mixed", "fp32, seed 2022")
    rows = []
    for row in report.get("converged") or []:
        losses = [row["runs"].get(run, {}).get("best_val_loss") for run in runs]
        if None in losses:
            continue
        fp32, bf16, other = losses
        gaps = [f"{100 * (bf16 - fp32) / fp32:+.1f}%", f"{100 * (other - fp32) / fp32:+.1f}%"]
        rows.append([row["preset"], str(row["epochs"]), *(f"{v:.5g}" for v in losses), *gaps])
    header = ["network", "epochs", "fp32", "bf16-mixed", "fp32, seed 2022", "bf16 vs fp32", "seed vs seed"]
    lines = [
        f"## `{folder}`: fp32 vs bf16, trained to the end",
        "",
        f"- device: {environment['gpu']}",
        f"- code: commit {environment['git commit'][:7]}; torch {environment['torch']}",
        f"- command: `python {environment['command']}`",
        *(f"- note: {note}" for note in report.get("notes", [])),
        "",
        "Best validation loss of the same training in each precision (the engine's masked or "
        "reconstruction MSE); bf16 is safe where its gap lies within the two fp32 seeds' spread.",
        "",
        markdown_table(header, rows),
    ]
    return "\n".join(lines)


CUT_SHORT = "- cut short by its time limit: the networks not shown were not measured"


def current_checks() -> dict[str, list[Path]]:
    """GPU -> the kernel checks the estimates and docs read (``estimates.STEP_RECORDS``), resolved."""
    found: dict[str, list[Path]] = {}
    for path in STEP_RECORDS:
        folder = (RECORDS / path).parent.resolve()
        gpu = json.loads((folder / "report.json").read_text())["environment"]["gpu"]
        found.setdefault(gpu, []).append(folder)
    return found


def kernel_section(folder: Path) -> str:
    """A ``gpu_check.py --kernel-only`` record: the CRAB kernel's correctness and speed, and the
    training steps on either attention path, with one sentence of what they show; a check that is
    not a current one (:func:`current_checks`, what the estimates and docs read) in that sentence
    alone, its tables in its report.md."""
    report = json.loads((Path(folder) / "report.json").read_text())
    environment = report["environment"]
    checks = report.get("kernel_correctness", [])
    passed = f"{sum(r['ok'] for r in checks)} of {len(checks)} cases"
    said = []
    if checks and all("tolerance" in r for r in checks):  # the check that calls the Triton kernels themselves
        said.append(f"The Triton kernels match the float64 formula in {passed}")
    elif checks:  # an older check: float32 through whatever fused path the device took, Triton or not
        path = environment["fused CRAB on the device"].split(" (")[0]
        said.append(f"The fused path the device took in float32 ({path}) matches the float64 formula in {passed}")
    for row in report.get("kernel_speed", []):
        if row["path"] == "fused" and row.get("percent_of_peak") is not None:
            said.append(
                f"one fused CRAB layer in bf16 reaches {row['percent_of_peak']:.1f} % of the device's bf16 peak"
            )
    for row in report.get("steps", []):
        for fused, plain in (("fp32", "fp32 plain"), ("bf16+compile", "bf16+compile plain")):
            if fused in row["ms"] and plain in row["ms"]:
                ratio = row["ms"][fused] / row["ms"][plain]
                said.append(f"{row['preset']}'s {fused} step takes {ratio:.2f}x the plain path's")
    current = [path for paths in current_checks().values() for path in paths]
    older = bool(current) and Path(folder).resolve() not in current  # its sentence stays, not its tables
    status = "" if report.get("finished") else CUT_SHORT
    if older:
        names = "` and `".join(str(path.relative_to(RECORDS.parent.parent.resolve())) for path in current)
        status = f"- not one of the checks the estimates read (`{names}`): its tables are in its report.md"
    lines = [
        f"## `{folder}`: the CRAB kernel on a GPU",
        "",
        f"- device: {environment['gpu']}",
        f"- code: commit {environment['git commit'][:7]}; torch {environment['torch']}",
        f"- command: `python {environment['command']}`",
        status,
        "",
        "; ".join(said) + ".",
    ]
    if not older:
        lines += demoted("\n".join(kernel_tables(report, passed_cases=False) + step_tables(report))).splitlines()
    return "\n".join(lines)


def smap_section(folder: Path) -> str:
    """``benchmarks/smap_analysis.py``'s record: why SMAP's AUC-ROC is below 0.5 for every detector."""
    a = json.loads((Path(folder) / "analysis.json").read_text())
    auc, within, commands, labels = a["auc_roc"], a["within_channel"], a["commands"], a["labels"]
    heavy = sorted(a["channels"], key=lambda c: -c["anomalous_steps"])[:10]
    rows = [
        [c["channel"], c["test_steps"], f"{c['anomalous_steps'] / c['test_steps']:.3f}",
         f"{c['auc_roc_within_channel']:.3f}", f"{c['pooled_score_mean']:.3g}"]
        for c in heavy
    ]  # fmt: skip
    text = (
        "SMAP's arrays are 53 telemetry channels concatenated in time (column 0 the telemetry value, "
        "columns 1-24 binary commands), so one standardisation and one threshold rank the points of all "
        "channels against each other. Scored without a model, the distance of each point from the "
        f"training mean ranks the anomalies below normal points when pooled (AUC-ROC "
        f"{auc['pooled, every column']:.3f} over every column, {auc['pooled, telemetry value']:.3f} on the "
        f"telemetry value); standardised within each channel the same distance gives "
        f"{auc['per channel, telemetry value']:.3f}, and within the {within['channels_with_anomalies']} "
        f"channels that hold anomalies its median AUC-ROC is {within['median_auc_roc']:.3f} "
        f"({within['channels_above_0.9']} above 0.9). Pooled, the anomalous steps' median score is "
        f"{a['pooled_score_median']['anomalies']:.3g} against {a['pooled_score_median']['elsewhere']:.3g} "
        "for normal steps: the anomalies lie in channels that are quiet next to other channels' normal "
        f"steps. Commands are rarer inside them ({commands['active_share_in_anomalies']:.4f} of command "
        f"entries active, {commands['active_share_elsewhere']:.4f} elsewhere), and "
        f"{commands['columns_constant_in_training_active_in_test']} command column(s) never change in "
        "training but do in the test array, where their standardised values are then huge. "
        "Labels and rows line up: each channel's test length equals its `num_values` "
        f"({labels['test_lengths_equal_num_values']}), and the stored labels equal those rebuilt from "
        f"`labeled_anomalies.csv` with inclusive ends ({labels['stored_equal_rebuilt_from_csv']}). The "
        f"shapes are the Time-Series-Library loaders' ({tuple(a['shapes']['train'])} train, "
        f"{tuple(a['shapes']['test'])} test). So the data is not wrong: a below-0.5 AUC-ROC is what pooled "
        "scoring across these channels gives, and the detectors' unadjusted measures say so."
    )
    header = ["channel", "test steps", "anomaly share", "AUC-ROC within the channel", "pooled score, mean"]
    provenance = a["provenance"]
    return "\n".join([
        f"## `{folder}`: SMAP, why AUC-ROC is below 0.5",
        "",
        f"- code: commit {provenance['git_commit'][:7]}",
        f"- command: `{provenance['command']}`",
        "",
        text,
        "",
        "The ten channels with the most anomalous steps:",
        "",
        markdown_table(header, rows),
    ])  # fmt: skip


NOT_RUN = "not run yet; the data is here"
QUEUED = "not run yet; the data is here, and the GPU queue plans it (`python -m benchmarks.paper_scale --dry-run`)"


def _covered(records: list[Record]) -> set[tuple]:
    keys = set()
    for r in records:
        if r.model in ("xctformer", "xctformer_linear"):  # the paper's model, either input fill
            setting = TASKS[r.task].setting
            keys.add((r.task, paper.dataset_key(r.dataset), getattr(r, setting) if setting else None))
    return keys


def missing_section(records: list[Record]) -> str:
    """The paper's results that no XCTFormer record on the page covers, with why."""
    wanted = [("forecast", d, h) for d in paper.FORECAST for h in paper.HORIZONS]
    wanted += [("impute", d, rate) for d in paper.IMPUTATION for rate in paper.IMPUTATION[d]]
    wanted += [("detect", d, None) for d in paper.ANOMALY]
    covered = _covered(records)
    missing: dict[tuple[str, str], list] = {}
    for task, dataset, setting in wanted:
        if (task, dataset, setting) not in covered:
            missing.setdefault((task, dataset), []).append(setting)
    queued = {(entry.task, paper.dataset_key(entry.dataset)) for entry in QUEUE if isinstance(entry, Runs)}
    rows = []
    for (task, dataset), settings in missing.items():
        what = "all" if settings == [None] else ", ".join(f"{s:g}" for s in settings)
        why = UNOBTAINED_DATA.get(dataset, QUEUED if (task, dataset) in queued else NOT_RUN)
        rows.append([task, dataset, what, why])
    lines = [
        "## What the paper reports and this page does not",
        "",
        "Every (task, dataset, horizon or mask rate) of the paper's tables with no XCTFormer record above. "
        "Anomaly detection counts a dataset once any protocol ran.",
        "",
    ]
    table = markdown_table(["task", "dataset", "horizons / mask rates", "why"], rows) if rows else "None."
    return "\n".join([*lines, table])
