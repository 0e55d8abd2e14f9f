"""The paper's ablation tables from the records: each variant's averages beside the paper's, and
"XCTFormer vs others" computed by the paper's rule."""

from __future__ import annotations

from collections import defaultdict

from ..nn.presets import IMPUTATION_MASK_RATES
from . import paper
from .models import ABLATION_MODELS
from .report import _fmt, _forecast_setting, _imputation_setting, markdown_table

ABLATION_VARIANTS = ("xctformer", *ABLATION_MODELS)


def _ablation_averages(records: list[dict], task: str) -> dict[str, dict[str, tuple]]:
    """variant -> dataset -> its metrics averaged over the task's settings (horizons or mask
    rates; anomaly detection: the tslib protocol's point-adjusted and plain F1), complete sets
    only, over the seeds the variants were run with (the full model's other seeds are left out)."""
    mine = [r for r in records if r["task"] == task and r["model"] in ABLATION_VARIANTS]
    if task == "detect":
        mine = [r for r in mine if r.get("protocol") == "tslib"]
    seeds = {r["seed"] for r in mine if r["model"] != "xctformer"}
    mine = [r for r in mine if r["seed"] in seeds]
    per_seed: dict[tuple, list[tuple]] = defaultdict(list)
    if task == "detect":
        for r in mine:
            per_seed[(r["model"], r["dataset"])].append((100 * r["f1_adjusted"], 100 * r["f1"]))
    else:
        axis, full_set = ("horizon", paper.HORIZONS) if task == "forecast" else ("mask_rate", IMPUTATION_MASK_RATES)
        groups: dict[tuple, dict] = defaultdict(dict)
        for r in mine:
            setting = _forecast_setting(r) if task == "forecast" else tuple(_imputation_setting(r)[:4])
            groups[(r["model"], r["dataset"], setting, r["seed"])][r[axis]] = r
        for (model, dataset, _, _), cells in groups.items():
            if set(full_set) <= set(cells):
                chosen = [cells[x] for x in full_set]
                means = tuple(sum(c[k] for c in chosen) / len(chosen) for k in ("mse", "mae"))
                per_seed[(model, dataset)].append(means)
    averages: dict[str, dict[str, tuple]] = defaultdict(dict)
    for (model, dataset), values in per_seed.items():
        averages[model][dataset] = tuple(sum(v[i] for v in values) / len(values) for i in (0, 1))
    return averages


_ABLATION_TASKS = {
    "forecast": ("forecasting", paper.ABLATION_FORECAST, paper.ablation_gap, ("avg MSE", "avg MAE")),
    "impute": ("imputation", paper.ABLATION_IMPUTE, paper.ablation_gap, ("avg MSE", "avg MAE")),
    "detect": (
        "anomaly detection (tslib)",
        paper.ABLATION_DETECT,
        paper.detection_ablation_gap,
        ("F1 adjusted %", "F1 %"),
    ),
}


def ablation_table(records: list[dict]) -> str:
    """The paper's ablation tables, per task: each variant's averages per dataset beside the
    paper's, then "XCTFormer vs others (%)" over the datasets measured, ours beside the paper's
    (computed by the same rule from its per-dataset table, on the same datasets)."""
    sections = []
    for task, (title, published, gap, names) in _ABLATION_TASKS.items():
        averages = _ablation_averages(records, task)
        variants = [m for m in ABLATION_VARIANTS if m in averages and m != "xctformer"]
        if "xctformer" not in averages or not variants:
            continue
        rows = []
        for model in ("xctformer", *variants):
            for dataset, values in sorted(averages[model].items()):
                ref = published.get(model, {}).get(paper.dataset_key(dataset))
                ref = ref if isinstance(ref, tuple) else (ref, None)
                rows.append([model, dataset, *(_fmt(v) for v in values), _fmt(ref[0]), _fmt(ref[1])])
        header = ["variant", "dataset", *names, f"paper {names[0]}", f"paper {names[1]}"]
        text = f"### {title}\n\n" + markdown_table(header, rows)
        pick = (lambda v: v[0]) if task == "detect" else (lambda v: v)
        full = {paper.dataset_key(d): pick(v) for d, v in averages["xctformer"].items()}
        gaps = []
        for model in variants:
            ours = {paper.dataset_key(d): pick(v) for d, v in averages[model].items()}
            same = {d: published[model][d] for d in ours if d in published.get(model, {})}
            full_published = {d: published["xctformer"][d] for d in same}
            theirs = gap(full_published, same) if same else None
            gaps.append(
                [model, ", ".join(sorted(set(full) & set(ours))), _fmt(gap(full, ours), "+.1f"), _fmt(theirs, "+.1f")]
            )
        text += "\n\nXCTFormer vs others (%, positive = the variant is worse):\n\n"
        sections.append(text + markdown_table(["variant", "datasets", "ours %", "paper %"], gaps))
    return "\n\n".join(sections)
