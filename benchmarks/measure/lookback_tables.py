"""docs/forecasting.md's look-back tables (issue 84): XCTFormer with the paper's recipe and with
the searched one, Darts' baselines at each look-back they ran, and the published frontier, as
average test MSE over the four horizons on ETT."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

from benchmarks.measure import compact_table
from xct_estimators.bench.paper import HORIZONS, LOOK_BACK_FRONTIER
from xct_estimators.nn.presets import searched_preset

DATASETS = ("ETTh1", "ETTh2", "ETTm1", "ETTm2")
#: The record folders (under benchmarks/results/cpu): the paper-recipe runs, the baselines at longer
#: look-backs, and the searched recipe's final runs.
FOLDERS = ("forecast-ett", "lookback-baselines", "lookback-final")
BASELINES = {"dlinear": "DLinear", "nlinear": "NLinear", "tide": "TiDE", "tsmixer": "TSMixer"}
XCTFORMER = {"xctformer": "XCTFormer, paper recipe", "xctformer_searched": "XCTFormer, searched recipe"}
#: The record of the search behind each searched recipe (``xct_estimators.nn.presets.SEARCHED``).
SEARCH_RECORDS = {
    ("ETTh1", 96): "benchmarks/results/cpu/lookback-search/tune_xctformer-forecast-ETTh1-H96-lookback.json",
    ("ETTh1", 336): "benchmarks/results/cpu/lookback-search/tune_xctformer-forecast-ETTh1-H336-lookback.json",
    ("ETTh2", 96): "benchmarks/results/cpu/lookback-search/tune_xctformer-forecast-ETTh2-H96-lookback.json",
}
#: The issue's goal for the searched recipe's average MSE.
GOALS = {"ETTh1": 0.405, "ETTh2": 0.330, "ETTm1": 0.345, "ETTm2": 0.250}


#: The look-backs every baseline is shown at ("not run" where it has not run there).
BASELINE_LOOK_BACKS = (96, 336, 512)
PAPER_LOOK_BACK = 96
SEARCHED_MODEL = "xctformer_searched"
#: Settings every row of one (dataset, model) must share, or its seeds would not be alike.
_ALIKE = ("epochs", "precision", "compile", "exact_fp32")


def _rows(results: Path) -> list[dict]:
    rows = []
    for folder in FOLDERS:
        path = results / "cpu" / folder / "results.jsonl"
        if path.is_file():
            rows += [{**json.loads(line), "_folder": folder} for line in path.read_text().splitlines() if line.strip()]
    rows = [
        row
        for row in rows
        if row["task"] == "forecast" and row["dataset"] in DATASETS and row.get("features") == "M"
        and not row["run"].get("covariates") and row["model"] in {**BASELINES, **XCTFORMER}
        and (row["model"] != "xctformer" or row["seq_len"] == PAPER_LOOK_BACK)
        and (row["model"] != SEARCHED_MODEL or _is_current_recipe(row))
    ]  # fmt: skip
    _check_alike(rows)
    return rows


def _is_current_recipe(row: dict) -> bool:
    """Whether a searched-recipe row ran today's recipe for its dataset and horizon (rows of an
    earlier recipe stay in the record, out of the table)."""
    try:
        params = searched_preset(row["dataset"], row["horizon"]).estimator_params("input_chunk_length")
    except ValueError:
        return False
    settings = row["run"]["settings"]
    return all(settings[key] == value for key, value in params.items() if key in settings)


def _check_alike(rows: list[dict]) -> None:
    kinds = defaultdict(set)
    for row in rows:
        kinds[row["dataset"], row["model"]].add(tuple(row.get(key, False) for key in _ALIKE))
    mixed = {key: sorted(found, key=str) for key, found in kinds.items() if len(found) > 1}
    if mixed:
        raise ValueError(
            f"Rows of one model ran with other {', '.join(_ALIKE)}: {mixed}. Keep such runs in another folder "
            f"than {', '.join(FOLDERS)}."
        )


def _look_back(row: dict):
    """What a row's cell is keyed by: its input length, or "searched" (each horizon its recipe's)."""
    return "searched" if row["model"] == SEARCHED_MODEL else row["seq_len"]


def averages(rows: list[dict]) -> dict[tuple, list[float]]:
    """(dataset, model, look-back) -> the average MSE over the four horizons of every seed that ran
    all four (a later row of the same run replaces an earlier one)."""
    latest = {(r["dataset"], r["model"], _look_back(r), r["seed"], r["horizon"]): r["mse"] for r in rows}
    by_seed = defaultdict(dict)
    for (dataset, model, look_back, seed, horizon), value in latest.items():
        by_seed[dataset, model, look_back, seed][horizon] = value
    result = defaultdict(list)
    for (dataset, model, look_back, _seed), per_horizon in sorted(by_seed.items(), key=str):
        if all(h in per_horizon for h in HORIZONS):
            result[dataset, model, look_back].append(statistics.mean(per_horizon[h] for h in HORIZONS))
    return dict(result)


def _cell(values: list[float]) -> str:
    if not values:
        return "not run"
    spread = f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.3f}{spread} ({len(values)})"


def _searched_cell(means: dict, dataset: str) -> str:
    """The searched recipe's cell, with its input length at each horizon (e.g. "336/336/512/512")."""
    try:
        lengths = [searched_preset(dataset, h).seq_len for h in HORIZONS]
    except ValueError:
        return "no recipe yet"
    inputs = str(lengths[0]) if len(set(lengths)) == 1 else "/".join(map(str, lengths))
    return f"{_cell(means.get((dataset, SEARCHED_MODEL, 'searched'), []))}, input {inputs}"


def _xctformer_cells(means: dict) -> tuple[list[str], list[str]]:
    """Per dataset: the paper recipe's cell and the searched recipe's."""
    paper = [_cell(means.get((d, "xctformer", PAPER_LOOK_BACK), [])) for d in DATASETS]
    return paper, [_searched_cell(means, d) for d in DATASETS]


def frontier_table(results: Path, root: Path) -> str:
    """One column per dataset: XCTFormer's two recipes, the best baseline at its best look-back, the
    published frontier and the goal."""
    rows = _rows(results)
    means = averages(rows)
    paper, searched = _xctformer_cells(means)
    lines = [[f"{XCTFORMER['xctformer']} (input {PAPER_LOOK_BACK})", *paper], [XCTFORMER[SEARCHED_MODEL], *searched]]
    cells = []
    for dataset in DATASETS:
        found = [(statistics.mean(v), m, s) for (d, m, s), v in means.items() if d == dataset and m in BASELINES]
        if not found:
            cells.append("not run")
            continue
        _, model, look_back = min(found)
        tried = sorted({s for (d, m, s) in means if d == dataset and m == model})
        cells.append(
            f"{BASELINES[model]}, input {look_back} (of {', '.join(map(str, tried))}): "
            f"{_cell(means[dataset, model, look_back])}"
        )
    lines.append(["best Darts baseline at its best look-back", *cells])
    lines += [[f"{name} (published)", *(f"{by[d]:.3f}" for d in DATASETS)] for name, by in LOOK_BACK_FRONTIER.items()]
    lines.append(["goal of the searched recipe", *(f"{GOALS[d]:.3f}" for d in DATASETS)])
    table = compact_table(["average MSE, horizons 96-720", *DATASETS], lines)
    lead = (
        "A baseline's best look-back: the lowest test average among the look-backs it ran (generous to it; the "
        "searched recipe's look-back was chosen on validation). "
    )
    published = (
        " Published rows: the papers' own runs and recipes, as issue 84 lists them "
        "(`xct_estimators.bench.paper.LOOK_BACK_FRONTIER`; ~: its test drops the last batch)."
    )
    return table + _source(rows, root, lead, published)


def look_back_table(results: Path, root: Path) -> str:
    """Every model at every look-back it is shown at: the evidence for "best look-back"."""
    rows = _rows(results)
    means = averages(rows)
    paper, searched = _xctformer_cells(means)
    lines = [[XCTFORMER["xctformer"], PAPER_LOOK_BACK, *paper], [XCTFORMER[SEARCHED_MODEL], "searched", *searched]]
    for model, label in BASELINES.items():
        ran = {s for (_, m, s) in means if m == model}
        for look_back in sorted(ran | set(BASELINE_LOOK_BACKS)):
            lines.append([label, look_back, *(_cell(means.get((d, model, look_back), [])) for d in DATASETS)])
    return compact_table(["model", "input", *DATASETS], lines) + _source(rows, root)


def _source(rows: list[dict], root: Path, lead: str = "", published: str = "") -> str:
    folders = sorted({row["_folder"] for row in rows})
    devices = sorted({row["device"]["cpu"] for row in rows})
    records = ", ".join(f"`benchmarks/results/cpu/{folder}/results.jsonl`" for folder in folders)
    return (
        f"\n{lead}Average test MSE over horizons 96, 192, 336 and 720 on standardised data, every test window "
        "kept; mean ± sd over seeds (their count in brackets), a seed counted only where it ran all four "
        f"horizons. Ours: {records} (on {', '.join(devices)}; each row names its commit and command).{published}\n"
    )


def recipes_table(results: Path, root: Path) -> str:
    """The searched recipes (``xct_estimators.nn.presets.SEARCHED``), each with its search's budget
    and outcome from the record it names."""
    from xct_estimators.nn.presets import SEARCHED

    if not SEARCHED:
        return "No searched recipe yet.\n"
    lines = []
    for (dataset, horizon), preset in sorted(SEARCHED.items()):
        record = SEARCH_RECORDS[dataset, horizon]
        study = json.loads((root / record).read_text())
        trials = study["trials"]
        used = [h for h in HORIZONS if searched_preset(dataset, h) is preset]
        dropouts = f"{preset.dropout}/{preset.fc_dropout}/{preset.attn_dropout}"
        lines.append([
            dataset, horizon, "/".join(map(str, used)), preset.seq_len, f"{preset.patch_len}/{preset.stride}",
            preset.d_model, preset.n_heads, preset.e_layers, dropouts,
            preset.learning_rate, f"{trials['complete']} + {trials['pruned']} pruned", f"{study['best_value']:.3f}",
            f"`{record}`",
        ])  # fmt: skip
    header = ["dataset", "searched at", "used for", "input", "patch/stride", "d_model", "heads", "layers",
              "dropouts", "lr", "trials", "best val. MSE", "record"]  # fmt: skip
    return compact_table(header, lines) + (
        "\nEach recipe is the best trial of its search (validation MSE at its best epoch, on the validation split "
        "only); a horizon takes the recipe searched at the nearest horizon. Batch 32, 10 epochs, d_ff = 2 d_model, "
        "the paper's training recipe otherwise.\n"
    )
