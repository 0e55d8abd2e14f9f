"""The anomaly-scoring ablation in docs/sktime.md, generated from the detection records: pooled
(``point``) against per-entity (``entity``) protocol, each scoring (``none/mean``, the paper's, and
the standardised ones), the window length, beside the floors (``random``, ``window_mean``),
Darts' scorers and TSB-AD's leaderboard.

The records come from ``xct-bench detect`` (their commands are in the table's footnote);
``python -m benchmarks.docs_tables`` calls :func:`table`.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

RECORDS = ("detect-entity", "detect-window", "detect-smoothed", "detect-continuous")
PAPER_SCORING = "none/mean"


def _spread(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.3f} (1 seed)"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def _runs(results: Path) -> tuple[dict, list[Path]]:
    """(dataset, protocol, model, scoring, window, epochs) -> {seed: record}, and the record files read."""
    runs, paths = defaultdict(dict), []
    for name in RECORDS:
        path = results / "cpu" / name / "results.jsonl"
        if not path.is_file():
            continue
        paths.append(path)
        for line in path.read_text().splitlines():
            record = json.loads(line)
            window = record["settings"].get("window_length")  # reconstructors only: the others score their own way
            scoring = record["settings"].get("scoring", PAPER_SCORING) if window else "-"
            epochs = record["settings"].get("n_epochs") if window else None
            key = (record["dataset"], record["protocol"], record["model"], scoring, window, epochs)
            runs[key][record["seed"]] = record
    return runs, paths


def table(results: Path, root: Path) -> str:
    """One row per (dataset, protocol, model, scoring, window, epochs): VUS-PR and AUC-PR over seeds."""
    from benchmarks.measure import compact_table
    from xct_estimators.bench.paper import TSB_AD_VUS_PR
    from xct_estimators.bench.results_page import distinct_commands

    runs, paths = _runs(results)
    rows = []
    order = lambda key: (key[0], key[1] != "point", key[2] != "xctformer", key[2], key[4] or 0, key[3], key[5] or 0)  # noqa: E731
    for key in sorted(runs, key=order):
        dataset, protocol, model, scoring, window, epochs = key
        seeds = runs[key]
        vus = [r["vus_pr"] for r in seeds.values()]
        auc = [r["auc_pr"] for r in seeds.values()]
        rows.append(
            [dataset, protocol, f"`{model}`", scoring, window or "-", epochs or "-", _spread(vus), _spread(auc)]
        )
    for model, board in TSB_AD_VUS_PR.items():
        for dataset, value in board.items():
            rows.append([dataset, "TSB-AD's series", f"TSB-AD {model}", "-", "-", "-", f"{value:.3f}", "-"])
    rows.sort(key=lambda row: row[0])  # stable: each dataset's runs, then TSB-AD's rows
    header = ["dataset", "protocol", "model", "scoring", "window", "epochs", "VUS-PR (mean ± sd)", "AUC-PR (mean ± sd)"]
    ran = [SimpleNamespace(command=r["command"], seed=r["seed"]) for seeds in runs.values() for r in seeds.values()]
    commands = distinct_commands(ran)
    commits = sorted({r["git_commit"][:7] for seeds in runs.values() for r in seeds.values()})
    where = ", ".join(f"`{path.relative_to(root).as_posix()}`" for path in paths)
    source = (
        f"\nSeeds per row as shown; commit(s) {', '.join(commits)}; records: {where}; commands: "
        + "; ".join(f"`{command}`" for command in commands)
        + ". TSB-AD's rows are its leaderboard on its own MSL/SMAP series (docs/benchmarks.md says how they "
        "differ from ours).\n"
    )
    return compact_table(header, rows) + source
