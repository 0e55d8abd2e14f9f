"""The results page in words: where XCTFormer helps, and what covariates change.

Everything here is computed from the records a table shows, so the words change with them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .catalog import NAIVE, SEARCHED_MODEL
from .models import ABLATION_MODELS
from .record import Record
from .tasks import TASKS, Measure

#: The paper's model, with either input fill of the imputation benchmark, or the searched recipe.
XCTFORMER = ("xctformer", "xctformer_linear", "xctformer_masked", SEARCHED_MODEL)
#: Baselines that train nothing and draw nothing at random: one run gives their value for every seed.
UNTRAINED = (NAIVE, "linear", "sktime_imputer", "window_mean", "interpolation")
#: Fields of a record that make two models' numbers comparable: the same data, task and protocol.
_SAME_TEST = (
    *("task", "dataset", "data_sha256", "horizon", "mask_rate", "protocol"),
    *("features", "seq_len", "eval_stride", "covariates"),
)


def compute_label(record: Record) -> str:
    """How the record's network computed, when not the default float32 eager run."""
    return ", ".join([record.precision] * (record.precision != "32") + ["compiled"] * bool(record.compile))


def _label(record: Record) -> str:
    compute = compute_label(record)
    return f"{record.model} ({compute})" if compute else record.model


def _base(label: str) -> str:
    return label.split(" (")[0]


def _test(record: Record) -> str:
    run = record.run or {}
    return json.dumps({k: run.get(k, getattr(record, k, None)) for k in _SAME_TEST}, sort_keys=True, default=str)


def _trained_as(record: Record) -> dict:
    """The settings a record's model ran with, less the seed (a seeded baseline such as ``random``
    records it there): seeds of one setting are pooled."""
    settings = dict((record.run or {}).get("settings") or {})
    settings.pop("seed", None)
    return settings


def _apart(label: str, settings: dict, others: list[dict]) -> str:
    """``label`` with the settings in which this model's runs of one test differ, so that runs of
    different settings are never pooled as seeds of one."""
    differ = sorted(k for k in set(settings).union(*others) if any(o.get(k) != settings.get(k) for o in others))
    named = ", ".join(f"{k} {settings[k] if k in settings else 'default'}" for k in differ)
    return f"{label[:-1]}, {named})" if label.endswith(")") else f"{label} ({named})"


def _compared(records: list[Record]) -> dict[str, dict[str, list[float]]]:
    """Test -> model -> the measure over seeds (one value per seed, the latest record's), for the
    paper's model and the baselines (not the ablations). A model whose runs of one test differ in
    settings is listed once per setting, named by what differs."""
    values: dict[str, dict[str, dict[str, dict[int, float]]]] = defaultdict(lambda: defaultdict(dict))
    trained_as: dict[str, dict] = {}
    for r in records:
        value = getattr(r, TASKS[r.task].measure.key)
        if value is None or r.model in ABLATION_MODELS:
            continue
        settings = _trained_as(r)
        key = json.dumps(settings, sort_keys=True, default=str)
        trained_as[key] = settings
        values[_test(r)][_label(r)].setdefault(key, {})[r.seed] = float(value)
    found: dict[str, dict[str, list[float]]] = {}
    for test, models in values.items():
        found[test] = {}
        for label, by_setting in models.items():
            for key, seeds in by_setting.items():
                others = [trained_as[k] for k in by_setting if k != key]
                found[test][_apart(label, trained_as[key], others) if others else label] = list(seeds.values())
    return found


def _best(models: dict[str, list[float]], measure: Measure, among) -> Optional[str]:
    sign = 1 if measure.lower_is_better else -1
    candidates = [m for m in models if among(m)]
    return min(candidates, key=lambda m: (sign * np.mean(models[m]), m)) if candidates else None


@dataclass(frozen=True)
class Verdict:
    task: str
    dataset: str
    setting: str
    model: str
    ours: tuple[float, float, int]  # mean, std over seeds, seeds
    other_model: str
    other: tuple[float, float, int]
    outcome: str  # "wins", "ties", "loses" or "not counted"
    change: float  # relative: negative is better for a lower-is-better measure


def _order(record: Record) -> tuple:
    where = record.where
    return record.task, record.dataset, where if isinstance(where, (int, float)) else 0, _test(record)


def _stats(values: list[float]) -> tuple[float, float, int]:
    array = np.asarray(values)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else 0.0, len(array)


def verdicts(records: list[Record]) -> list[Verdict]:
    """XCTFormer against the best baseline of the same test, by each task's measure. A win or a loss
    counts only when the gap between the means is larger than the larger standard deviation over
    seeds, and only with two or more seeds of each (one run of an untrained baseline stands for
    any seed); otherwise "not counted"."""
    found = []
    by_test = {_test(r): r for r in records}
    for test, models in sorted(_compared(records).items(), key=lambda item: _order(by_test[item[0]])):
        first = by_test[test]
        measure = TASKS[first.task].measure
        other_model = _best(models, measure, lambda m: _base(m) not in XCTFORMER)
        if other_model is None:
            continue
        other = _stats(models[other_model])
        for model in sorted(m for m in models if _base(m) in XCTFORMER):
            ours = _stats(models[model])
            gap = ours[0] - other[0]
            better = gap < 0 if measure.lower_is_better else gap > 0
            seeded = ours[2] > 1 and (other[2] > 1 or _base(other_model) in UNTRAINED)
            if not seeded:
                outcome = "not counted"
            elif abs(gap) <= max(ours[1], other[1]):
                outcome = "ties"
            else:
                outcome = "wins" if better else "loses"
            change = gap / abs(other[0]) if other[0] else float("nan")
            found.append(
                Verdict(first.task, first.dataset, first.describe(), model, ours, other_model, other, outcome, change)
            )
    return found


def _cell(stats: tuple[float, float, int]) -> str:
    mean, std, seeds = stats
    return f"{mean:.4f} ± {std:.4f} ({seeds})" if seeds > 1 else f"{mean:.4f} (1)"


def helps_section(folders: dict[str, list[Record]], markdown_table) -> str:
    """The page's "When XCTFormer helps" section: a summary sentence and a row for each comparison
    it ties or loses, within each record folder (a folder is one benchmark run's records)."""
    found = [(folder, v) for folder, records in folders.items() for v in verdicts(records)]
    if not found:
        return ""
    counts = {outcome: sum(v.outcome == outcome for _, v in found) for outcome in ("wins", "ties", "loses")}
    uncounted = len(found) - sum(counts.values())
    summary = (
        f"Of {len(found)} comparisons of XCTFormer with the best other model of the same run, it wins "
        f"{counts['wins']}, ties {counts['ties']} and loses {counts['loses']}; {uncounted} rest on a single "
        "seed and are not counted"
    )
    summary += (
        ": one seed's difference is not a comparison; rerun with `--seeds 2021,2022,2023` to count them."
        if uncounted
        else "."
    )
    rows = []
    for folder, v in (item for item in found if item[1].outcome in ("ties", "loses")):
        measure = TASKS[v.task].measure
        rows.append([
            f"`{folder}`", v.dataset, v.setting, measure.label, v.model, _cell(v.ours), v.other_model, _cell(v.other),
            f"{100 * v.change:+.1f}%", v.outcome,
        ])  # fmt: skip
    header = ["records", "dataset", "setting", "measure", "XCTFormer", "mean ± std (seeds)", "best other",
              "mean ± std (seeds)", "difference", "XCTFormer"]  # fmt: skip
    rule = (
        "Each row below is a comparison it ties or loses (the tables further down show every cell, each "
        "row's best mean in bold). A comparison sets XCTFormer beside the baseline that scored best on the "
        "same test (MSE for forecasting and imputation, lower is better; VUS-PR for detection, higher is "
        "better). A win or a loss counts only when the difference of the means is larger than the larger standard "
        "deviation over seeds (`--seeds`), with at least two seeds of each model; one run of a baseline "
        "that trains nothing stands for every seed. Runs of a model that differ in settings are never "
        "pooled as seeds: each setting is a row of its own, named by what differs."
    )
    if not rows:  # nothing it ties or loses: the sentence says it all
        return "\n".join(["## When XCTFormer helps", "", summary])
    return "\n".join(["## When XCTFormer helps", "", summary, "", rule, "", markdown_table(header, rows)])


def covariate_sentence(records: list[Record]) -> str:
    """One sentence: how much each model's measure changes with covariates against the same
    runs without them (mean over seeds and tests), for forecasting's ``records``."""
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.model not in ABLATION_MODELS:
            values[r.dataset, r.horizon, _label(r)][r.covariates or "none"].append(r.mse)
    changes: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (dataset, _, model), modes in values.items():
        for mode, with_them in modes.items():
            if mode != "none" and modes.get("none"):
                without = float(np.mean(modes["none"]))
                changes[model, f"{mode} on {dataset}"].append(float(np.mean(with_them)) / without - 1)
    if not changes:
        return ""
    parts = [f"`{model}` {100 * np.mean(c):+.1f}% ({what})" for (model, what), c in sorted(changes.items())]
    return "MSE with covariates against the same runs without them: " + ", ".join(parts) + "."
