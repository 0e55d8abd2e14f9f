"""The paper's ablation tables (App. "Ablation Study: Complete Analysis") as data, and records of
the ablation models averaged to stand beside them (``python -m benchmarks.ablation_tables``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from xct_estimators.bench import paper
from xct_estimators.bench.models import ABLATION_MODELS
from xct_estimators.bench.record import Record
from xct_estimators.bench.tables import fmt, markdown_table
from xct_estimators.bench.tasks import TASKS
from xct_estimators.nn.presets import IMPUTATION_MASK_RATES

VARIANTS = ("xctformer", *ABLATION_MODELS)

#: Forecasting ablation (App. "Ablation Study: Complete Analysis", averages over the four
#: horizons): variant model name -> dataset key -> (MSE, MAE). ``xctformer_nomask`` has no
#: DeCoP datasets (ECL, Traffic); ``xctformer_clipped`` is published only as a task average.
ABLATION_FORECAST = {
    "xctformer": {"ETTh1": (0.450, 0.436), "ETTh2": (0.369, 0.396), "ETTm1": (0.369, 0.392),
                  "ETTm2": (0.270, 0.319), "electricity": (0.166, 0.263), "traffic": (0.435, 0.287),
                  "weather": (0.237, 0.267)},
    "xctformer_nomask": {"ETTh1": (0.453, 0.440), "ETTh2": (0.383, 0.405), "ETTm1": (0.379, 0.394),
                         "ETTm2": (0.282, 0.326), "weather": (0.256, 0.280)},
    "xctformer_softmax": {"ETTh1": (0.443, 0.435), "ETTh2": (0.390, 0.409), "ETTm1": (0.410, 0.413),
                          "ETTm2": (0.280, 0.326), "electricity": (0.224, 0.317), "traffic": (0.520, 0.368),
                          "weather": (0.247, 0.278)},
    "xctformer_vanilla": {"ETTh1": (0.452, 0.439), "ETTh2": (0.397, 0.412), "ETTm1": (0.385, 0.398),
                          "ETTm2": (0.285, 0.330), "electricity": (0.224, 0.317), "traffic": (0.520, 0.368),
                          "weather": (0.263, 0.284)},
    "xctformer_time": {"ETTh1": (0.449, 0.436), "ETTh2": (0.380, 0.404), "ETTm1": (0.375, 0.393),
                       "ETTm2": (0.281, 0.327), "electricity": (0.195, 0.280), "traffic": (0.450, 0.284),
                       "weather": (0.256, 0.279)},
    "xctformer_channel": {"ETTh1": (0.461, 0.450), "ETTh2": (0.388, 0.409), "ETTm1": (0.378, 0.393),
                          "ETTm2": (0.278, 0.321), "electricity": (0.166, 0.263), "traffic": (0.476, 0.329),
                          "weather": (0.239, 0.269)},
}  # fmt: skip
#: Imputation ablation (averages over the four mask rates): variant -> dataset key -> (MSE, MAE).
ABLATION_IMPUTE = {
    "xctformer": {"ETTm1": (0.029, 0.113), "ETTm2": (0.024, 0.092), "ETTh1": (0.087, 0.201),
                  "ETTh2": (0.046, 0.144), "weather": (0.031, 0.050), "electricity": (0.046, 0.141)},
    "xctformer_nomask": {"ETTm1": (0.041, 0.132), "ETTm2": (0.029, 0.100), "ETTh1": (0.092, 0.206),
                         "ETTh2": (0.064, 0.169), "weather": (0.031, 0.047)},
    "xctformer_softmax": {"ETTm1": (0.032, 0.117), "ETTm2": (0.027, 0.099), "ETTh1": (0.078, 0.192),
                          "ETTh2": (0.065, 0.178), "weather": (0.040, 0.075), "electricity": (0.077, 0.196)},
    "xctformer_vanilla": {"ETTm1": (0.043, 0.137), "ETTm2": (0.033, 0.113), "ETTh1": (0.094, 0.208),
                          "ETTh2": (0.079, 0.193), "weather": (0.031, 0.048), "electricity": (0.077, 0.196)},
    "xctformer_time": {"ETTm1": (0.040, 0.130), "ETTm2": (0.029, 0.101), "ETTh1": (0.089, 0.201),
                       "ETTh2": (0.081, 0.166), "weather": (0.031, 0.047), "electricity": (0.046, 0.139)},
    "xctformer_channel": {"ETTm1": (0.065, 0.174), "ETTm2": (0.044, 0.136), "ETTh1": (0.203, 0.305),
                          "ETTh2": (0.060, 0.167), "weather": (0.041, 0.072), "electricity": (0.075, 0.191)},
}  # fmt: skip
#: Anomaly-detection ablation: variant -> dataset -> point-adjusted F1 in %.
ABLATION_DETECT = {
    "xctformer": {"PSM": 95.3, "SWaT": 92.6, "MSL": 79.0, "SMAP": 86.7, "SMD": 84.2},
    "xctformer_nomask": {"PSM": 95.3, "SWaT": 88.2, "MSL": 72.3, "SMAP": 66.7, "SMD": 83.0},
    "xctformer_softmax": {"PSM": 95.3, "SWaT": 90.2, "MSL": 69.0, "SMAP": 68.6, "SMD": 84.3},
    "xctformer_vanilla": {"PSM": 95.3, "SWaT": 93.1, "MSL": 71.8, "SMAP": 66.9, "SMD": 83.2},
    "xctformer_time": {"PSM": 95.3, "SWaT": 93.5, "MSL": 79.4, "SMAP": 67.5, "SMD": 83.9},
    "xctformer_channel": {"PSM": 92.9, "SWaT": 92.5, "MSL": 76.9, "SMAP": 66.5, "SMD": 82.8},
}  # fmt: skip
#: The paper's "XCTFormer vs Others (%)" of its anomaly ablation table.
ABLATION_DETECT_GAP = {
    "xctformer_nomask": 8.0, "xctformer_softmax": 7.5, "xctformer_vanilla": 6.7, "xctformer_time": 4.4,
    "xctformer_channel": 6.4,
}  # fmt: skip


def detection_ablation_gap(full: dict, variant: dict) -> Optional[float]:
    """The anomaly table's "XCTFormer vs Others (%)": how much higher the full model's
    dataset-averaged F1 is, relative to the variant's (this reproduces the paper's column)."""
    common = sorted(set(full) & set(variant))
    if not common:
        return None
    ours = sum(full[d] for d in common) / len(common)
    theirs = sum(variant[d] for d in common) / len(common)
    return 100 * (ours - theirs) / theirs


#: The paper's "XCTFormer vs Others (%)" of the forecasting ablation table.
ABLATION_FORECAST_GAP = {
    "xctformer_nomask": 2.7, "xctformer_softmax": 8.0, "xctformer_vanilla": 8.3, "xctformer_time": 2.8,
    "xctformer_channel": 3.4,
}  # fmt: skip


def ablation_gap(full: dict, variant: dict) -> Optional[float]:
    """The paper's "XCTFormer vs Others (%)": over the datasets both have, the relative change of
    the dataset-averaged MSE and of the dataset-averaged MAE, averaged (positive: the variant is
    worse). ``full`` / ``variant``: dataset -> (MSE, MAE)."""
    common = sorted(set(full) & set(variant))
    if not common:
        return None
    changes = []
    for i in (0, 1):
        ours = sum(full[d][i] for d in common) / len(common)
        theirs = sum(variant[d][i] for d in common) / len(common)
        changes.append((theirs - ours) / ours)
    return 100 * sum(changes) / 2


@dataclass(frozen=True)
class Table:
    """One task's ablation table, and how its records are averaged to stand beside it."""

    title: str
    published: dict
    gap: Callable[[dict, dict], Optional[float]]
    columns: tuple[str, str]
    scale: float = 1.0
    protocol: Optional[str] = None  # the one protocol the table reads, where a task has several
    averaged_over: tuple = ()  # the values of the task's setting every averaged row must cover
    same_run: tuple[str, ...] = ()  # the record fields runs averaged together share


_ERRORS = ("avg MSE", "avg MAE")
TABLES = {
    "forecast": Table("forecasting", ABLATION_FORECAST, ablation_gap, _ERRORS, averaged_over=paper.HORIZONS,
                      same_run=("features", "seq_len", "epochs", "covariates")),
    "impute": Table("imputation", ABLATION_IMPUTE, ablation_gap, _ERRORS, averaged_over=IMPUTATION_MASK_RATES,
                    same_run=("protocol", "train_stride", "eval_stride", "epochs")),
    "detect": Table("anomaly detection (tslib)", ABLATION_DETECT, detection_ablation_gap,
                    ("F1 adjusted %", "F1 %"), scale=100.0, protocol="tslib"),
}  # fmt: skip


def averages(records: list[Record], task: str) -> dict[str, dict[str, tuple]]:
    """variant -> dataset -> its two metrics averaged over the task's settings (horizons or mask
    rates, complete sets only; anomaly detection: one protocol's runs), over the seeds the variants
    were run with (the full model's other seeds are left out)."""
    spec, metrics = TABLES[task], TASKS[task].metrics
    mine = [r for r in records if r.task == task and r.model in VARIANTS and spec.protocol in (None, r.where)]
    seeds = {r.seed for r in mine if r.model != "xctformer"}
    mine = [r for r in mine if r.seed in seeds]
    per_seed: dict[tuple, list[tuple]] = defaultdict(list)
    if not spec.averaged_over:
        for r in mine:
            per_seed[(r.model, r.dataset)].append(tuple(spec.scale * getattr(r, k) for k in metrics))
    groups: dict[tuple, dict] = defaultdict(dict)
    for r in mine if spec.averaged_over else ():
        groups[(r.model, r.dataset, tuple(getattr(r, f) for f in spec.same_run), r.seed)][r.where] = r
    for (model, dataset, _, _), cells in groups.items():
        if set(spec.averaged_over) <= set(cells):
            chosen = [cells[x] for x in spec.averaged_over]
            per_seed[(model, dataset)].append(tuple(sum(getattr(c, k) for c in chosen) / len(chosen) for k in metrics))
    found: dict[str, dict[str, tuple]] = defaultdict(dict)
    for (model, dataset), values in per_seed.items():
        found[model][dataset] = tuple(sum(v[i] for v in values) / len(values) for i in (0, 1))
    return found


def tables(records: list[Record]) -> str:
    """Each task's ablation table the records fill, with its "XCTFormer vs others (%)"."""
    sections = []
    for task, spec in TABLES.items():
        found = averages(records, task)
        variants = [m for m in VARIANTS if m in found and m != "xctformer"]
        if "xctformer" not in found or not variants:
            continue
        rows = []
        for model in ("xctformer", *variants):
            for dataset, values in sorted(found[model].items()):
                ref = spec.published.get(model, {}).get(paper.dataset_key(dataset))
                ref = ref if isinstance(ref, tuple) else (ref, None)
                rows.append([model, dataset, *(fmt(v) for v in values), fmt(ref[0]), fmt(ref[1])])
        header = ["variant", "dataset", *spec.columns, f"paper {spec.columns[0]}", f"paper {spec.columns[1]}"]
        text = f"### {spec.title}\n\n" + markdown_table(header, rows)
        pick = (lambda v: v) if spec.averaged_over else (lambda v: v[0])  # the paper's gap rule's input
        full = {paper.dataset_key(d): pick(v) for d, v in found["xctformer"].items()}
        gaps = []
        for model in variants:
            ours = {paper.dataset_key(d): pick(v) for d, v in found[model].items()}
            same = {d: spec.published[model][d] for d in ours if d in spec.published.get(model, {})}
            theirs = spec.gap({d: spec.published["xctformer"][d] for d in same}, same) if same else None
            datasets = ", ".join(sorted(set(full) & set(ours)))
            gaps.append([model, datasets, fmt(spec.gap(full, ours), "+.1f"), fmt(theirs, "+.1f")])
        text += "\n\nXCTFormer vs others (%, positive = the variant is worse):\n\n"
        sections.append(text + markdown_table(["variant", "datasets", "ours %", "paper %"], gaps))
    return "\n\n".join(sections)
