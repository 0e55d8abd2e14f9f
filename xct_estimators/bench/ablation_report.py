"""The paper's ablation tables from the records: each variant's averages beside the paper's, and
"XCTFormer vs others" computed by the paper's rule."""

from __future__ import annotations

from collections import defaultdict

from . import paper
from .models import ABLATION_MODELS
from .record import Record
from .tables import fmt, markdown_table
from .tasks import TASKS, Task

ABLATION_VARIANTS = ("xctformer", *ABLATION_MODELS)


def _ablation_averages(records: list[Record], task: Task) -> dict[str, dict[str, tuple]]:
    """variant -> dataset -> its two metrics averaged over the task's settings (horizons or mask
    rates, complete sets only; anomaly detection: one protocol's runs), over the seeds the variants
    were run with (the full model's other seeds are left out)."""
    spec = task.ablation
    mine = [r for r in records if r.task == task.name and r.model in ABLATION_VARIANTS]
    mine = [r for r in mine if spec.protocol in (None, r.where)]
    seeds = {r.seed for r in mine if r.model != "xctformer"}
    mine = [r for r in mine if r.seed in seeds]
    per_seed: dict[tuple, list[tuple]] = defaultdict(list)
    if not spec.averaged_over:
        for r in mine:
            per_seed[(r.model, r.dataset)].append(tuple(spec.scale * getattr(r, k) for k in task.metrics))
    groups: dict[tuple, dict] = defaultdict(dict)
    for r in mine if spec.averaged_over else ():
        groups[(r.model, r.dataset, tuple(getattr(r, f) for f in spec.same_run), r.seed)][r.where] = r
    for (model, dataset, _, _), cells in groups.items():
        if set(spec.averaged_over) <= set(cells):
            chosen = [cells[x] for x in spec.averaged_over]
            per_seed[(model, dataset)].append(
                tuple(sum(getattr(c, k) for c in chosen) / len(chosen) for k in task.metrics)
            )
    averages: dict[str, dict[str, tuple]] = defaultdict(dict)
    for (model, dataset), values in per_seed.items():
        averages[model][dataset] = tuple(sum(v[i] for v in values) / len(values) for i in (0, 1))
    return averages


def ablation_table(records: list[Record]) -> str:
    """The paper's ablation tables, per task: each variant's averages per dataset beside the
    paper's, then "XCTFormer vs others (%)" over the datasets measured, ours beside the paper's
    (computed by the same rule from its per-dataset table, on the same datasets)."""
    sections = []
    for task in TASKS.values():
        spec = task.ablation
        published, gap, names = spec.published, spec.gap, spec.columns
        averages = _ablation_averages(records, task)
        variants = [m for m in ABLATION_VARIANTS if m in averages and m != "xctformer"]
        if "xctformer" not in averages or not variants:
            continue
        rows = []
        for model in ("xctformer", *variants):
            for dataset, values in sorted(averages[model].items()):
                ref = published.get(model, {}).get(paper.dataset_key(dataset))
                ref = ref if isinstance(ref, tuple) else (ref, None)
                rows.append([model, dataset, *(fmt(v) for v in values), fmt(ref[0]), fmt(ref[1])])
        header = ["variant", "dataset", *names, f"paper {names[0]}", f"paper {names[1]}"]
        text = f"### {spec.title}\n\n" + markdown_table(header, rows)
        pick = (lambda v: v) if spec.averaged_over else (lambda v: v[0])  # the paper's gap rule's input
        full = {paper.dataset_key(d): pick(v) for d, v in averages["xctformer"].items()}
        gaps = []
        for model in variants:
            ours = {paper.dataset_key(d): pick(v) for d, v in averages[model].items()}
            same = {d: published[model][d] for d in ours if d in published.get(model, {})}
            full_published = {d: published["xctformer"][d] for d in same}
            theirs = gap(full_published, same) if same else None
            gaps.append(
                [model, ", ".join(sorted(set(full) & set(ours))), fmt(gap(full, ours), "+.1f"), fmt(theirs, "+.1f")]
            )
        text += "\n\nXCTFormer vs others (%, positive = the variant is worse):\n\n"
        sections.append(text + markdown_table(["variant", "datasets", "ours %", "paper %"], gaps))
    return "\n\n".join(sections)
