"""A results page's tables: per task, one row per (dataset, where, variant) and one column per
model, each cell the mean ± standard deviation over seeds, beside the published number. Variants
are the run settings that differ between runs of one model on one cell (covariates, a scoring, a
window length); a run without such a setting (a baseline) stands in every variant's row."""

from __future__ import annotations

import dataclasses
import itertools
import json
import statistics
from collections import defaultdict
from typing import Any, Optional

from .record import Record
from .settings import default
from .tables import fmt, markdown_table
from .tasks import TASKS

METRIC_NAMES = {
    "f1_adjusted": "point-adjusted F1",
    "f1": "F1",
    "vus_pr": "VUS-PR",
    "auc_pr": "AUC-PR",
    "auc_roc": "AUC-ROC",
    "vus_roc": "VUS-ROC",
}
_NOT_VARIANTS = ("task", "dataset", "model", "seed")


def _flat(record: Record, setting: str) -> dict[str, str]:
    """The run's settings as flat ``name -> JSON`` (the model's own settings inside), seed aside."""
    run = dict(record.run or {})
    own = run.pop("settings", None) or {}
    flat = {k: v for k, v in run.items() if k not in (*_NOT_VARIANTS, setting)}
    flat.update({k: v for k, v in own.items() if k != "seed"})
    return {k: json.dumps(v, sort_keys=True, default=str) for k, v in flat.items()}


def _variants(records: list[Record], flats: list[dict[str, str]]) -> list[str]:
    """The settings whose values differ between runs of one model on one (dataset, where), a
    setting one run records and another does not among them."""
    groups: dict[tuple, list[dict[str, str]]] = defaultdict(list)
    for r, flat in zip(records, flats, strict=True):
        groups[(r.dataset, str(r.where), r.model)].append(flat)
    varying = set()
    for runs in groups.values():
        for name in set().union(*runs):
            if len({run.get(name) for run in runs}) > 1:
                varying.add(name)
    return sorted(varying)


def _rows(variants: list[dict[str, str]]) -> list[tuple]:
    """The rows of one (dataset, where): the runs' variants joined where they share settings and
    agree on them (a window-mean run beside the XCTFormer runs of its window length; runs with no
    setting in common stay apart, not crossed), the largest kept; every run stands in each row that
    holds its variant."""
    rows = {tuple(sorted(v.items())) for v in variants}
    grown = True
    while grown:
        grown = False
        for a, b in itertools.combinations(sorted(rows), 2):
            first, second = dict(a), dict(b)
            shared = first.keys() & second.keys()
            if shared and all(first[k] == second[k] for k in shared):
                joined = tuple(sorted({**first, **second}.items()))
                grown |= joined not in rows
                rows.add(joined)
    return [row for row in rows if not any(set(row) < set(other) for other in rows)]


def _default(task, name: str) -> str:
    """The value a run records no ``name`` for: its command's default (JSON)."""
    field = task.settings.__dataclass_fields__.get(name)
    value = None if field is None else default(field)
    value = value[0] if isinstance(value, list) and len(value) == 1 else value
    return json.dumps("default" if value is None or value is dataclasses.MISSING else value)


def _cell(values: list[float]) -> str:
    mean = statistics.fmean(values)
    return f"{mean:.3f} ± {statistics.stdev(values):.3f}" if len(values) > 1 else f"{mean:.3f}"


def _label(variant: dict[str, str]) -> str:
    return ", ".join(f"{name}={json.loads(value)}" for name, value in variant.items()) or "-"


def summary_table(
    records: list[Record], metric: str, context: Optional[list[Record]] = None, published_only: bool = False
) -> str:
    """``metric`` of one task's ``records`` as the page shows it (see the module). The variants,
    and which models name them, come from ``context`` (the record folder's runs of the task, on
    every machine; default ``records``), so one machine's table labels its rows as the others do.
    ``published_only``: only the rows with a published number ("" when none has one)."""
    task = TASKS[records[0].task]
    flats = [_flat(r, task.setting or r.WHERE) for r in records]
    context = records if context is None else context
    context_flats = [_flat(r, task.setting or r.WHERE) for r in context]
    variants = _variants(context, context_flats)
    cells: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    # a setting a model's other runs name and this one does not is that setting's default here
    named = defaultdict(set)
    for r, flat in zip(context, context_flats, strict=True):
        named[r.model].update(name for name in flat if name in variants)
    runs = [
        (r, {name: flat.get(name, _default(task, name)) for name in variants if name in named[r.model]})
        for r, flat in zip(records, flats, strict=True)
    ]
    by_cell = defaultdict(list)
    for r, variant in runs:
        by_cell[r.dataset, r.where].append(variant)
    rows_of = {cell: _rows(found) for cell, found in by_cell.items()}
    for r, variant in runs:
        value = getattr(r, metric, None)
        for row in rows_of[r.dataset, r.where] if value is not None else ():
            if variant.items() <= dict(row).items():
                cells[r.dataset, r.where, row][r.model].append(value)
    floors = _floors(records)
    known = list(task.models)  # the catalog's order: XCTFormer first, then the baselines
    models = sorted({r.model for r in records}, key=lambda m: (known.index(m) if m in known else len(known), m))
    table = []
    for row in sorted(cells, key=lambda row: (row[0], _number_first(row[1]), row[2])):
        means = {m: statistics.fmean(v) for m, v in cells[row].items()}
        # a task's measures all point one way: errors lower, detection scores higher
        best = (min if task.measure.lower_is_better else max)(means, key=means.get) if len(means) > 1 else None
        shown = [f"**{_cell(cells[row][m])}**" if m == best else _cell(cells[row][m]) if m in means else "-"
                 for m in models]  # fmt: skip
        published: Optional[float] = task.published(row[0], row[1], metric)
        if published_only and published is None:
            continue
        line = [row[0], row[1], _label(dict(row[2])), *shown, "-" if published is None else f"{published:.3f}"]
        table.append(line + ([fmt(floors.get(row[:2]), ".3f")] if floors and metric == "mse" else []))
    setting = task.setting or records[0].WHERE
    header = ["dataset", setting.replace("_", " "), "variant" if variants else "", *models, "published"]
    header += ["noise floor"] if floors and metric == "mse" else []
    if not variants:
        header, table = [*header[:2], *header[3:]], [[*line[:2], *line[3:]] for line in table]
    return markdown_table(header, table) if table else ""


def _floors(records: list[Record]) -> dict[tuple, float]:
    """(dataset, where) -> the mean noise floor of its runs, where generated data records one."""
    found = defaultdict(list)
    for r in records:
        if getattr(r, "noise_floor", None) is not None:
            found[r.dataset, r.where].append(r.noise_floor)
    return {cell: statistics.fmean(values) for cell, values in found.items()}


def _number_first(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def summary_tables(records: list[Record], context: Optional[list[Record]] = None) -> str:
    """Each task's tables in ``records``: its ranking measure, and the paper's headline where that
    is another (mean ± sd over seeds; the best of a row in bold). ``context``: see :func:`summary_table`."""
    sections = []
    for task in TASKS.values():
        mine = [r for r in records if r.task == task.name]
        around = [r for r in (records if context is None else context) if r.task == task.name]
        for metric in dict.fromkeys([task.metrics[0], task.measure.key]) if mine else ():
            seeds = ", ".join(map(str, sorted({r.seed for r in mine})))
            name = METRIC_NAMES.get(metric, metric.upper())
            said = f"{task.title.capitalize()}, {name}: the mean ± sd over the seeds run ({seeds}); published: "
            measured = {r.model for r in mine if getattr(r, metric, None) is not None}
            # the paper's headline, where it is not the measure, only beside the paper's number
            headline = metric != task.measure.key
            table = summary_table(mine, metric, around, published_only=headline)
            if table and len(measured) >= min(2, len({r.model for r in mine})):  # else it compares nothing
                said += task.published_note + (". Only the rows a published number applies to" if headline else "")
                if metric == "mse" and _floors(mine):
                    said += "; noise floor: the MSE of a forecast of generated data that misses only its noise"
                sections.append(said + ".\n\n" + table)
    return "\n\n".join(sections)


def runs_table(records: list[Record]) -> str:
    """Every run of one task's ``records``: the settings that tell a model's runs of one cell apart,
    the seed, each measure and the paper's number for the run's model beside it, the times."""
    task = TASKS[records[0].task]
    where = task.setting or records[0].WHERE
    flats = [_flat(r, where) for r in records]
    varying = _variants(records, flats)
    published = [
        m for m in task.scores if any(task.published(r.dataset, r.where, m, r.model) is not None for r in records)
    ]
    rows = []
    for r, flat in sorted(zip(records, flats, strict=True), key=lambda pair: _run_order(pair[0])):
        scores = [getattr(r, metric, None) for metric in task.scores]
        scores += [task.published(r.dataset, r.where, metric, r.model) for metric in published]
        settings = _label({name: flat[name] for name in varying if name in flat})
        times = [fmt(r.fit_seconds, ".0f"), fmt(r.eval_seconds, ".1f")]
        rows.append([r.dataset, r.where, r.model, settings, r.seed, *map(fmt, scores), *times])
    names = [METRIC_NAMES.get(metric, metric.upper()) for metric in task.scores]
    names += [f"published {METRIC_NAMES.get(metric, metric.upper())}" for metric in published]
    header = ["dataset", where.replace("_", " "), "model", "settings", "seed", *names, "fit s", "eval s"]
    return (f"Published: {task.runs_note}.\n\n" if published else "") + markdown_table(header, rows)


def _run_order(record: Record) -> tuple:
    return record.dataset, _number_first(record.where), record.model, record.seed
