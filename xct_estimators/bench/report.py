"""A results folder's report: each task's table beside the paper's numbers, the seed and ablation
tables, written as ``report.md`` with the forecast plots (:mod:`.forecast_plots`)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from .ablation_report import ablation_table
from .comparison import spread_sentence
from .forecast_plots import plot_forecasts
from .record import Record
from .results import ResultStore
from .runs import write_atomically
from .tables import markdown_table
from .tasks import TASKS


def seed_table(records: list[Record]) -> str:
    """Runs that differ only in their seed: mean, standard deviation (over seeds, ddof=1) and
    coefficient of variation of each metric, as the paper's seed table."""
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        run = dict(r.run or {k: getattr(r, k, None) for k in ("task", "dataset", "horizon", "mask_rate", "model")})
        run.pop("seed", None)
        groups[json.dumps(run, sort_keys=True, default=str)].append(r)
    rows = []
    for cell in groups.values():
        seeds = sorted({r.seed for r in cell})
        if len(seeds) < 2:
            continue
        first = cell[0]
        metrics = TASKS[first.task].metrics
        where = first.where
        stats = []
        for metric in metrics:
            values = np.array([getattr(r, metric) for r in cell], dtype=float)
            mean, std = values.mean(), values.std(ddof=1)
            stats += [f"{metric} {mean:.4f} ± {std:.4f}", f"{100 * std / abs(mean):.2f}" if mean else "-"]
        covariates = getattr(first, "covariates", None)
        model = f"{first.model} +{covariates}" if covariates else first.model
        rows.append([first.task, first.dataset, where, model, len(seeds), *stats])
    if not rows:
        return ""
    number_first = lambda cell: (0, cell, "") if isinstance(cell, (int, float)) else (1, 0, str(cell))  # noqa: E731
    rows.sort(key=lambda row: (str(row[0]), str(row[1]), number_first(row[2]), str(row[3])))
    header = "task|dataset|horizon / mask / protocol|model|seeds|metric 1 (mean ± std)|CV %|metric 2 (mean ± std)|CV %"
    header = header.split("|")
    return markdown_table(header, rows)


def full_report(records: list[Record]) -> str:
    sections = []
    for task in TASKS.values():
        mine = [r for r in records if r.task == task.name]
        if mine:
            sections.append(f"## {task.title.capitalize()}\n\n{task.tabulate(mine)}")
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
