"""docs/forecasting.md's covariate tables: the decoder choice (``benchmarks/decoder_choice.py``'s
rows), the suite's confirmation (``xct-bench forecast --covariates all`` records) and what a calendar
does on ETT."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from benchmarks.measure import compact_table
from benchmarks.measure.decoders import CANDIDATES, CHOSEN_ON, HORIZON
from xct_estimators.bench.covariate_suite import PREFIX


def _mean_sd(values: list[float]) -> str:
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}" if len(values) > 1 else f"{values[0]:.3f}"


def table(results: Path, root: Path) -> str:
    """docs/forecasting.md's table of the choice: each candidate's MSE per family of :data:`CHOSEN_ON`."""
    path = results / "cpu" / "decoder-choice" / "suite" / "rows.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    other = sorted({row["horizon"] for row in rows} - {HORIZON})
    if other:  # the caption says horizon 96; other horizons would be averaged in unseen
        raise ValueError(
            f"{path}: rows at horizon(s) {other}; the choice is at {HORIZON}. Keep them in another folder."
        )
    families = [family for family in CHOSEN_ON if any(row["family"] == family for row in rows)]
    seeds = sorted({row["seed"] for row in rows})
    decoders = [name for name in CANDIDATES if any(row["decoder"] == name for row in rows)]
    for name in decoders:  # every candidate on every family and seed, or the comparison is not fair
        missing = {(f, s) for f in families for s in seeds} - {
            (r["family"], r["seed"]) for r in rows if r["decoder"] == name
        }
        if missing:
            raise ValueError(f"{path}: {name} lacks (family, seed) {sorted(missing)}; run decoder_choice to finish it.")
    lines = []
    for family in families:
        mine = [row for row in rows if row["family"] == family]
        cells = [_mean_sd([r["mse"] for r in mine if r["decoder"] == name]) for name in decoders]
        lines.append([f"`known-{family}`", *cells, f"{statistics.mean(r['noise_floor'] for r in mine):.3f}"])
    means = {
        name: [statistics.mean(r["mse"] for r in rows if r["decoder"] == name and r["family"] == f) for f in families]
        for name in decoders
    }
    lines.append(
        ["geometric mean", *(f"{math.exp(statistics.mean(map(math.log, means[n]))):.3f}" for n in decoders), ""]
    )
    header = ["family", *(f"`{name}`" for name in decoders), "noise floor"]
    first = rows[0]
    commits = {}
    for row in rows:
        commits.setdefault((row["git_commit"][:7], row["device"]["cpu"]), []).append(row["decoder"])
    made = "; ".join(
        f"{', '.join(dict.fromkeys(names))} at commit {commit} on {cpu}" for (commit, cpu), names in commits.items()
    )
    source = (
        f"\nMSE (mean ± sd over seeds {', '.join(map(str, seeds))}), horizon "
        f"{first['horizon']}, on the test split; noise floor: the MSE of a forecast that knows everything but the "
        f"noise; the choice: the lowest geometric mean over the families among the decoders that keep ETTh1 and "
        f"ETTm1 with a calendar no worse than without it at every horizon. Record: "
        f"`{path.relative_to(root).as_posix()}` ({made}; 1 thread per run; "
        f"`{first['command']}`, with `--candidates` for the later ones).\n"
    )
    return compact_table(header, lines) + source


#: The xct-bench record folders of the suite (families chosen on, held out) and of ``control``.
SUITE_FOLDERS = ("covariates-chosen-on", "covariates-held-out", "covariates-control")
SUITE_MODELS = ("xctformer", "tide", "tsmixer")


def suite_table(results: Path, root: Path) -> str:
    """docs/forecasting.md's table of the confirmation: XCTFormer, TiDE and TSMixer with the same
    covariates and settings on every family and horizon (mean ± sd over seeds), the noise floor,
    and XCTFormer's MSE over the better of the other two; then the geometric mean of that ratio."""
    lines, ratios, sources = [], [], []
    for folder in SUITE_FOLDERS:
        path = results / "cpu" / folder / "results.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        records = [r for r in records if r["run"].get("covariates") in ("all", "future") and r["model"] in SUITE_MODELS]
        cells = {}
        for r in records:
            cells.setdefault((r["dataset"], r["horizon"]), {}).setdefault(r["model"], []).append(r)
        for (dataset, horizon), by_model in sorted(cells.items()):
            means = {m: statistics.mean(r["mse"] for r in runs) for m, runs in by_model.items()}
            other = min(means[m] for m in SUITE_MODELS[1:] if m in means)
            ratio = means["xctformer"] / other
            ratios.append(ratio)
            family = dataset.removeprefix(PREFIX)
            role = "chosen on" if family in CHOSEN_ON else "held out"  # control too: it chose 0.1.0's decoder
            floors = [r["noise_floor"] for runs in by_model.values() for r in runs if r.get("noise_floor") is not None]
            shown = [_mean_sd([r["mse"] for r in by_model[m]]) for m in SUITE_MODELS]
            floor = f"{statistics.mean(floors):.3f}" if floors else "-"
            lines.append([f"`{dataset}`", role, str(horizon), *shown, floor, f"{ratio:.2f}"])
        runs = {}  # each command's models, commit and machine, in the record's order
        for r in records:
            runs.setdefault((r["git_commit"][:7], r["device"]["cpu"], r["command"]), []).append(r["model"])
        made = "; ".join(
            f"{', '.join(dict.fromkeys(models))} at commit {commit} on {cpu}, `{command}`"
            for (commit, cpu, command), models in runs.items()
        )
        sources.append(f"`{path.relative_to(root).as_posix()}` ({made})")
    header = ["dataset", "choice", "horizon", *(f"`{m}`" for m in SUITE_MODELS), "noise floor", "ratio"]
    wins = sum(r <= 1 for r in ratios)
    geometric = math.exp(statistics.mean(math.log(r) for r in ratios))
    source = (
        f"\nMSE on the test split, mean ± sd over seeds 2021-2023, every model with `xct-bench`'s defaults and the "
        f"same covariates; ratio: XCTFormer's mean over the better mean of TiDE and TSMixer. XCTFormer is no worse "
        f"in {wins} of {len(ratios)} cells; the geometric mean of the ratio is {geometric:.2f}. Records: "
        f"{'; '.join(sources)}.\n"
    )
    return compact_table(header, lines) + source


def calendar_table(results: Path, root: Path) -> str:
    """docs/forecasting.md's table of a calendar on real data: XCTFormer with and without hour of day
    and day of week, per dataset and horizon where both were run, and whether the change is beyond
    the spread (larger than the sum of the two standard deviations)."""
    path = results / "cpu" / "covariates-calendar" / "results.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cells: dict = {}
    for r in records:
        kind = r["run"].get("covariates") or "none"
        cells.setdefault((r["dataset"], r["horizon"]), {}).setdefault(kind, []).append(r["mse"])
    lines = []
    for (dataset, horizon), by_kind in sorted(cells.items()):
        if {"none", "calendar"} - by_kind.keys():
            continue
        none, calendar = by_kind["none"], by_kind["calendar"]
        change = statistics.mean(calendar) / statistics.mean(none) - 1
        if min(len(none), len(calendar)) < 2:
            verdict = "one seed: no spread"
        else:
            spread = statistics.stdev(none) + statistics.stdev(calendar)
            beyond = abs(statistics.mean(calendar) - statistics.mean(none)) > spread
            verdict = ("worse" if change > 0 else "better") if beyond else "within the spread"
        seeds = f"{len(none)}, {len(calendar)}"
        lines.append([dataset, str(horizon), seeds, _mean_sd(none), _mean_sd(calendar), f"{change:+.1%}", verdict])
    shown = {(line[0], int(line[1])) for line in lines}
    used = [r for r in records if (r["dataset"], r["horizon"]) in shown]
    by_machine = defaultdict(list)  # (cpu) -> commits, each once, in order
    for r in used:
        if r["git_commit"][:7] not in by_machine[r["device"]["cpu"]]:
            by_machine[r["device"]["cpu"]].append(r["git_commit"][:7])
    examples = {r["run"].get("covariates") or "none": r["command"] for r in used}  # the last of each
    made = "; ".join(f"commits {', '.join(commits)} on {cpu}" for cpu, commits in by_machine.items())
    made += "; each row names its command, e.g. " + " and ".join(f"`{command}`" for command in examples.values())
    seeds = ", ".join(str(seed) for seed in sorted({r["seed"] for r in used}))
    header = ["dataset", "horizon", "seeds", "no covariates", "calendar", "change", "beyond the spread"]
    source = (
        f"\nMSE on the test split, mean ± sd over the seeds counted (of {seeds}), `xct-bench`'s defaults; "
        "calendar: hour of day and day of week, known over the horizon; beyond the spread: the change exceeds the "
        f"two standard deviations together. Record: `{path.relative_to(root).as_posix()}` ({made}).\n"
    )
    return compact_table(header, lines) + source


def error_split_table(results: Path, root: Path) -> str:
    """docs/forecasting.md's table of where the error lies on a family (``benchmarks/covariate_errors.py``):
    each model's MSE over all steps, the steps with the flag on and off, and at three leads."""
    path = results / "cpu" / "covariate-errors" / "rows.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    kinds = {(row["family"], row["flag"], row["horizon"]) for row in rows}
    if len(kinds) > 1:  # one caption names one family, flag and horizon
        raise ValueError(f"{path}: rows of several (family, flag, horizon) {sorted(kinds)}; keep one per folder.")
    runs: dict = {}
    for row in rows:
        runs.setdefault((row["model"], row["covariates"]), []).append(row)
    leads = ("0", "47", "95")
    lines = []
    for (model, covariates), mine in runs.items():
        cells = [_mean_sd([r[key] for r in mine]) for key in ("mse", "mse_flag_on", "mse_flag_off")]
        cells += [_mean_sd([r["mse_by_lead"][lead] for r in mine]) for lead in leads]
        lines.append([f"`{model}`", covariates, *cells])
    first = rows[0]
    flag = first["flag"]
    header = ["model", "covariates", "MSE", f"{flag} on", f"{flag} off", *(f"step {int(lead) + 1}" for lead in leads)]
    commits = ", ".join(dict.fromkeys(f"{r['git_commit'][:7]} on {r['device']['cpu']}" for r in rows))
    seeds = ", ".join(str(seed) for seed in sorted({r["seed"] for r in rows}))
    source = (
        f"\n`known-{first['family']}`, horizon {first['horizon']}, test split, mean ± sd over seeds {seeds}, "
        f"`xct-bench`'s defaults; {flag} on/off: the MSE over the forecast steps where the {flag} flag is on "
        f"(a share {statistics.mean(r['share_on'] for r in rows):.2f} of them) or off; step k: the MSE of the k-th "
        f"forecast step. Record: `{path.relative_to(root).as_posix()}` (commit {commits}, 1 thread per run; "
        f"`{first['command']}`).\n"
    )
    return compact_table(header, lines) + source
