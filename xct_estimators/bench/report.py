"""A results folder's report: each task's table beside the paper's numbers, the seed and ablation
tables, written as ``report.md`` with the forecast plots (:mod:`.forecast_plots`)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..nn.presets import IMPUTATION_MASK_RATES, get_preset
from . import paper
from .ablation_report import ablation_table
from .comparison import compute_label, covariate_sentence, spread_sentence, winner_sentence
from .forecast_plots import plot_forecasts
from .models import preset_name
from .results import ResultStore
from .runs import write_atomically
from .tables import fmt, forecast_setting, imputation_setting, markdown_table
from .tasks import TASKS


def _gap(value) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def _error_cells(record: dict, reference) -> list[str]:
    """MSE, MAE, the paper's MSE and MAE, and the relative gaps."""
    (mse, mae), (paper_mse, paper_mae) = (record["mse"], record["mae"]), reference or (None, None)
    gaps = (paper.relative_gap(mse, paper_mse), paper.relative_gap(mae, paper_mae))
    return [*map(fmt, (mse, mae, paper_mse, paper_mae)), *map(_gap, gaps)]


ERROR_HEADER = ["MSE", "MAE", "paper MSE", "paper MAE", "gap MSE", "gap MAE"]
TIME_HEADER = ["fit s", "eval s"]


def _time_cells(record: dict) -> list[str]:
    return [fmt(record["fit_seconds"], ".0f"), fmt(record["eval_seconds"], ".1f")]


def forecast_table(records: list[dict]) -> str:
    """Per (dataset, horizon, model): measured MSE/MAE, the paper's XCTFormer numbers and the gaps;
    then the average over horizons for every (dataset, model) with all its horizons run."""
    records = sorted(records, key=lambda r: (r["dataset"], r["horizon"], r["model"]))
    rows = []
    for r in records:
        ref = paper.forecast_reference(r["dataset"], r["horizon"], r["model"])
        run = [r["dataset"], r["horizon"], r["model"], forecast_setting(r), *_compute_cells(r, records), r["seed"]]
        rows.append([*run, *_error_cells(r, ref), *_time_cells(r)])
    header = ["dataset", "horizon", "model", "settings", *_compute_header(records), "seed", *ERROR_HEADER]
    covariates = covariate_sentence(records)
    out = winner_sentence(records) + (f" {covariates}" if covariates else "")
    out += "\n\n" + markdown_table(header + TIME_HEADER, rows)
    out += shortened_training_note(records)
    averages, averaged = average_rows(records)
    if averages:
        out += "\n\nAverage over horizons " + ", ".join(map(str, paper.HORIZONS)) + ". "
        out += winner_sentence(averaged) + "\n\n" + averages
    return out


#: What can tell rows of one table apart beyond their settings: the code, and how the network computed.
_ORIGINS = {
    "commit": lambda r: (r.get("git_commit") or "not recorded")[:7],
    "compute": lambda r: compute_label(r) or "fp32",
}


def _origins(records: list[dict]) -> list[str]:
    return [name for name, part in _ORIGINS.items() if len({part(r) for r in records}) > 1]


def _compute_header(records: list[dict]) -> list[str]:
    """One column for the commit and for precision and compile, when the table's rows differ in them."""
    return [" / ".join(_origins(records))] if _origins(records) else []


def _compute_cells(record: dict, records: list[dict]) -> list[str]:
    names = _origins(records)
    return [", ".join(_ORIGINS[name](record) for name in names)] if names else []


def shortened_training_note(records: list[dict]) -> str:
    """A line under the table for each dataset whose XCTFormer trained fewer epochs than the
    paper's preset: its gap to the paper's numbers is not the model's alone."""
    notes = []
    for dataset in sorted({r["dataset"] for r in records}):
        preset = get_preset(preset_name(dataset), "forecast")
        trained = sorted(
            {
                r["epochs"]
                for r in records
                if r["dataset"] == dataset and r["model"].startswith("xctformer") and r.get("epochs")
            }
        )
        if trained and trained[0] < preset.epochs:
            notes.append(
                f"{dataset}: XCTFormer trained {', '.join(map(str, trained))} epochs here, the paper's preset "
                f"({preset.dataset}) {preset.epochs}, so the gap to the paper's numbers is partly the shorter "
                f"training; `--full` or `--epochs {preset.epochs}` trains the preset's epochs."
            )
    return "".join(f"\n\n{note}" for note in notes)


def _mixed(records: list[dict], varying: tuple[str, ...]) -> bool:
    """Whether ``records`` (one average's cells) were run with different settings, apart from
    the ``varying`` fields (the horizon or mask rate the average is over)."""

    def rest(record):
        run = dict(record.get("run") or {})
        for key in varying:
            run.pop(key, None)
        settings = {k: v for k, v in (run.pop("settings", None) or {}).items() if k not in varying}
        return json.dumps([run, settings], sort_keys=True)

    return len({rest(r) for r in records}) > 1


MIXED = " (mixed settings!)"


def average_rows(records: list[dict]) -> tuple[str, list[dict]]:
    """The table of averages over the paper's horizons, and the averages as records (horizon "avg")."""
    groups: dict[tuple, dict[int, dict]] = defaultdict(dict)
    for r in records:
        groups[(r["dataset"], r["model"], forecast_setting(r), compute_label(r), r["seed"])][r["horizon"]] = r
    rows, averaged = [], []
    for (dataset, model, setting, _, seed), by_horizon in sorted(groups.items()):
        if not set(paper.HORIZONS) <= set(by_horizon):
            continue
        mse = sum(by_horizon[h]["mse"] for h in paper.HORIZONS) / len(paper.HORIZONS)
        mae = sum(by_horizon[h]["mae"] for h in paper.HORIZONS) / len(paper.HORIZONS)
        first = by_horizon[paper.HORIZONS[0]]
        averaged.append({**first, "run": None, "horizon": "avg", "mse": mse, "mae": mae})
        ref = paper.forecast_reference(dataset, "avg", model)
        seconds = sum(by_horizon[h]["fit_seconds"] + by_horizon[h]["eval_seconds"] for h in paper.HORIZONS)
        cells = [by_horizon[h] for h in paper.HORIZONS]
        setting += MIXED if _mixed(cells, ("horizon", "output_chunk_length")) else ""
        errors = _error_cells({"mse": mse, "mae": mae}, ref)
        rows.append([dataset, model, setting, *_compute_cells(first, records), seed, *errors, fmt(seconds, ".0f")])
    if not rows:
        return "", []
    header = ["dataset", "model", "settings", *_compute_header(records), "seed"]
    header += "avg MSE|avg MAE|paper MSE|paper MAE|gap MSE|gap MAE|total s".split("|")
    return markdown_table(header, rows), averaged


def imputation_table(records: list[dict]) -> str:
    """Per run: our MSE/MAE beside the paper's XCTFormer numbers for that dataset and mask rate
    (Table 3's full version), with the protocol and strides that produced them; then averages
    over the four mask rates beside the paper's XCTFormer and best-baseline averages."""
    records = sorted(records, key=lambda r: (r["dataset"], r.get("protocol") or "", r["mask_rate"], r["model"]))
    rows = []
    for r in records:
        ref = paper.IMPUTATION.get(paper.dataset_key(r["dataset"]), {}).get(r["mask_rate"])
        run = [r["dataset"], r["mask_rate"], r["model"], *imputation_setting(r), *_compute_cells(r, records)]
        rows.append([*run, _best_epoch(r), r["seed"], *_error_cells(r, ref), *_time_cells(r)])
    header = ["dataset", "mask rate", "model", *IMPUTATION_SETTING_HEADER, *_compute_header(records), "best epoch"]
    header += ["seed", *ERROR_HEADER, *TIME_HEADER]
    out = (
        winner_sentence(records)
        + " Paper columns: XCTFormer's published numbers (every row is compared with them).\n\n"
    )
    out += markdown_table(header, rows)
    averages, averaged = imputation_averages(records)
    if averages:
        out += "\n\nAverage over mask rates " + ", ".join(map(str, IMPUTATION_MASK_RATES)) + ". "
        out += winner_sentence(averaged) + "\n\n" + averages
    return out


IMPUTATION_SETTING_HEADER = ["protocol", "train stride", "eval stride", "epochs", "peak lr", "rolled back", "windows"]


def _best_epoch(record: dict):
    """The epoch whose weights were kept (1 = the first), so a run that stopped improving early shows."""
    best = (record.get("settings") or {}).get("best_epoch")
    return "-" if best is None else best + 1


def imputation_averages(records: list[dict]) -> tuple[str, list[dict]]:
    """The table of averages over the paper's mask rates, and the averages as records."""
    groups: dict[tuple, dict[float, dict]] = defaultdict(dict)
    for r in records:
        setting = tuple(imputation_setting(r)[:6])  # all but the windows
        groups[(r["dataset"], r["model"], setting, r["seed"])][r["mask_rate"]] = r
    rows, averaged = [], []
    for (dataset, model, setting, seed), by_rate in sorted(groups.items(), key=lambda item: str(item[0])):
        if not set(IMPUTATION_MASK_RATES) <= set(by_rate):
            continue
        mse, mae = (sum(by_rate[m][key] for m in IMPUTATION_MASK_RATES) / 4 for key in ("mse", "mae"))
        averaged.append({**by_rate[IMPUTATION_MASK_RATES[0]], "run": None, "mask_rate": "avg", "mse": mse, "mae": mae})
        published = paper.IMPUTATION.get(paper.dataset_key(dataset))
        ours = published and tuple(sum(published[m][i] for m in IMPUTATION_MASK_RATES) / 4 for i in (0, 1))
        best = paper.best_imputation_baseline(dataset)
        mixed = MIXED if _mixed([by_rate[m] for m in IMPUTATION_MASK_RATES], ("mask_rate",)) else ""
        baseline = f"{best[0]} ({paper.imputation_group(dataset)})" if best else "-"
        numbers = [*map(fmt, (mse, mae, ours and ours[0], ours and ours[1])), baseline]
        rows.append(
            [dataset, model + mixed, *setting, seed, *numbers, fmt(best and best[1][0]), fmt(best and best[1][1])]
        )
    if not rows:
        return "", []
    numbers = "avg MSE|avg MAE|paper XCTFormer MSE|paper XCTFormer MAE|paper best baseline|its MSE|its MAE".split("|")
    header = ["dataset", "model", *IMPUTATION_SETTING_HEADER[:6], "seed", *numbers]
    return markdown_table(header, rows), averaged


def _detection_setting(record: dict) -> str:
    settings = record.get("settings") or {}
    parts = []
    if "n_epochs" in settings:
        parts.append(f"epochs {settings.get('epochs_trained', '?')}/{settings['n_epochs']}")
    if record["model"] == "xctformer":
        parts.append(f"train stride {record.get('train_stride', 1)}")
    if record.get("arch"):
        parts.append(",".join(f"{k}={v}" for k, v in sorted(record["arch"].items())))
    return "; ".join(parts) or "-"


def anomaly_table(records: list[dict]) -> str:
    """One row per (dataset, protocol, model): the honest metrics first (F1 at the paper's
    threshold, AUC-PR, AUC-ROC, VUS-PR, VUS-ROC), then the point-adjusted F1 the paper reports,
    beside its number."""
    records = sorted(records, key=lambda r: (r["dataset"], r.get("protocol", "point"), -r["f1_adjusted"]))
    rows = []
    for r in records:
        ref = paper.ANOMALY.get(r["dataset"])
        published = ref and ref[2] / 100
        run = [r["dataset"], r.get("protocol", "point"), r["model"], _detection_setting(r), *_compute_cells(r, records)]
        run += [fmt(r.get("anomaly_ratio"), "g"), r.get("n_windows") or "-"]
        honest = (r["f1"], r["auc_pr"], r.get("auc_roc"), r.get("vus_pr"), r.get("vus_roc"))
        scores = map(fmt, (*honest, r["f1_adjusted"], published))
        rows.append([*run, *scores, *_time_cells(r)])
    header = (
        "dataset|protocol|model|settings|ratio %|test windows|F1|AUC-PR|AUC-ROC|VUS-PR|VUS-ROC|F1 point-adjusted|"
        "paper F1 (adjusted)"
    )
    header = header.split("|")
    header = [*header[:4], *_compute_header(records), *header[4:], *TIME_HEADER]
    note = (
        winner_sentence(records)
        + " "
        + (
            "F1 at the paper's threshold, AUC-PR, AUC-ROC, VUS-PR and VUS-ROC are the honest measures "
            "(TSB-AD finds VUS-PR the most reliable; `-` where a record predates it); point adjustment "
            "(the paper's F1) credits a whole anomaly segment when one step is flagged, and lets "
            "`window_mean`, which learns nothing, and `random`, uniform noise, score high.\n\n"
        )
    )
    return note + markdown_table(header, rows)


def seed_table(records: list[dict]) -> str:
    """Runs that differ only in their seed: mean, standard deviation (over seeds, ddof=1) and
    coefficient of variation of each metric, as the paper's seed table."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        run = dict(r.get("run") or {k: r.get(k) for k in ("task", "dataset", "horizon", "mask_rate", "model")})
        run.pop("seed", None)
        groups[json.dumps(run, sort_keys=True, default=str)].append(r)
    rows = []
    for cell in groups.values():
        seeds = sorted({r["seed"] for r in cell})
        if len(seeds) < 2:
            continue
        first = cell[0]
        metrics = TASKS[first["task"]].metrics
        where = first.get("horizon") or first.get("mask_rate") or first.get("protocol") or "-"
        stats = []
        for metric in metrics:
            values = np.array([r[metric] for r in cell], dtype=float)
            mean, std = values.mean(), values.std(ddof=1)
            stats += [f"{metric} {mean:.4f} ± {std:.4f}", f"{100 * std / abs(mean):.2f}" if mean else "-"]
        rows.append([first["task"], first["dataset"], where, first["model"], len(seeds), *stats])
    if not rows:
        return ""
    number_first = lambda cell: (0, cell, "") if isinstance(cell, (int, float)) else (1, 0, str(cell))  # noqa: E731
    rows.sort(key=lambda row: (str(row[0]), str(row[1]), number_first(row[2]), str(row[3])))
    header = "task|dataset|horizon / mask / protocol|model|seeds|metric 1 (mean ± std)|CV %|metric 2 (mean ± std)|CV %"
    header = header.split("|")
    return markdown_table(header, rows)


def full_report(records: list[dict]) -> str:
    sections = []
    for task in TASKS.values():
        mine = [r for r in records if r["task"] == task.name]
        if mine:
            sections.append(f"## {task.title.capitalize()}\n\n{globals()[task.table](mine)}")
    seeds = seed_table(records)
    if seeds:
        sections.append(f"## Seed robustness\n\n{spread_sentence(records)}\n\n{seeds}")
    ablation = ablation_table(records)
    if ablation:
        sections.append(f"## Ablation\n\n{ablation}")
    return "\n\n".join(sections) if sections else "No results yet."


def write_report(output: Path) -> tuple[str, list[Path]]:
    """Write ``report.md`` and the plots for everything in ``output``; return the text and the files."""
    records = ResultStore(output).latest()
    text = full_report(records)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    write_atomically(output / "report.md", lambda path: path.write_text("# xct-bench results\n\n" + text + "\n"))
    plots = plot_forecasts(output, records)
    return text, [output / "report.md", *plots]


def print_report(output: Path) -> int:
    """Write the folder's report and plots, print the report and name the files."""
    text, files = write_report(output)
    print(text)
    print(f"\nResults: {output / 'results.jsonl'}")
    for path in files:
        print(f"Wrote {path}")
    return 0
