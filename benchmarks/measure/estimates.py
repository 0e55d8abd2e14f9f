"""How long a paper-scale run takes on a GPU, before it runs: its training step bounded by those
measured on a GPU (``benchmarks/results/gpu_check/*/compile_modes.jsonl``) for the networks around
it in work per step, times the windows each epoch and evaluation see, then fitted to what the runs
already recorded on a GPU took against their own estimate."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from xct_estimators.bench.catalog import ETT_KINDS
from xct_estimators.bench.detect.protocol import tslib_windows
from xct_estimators.bench.models import preset_name
from xct_estimators.bench.splits import split_borders
from xct_estimators.bench.tasks import TASKS
from xct_estimators.nn.presets import COMMAND_TASKS, TASK_SEQ_LEN, get_preset

RECORDS = Path(__file__).resolve().parents[1] / "results"

#: Rows of the public files (train, test for the anomaly sets); the test checks them against the data.
DATASET_ROWS = {
    "ETTh1": 17420,
    "ETTh2": 17420,
    "ETTm1": 69680,
    "ETTm2": 69680,
    "weather": 52696,
    "MSL": (58317, 73729),
    "SMAP": (135183, 427617),
}


#: A forward pass without gradients costs about a third of a training step.
INFERENCE_SHARE = 1 / 3


#: Seconds a run spends outside its steps: starting, reading data, Lightning's loop.
RUN_OVERHEAD_S = 30


#: A baseline run with no record of its own (minutes): a generous guess, so the budget holds.
BASELINE_MINUTES = {"impute": 1.0, "detect": 10.0, "forecast": 5.0}


# -- estimates ---------------------------------------------------------------------------------
#: The modes an estimate reads: fp32 until bf16 is shown safe, then bf16 with ``torch.compile``.
ESTIMATE_MODES = ("fp32", "bf16+compile")
#: The GPU check whose training steps the estimates read and the docs show: one run, its networks
#: in one record or several. A newer check takes its place here.
STEP_RECORDS = (
    "gpu_check/2026-11-28-h200-2/compile_modes.jsonl",
    "gpu_check/2026-11-28-h200-2-networks/compile_modes.jsonl",
)


def step_record(paths: tuple[str, ...] = STEP_RECORDS) -> dict:
    """(preset dataset, task, horizon) -> {mode: seconds per training step, "setup MODE": seconds of
    its warm-up with compiling, "batch"} for every network the records measured in each of
    :data:`ESTIMATE_MODES`, with the records and their device under ``"source"``."""
    from benchmarks.measure.gpu_report import read_compile_modes
    from benchmarks.measure.networks import PRESETS

    networks = {name: (dataset, task, horizon) for name, dataset, task, horizon in PRESETS}
    environment, lines = read_compile_modes([RECORDS / path for path in paths])
    steps: dict[Any, dict] = {"source": {"path": ", ".join(f"benchmarks/results/{p}" for p in paths), **environment}}
    for line in lines:
        measured = steps.setdefault(networks[line["preset"]], {"batch": line["batch"]})
        measured[line["mode"]] = line["ms"] / 1e3
        measured["setup " + line["mode"]] = line["seconds_with_compile"]  # compiling and warm-up steps
    complete = {k: v for k, v in steps.items() if k == "source" or all(m in v for m in ESTIMATE_MODES)}
    if len(complete) < 2:
        raise FileNotFoundError(f"No network measured in {', '.join(ESTIMATE_MODES)} in {', '.join(paths)}.")
    return complete


@functools.cache
def _forward_flops(dataset: str, task: str, out_len: Optional[int] = None) -> int:
    from xct_estimators.bench.profile import count_flops
    from xct_estimators.nn import XCTFormerNet

    preset = get_preset(dataset, task)  # the plain path: the counter sees every attention product
    net = XCTFormerNet(preset.config(out_len).replace(max_attention_bytes=None, fused_attention=False))
    return count_flops(net, preset.seq_len, preset.n_channels)


def _nearest(dataset: str, task: str, steps: dict, horizon: Optional[int]) -> tuple[tuple, dict]:
    """The measured network closest in FLOPs per training step to ``dataset``'s preset for ``task``,
    whose warm-up (compiling) stands for the preset's."""
    preset = get_preset(dataset, COMMAND_TASKS[task])
    target = math.log(_forward_flops(dataset, COMMAND_TASKS[task], horizon) * preset.batch_size)
    measured = [key for key in steps if key != "source"]
    key = min(measured, key=lambda k: (abs(math.log(_forward_flops(*k) * steps[k]["batch"]) - target), k[0]))
    return key, steps[key]


def step_seconds(dataset: str, task: str, mode: str, steps: dict, horizon: Optional[int] = None) -> float:
    """One training step of ``dataset``'s preset at its batch (forecasting: for ``horizon``), bounded
    by the measured networks around it in work per step (FLOPs x batch): the nearest below scaled up
    by the work (a GPU's throughput only grows with the work) and the nearest above as it is (less
    work takes no longer); the smaller bound. ``KeyError`` when either was not measured in ``mode``
    (the plain path is measured only where its attention weights fit)."""
    work = _forward_flops(dataset, COMMAND_TASKS[task], horizon) * get_preset(dataset, COMMAND_TASKS[task]).batch_size
    measured = {key: _forward_flops(*key) * steps[key]["batch"] for key in steps if key != "source"}
    below = [key for key in measured if measured[key] <= work]
    above = [key for key in measured if measured[key] >= work]
    bounds = []
    if below:
        key = max(below, key=measured.__getitem__)
        bounds.append(steps[key][mode] * work / measured[key])
    if above:
        bounds.append(steps[min(above, key=measured.__getitem__)][mode])
    return min(bounds)


#: The two parts of a run that the calibration scales apart: the evaluation's share of its time
#: depends on the protocol's window count, not on the training's.
PARTS = ("train", "evaluate")


def preset_of(task: str, dataset: str):
    """The paper's preset a run of ``task`` on ``dataset`` takes its network and training from."""
    return get_preset(dataset if task == "detect" else preset_name(dataset), COMMAND_TASKS[task])


def run_windows(task: str, dataset: str, rows, protocols=(), horizon: Optional[int] = None) -> tuple[int, int]:
    """(training, evaluated) windows of one run of ``task`` on ``dataset`` of ``rows`` rows (detection:
    train and test rows) under ``protocols`` (forecasting: at ``horizon``), without reading the data."""
    length = TASK_SEQ_LEN[COMMAND_TASKS[task]]
    if task == "detect":  # point scores a window every half length of both arrays
        train, test = rows
        evaluated = tslib_windows(train, test, length) * ("tslib" in protocols)
        point = len({"point", "entity"} & set(protocols))
        return train - length + 1, evaluated + (train + test) // (length // 2) * point
    splits = split_borders(rows, ETT_KINDS.get(dataset, "ratio"), length)
    train, test = (stop - start - length - (horizon or 0) + 1 for start, stop in (splits.train, splits.test))
    return train, test


def run_seconds(
    task: str, dataset: str, protocols, mode: str, steps: dict, horizon: Optional[int] = None
) -> dict[str, float]:
    """One XCTFormer run (forecasting: at ``horizon``) by the FLOPs alone, in :data:`PARTS`:
    training to the preset's last epoch with its setup (compiling, reading data), and every
    evaluation."""
    preset = preset_of(task, dataset)
    step = step_seconds(preset.dataset, task, mode, steps, horizon)
    train_windows, eval_windows = run_windows(task, dataset, DATASET_ROWS[dataset], protocols, horizon)
    train = preset.epochs * math.ceil(train_windows / preset.batch_size) * step
    setup = _nearest(preset.dataset, task, steps, horizon)[1]["setup " + mode] + RUN_OVERHEAD_S
    evaluate = eval_windows / preset.batch_size * step * INFERENCE_SHARE
    return {"train": train + setup, "evaluate": evaluate}


@dataclass(frozen=True)
class Fit:
    """Measured seconds of a part = ``overhead`` + ``factor`` x its FLOP estimate."""

    overhead: float = 0.0
    factor: float = 1.0

    def __call__(self, estimate: float) -> float:
        return self.overhead + self.factor * estimate

    def __str__(self) -> str:
        return f"{self.overhead:.0f} s + {self.factor:.1f} x"


def fit_line(points: list[tuple[float, float]], overhead: bool = True) -> Fit:
    """A line over (estimate, measured) points that no point lies above: the least-squares slope
    (at least 1: the FLOPs are a floor), then the smallest overhead that covers every point.
    Without ``overhead`` (or from one estimate): the largest ratio."""
    estimates = [e for e, _ in points]
    if not overhead or len(set(estimates)) < 2:
        return Fit(0.0, max(max(m / e for e, m in points), 1.0))
    mean_e, mean_m = sum(estimates) / len(points), sum(m for _, m in points) / len(points)
    slope = sum((e - mean_e) * (m - mean_m) for e, m in points) / sum((e - mean_e) ** 2 for e in estimates)
    slope = max(slope, 1.0)
    return Fit(max(max(m - slope * e for e, m in points), 0.0), slope)


def record_mode(record: dict) -> str:
    """The mode of :data:`ESTIMATE_MODES` (and `` plain`` for CRAB's plain path) a record trained in."""
    mode = "bf16+compile" if record.get("compile") else "fp32" if record.get("precision") == "32" else "bf16"
    return mode + (" plain" if record["run"].get("settings", {}).get("fused_attention") is False else "")


def gpu_trainings(pattern: str = "**/results.jsonl") -> list[dict]:
    """Each XCTFormer training recorded on a GPU under ``RECORDS/pattern``: {"record": its first
    record, "protocols": those it was evaluated under, "evaluate": their seconds added up}."""
    trainings: dict[str, dict] = {}
    for path in RECORDS.glob(pattern):
        for record in map(json.loads, filter(str.strip, path.read_text().splitlines())):
            if not (record.get("device") or {}).get("gpu") or not str(record.get("model")).startswith("xctformer"):
                continue
            # one training evaluated under each protocol: records that share the run but the protocol
            key = json.dumps({**record["run"], "protocol": None, "fit_seconds": record["fit_seconds"]}, sort_keys=True)
            run = trainings.setdefault(key, {"record": record, "protocols": [], "evaluate": 0.0})
            run["protocols"].append(record.get("protocol"))
            run["evaluate"] += record["eval_seconds"]
    return list(trainings.values())


def calibration(steps: dict, pattern: str = "**/results.jsonl") -> dict[tuple[str, str], Fit]:
    """(task, part) -> how the XCTFormer runs recorded on a GPU took against their FLOP estimate
    (:func:`fit_line`): the FLOPs leave out the data loader, scoring on the CPU, compiling the
    inference graphs, another GPU. A task with no such record takes the fit of all records of
    that part; none at all, the estimate as it is."""
    points: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for run in gpu_trainings(pattern):
        record = run["record"]
        protocols, horizon = tuple(run["protocols"]), record.get("horizon")
        estimate = run_seconds(record["task"], record["dataset"], protocols, record_mode(record), steps, horizon)
        measured = {"train": record["fit_seconds"], "evaluate": run["evaluate"]}
        for part in (part for part in PARTS if estimate[part] > 0):
            points.setdefault((record["task"], part), []).append((estimate[part], measured[part]))
    # training's extra time grows with its steps (the loader, the loop); evaluation's has a fixed
    # part too (compiling the inference graphs) that dominates a short evaluation
    fits = {key: fit_line(found, overhead=key[1] == "evaluate") for key, found in points.items()}
    every = {part: [p for (_, q), found in points.items() if q == part for p in found] for part in PARTS}
    fallback = {part: fit_line(every[part], part == "evaluate") if every[part] else Fit() for part in PARTS}
    return {(task, part): fits.get((task, part), fallback[part]) for task in TASKS for part in PARTS}


#: Where the paper-scale queue keeps its records: its runs, with the presets' settings.
QUEUE_RECORDS = "paper_scale"


def measured_training(task: str, dataset: str, mode: str, gpu: Optional[str]) -> Optional[float]:
    """The longest XCTFormer training the queue recorded for ``task`` on ``dataset`` in ``mode`` on
    ``gpu``: another run of that entry trains the same network on the same device, so it is the
    estimate of that part (a measurement, where the FLOP estimate is only fitted to the runs of all
    networks). ``None`` when there is none."""
    seconds = [
        run["record"]["fit_seconds"]
        for run in gpu_trainings(f"{QUEUE_RECORDS}/**/results.jsonl")
        if (run["record"]["task"], run["record"]["dataset"], record_mode(run["record"])) == (task, dataset, mode)
        and run["record"]["device"]["gpu"] == gpu
    ]
    return max(seconds, default=None)


def baseline_minutes(task: str, dataset: str, model: str) -> float:
    """The longest recorded run of a baseline (its work does not depend on the device), else
    :data:`BASELINE_MINUTES`."""
    seconds = [
        record["fit_seconds"] + record["eval_seconds"]
        for path in RECORDS.glob("**/results.jsonl")
        for record in map(json.loads, filter(str.strip, path.read_text().splitlines()))
        if (record.get("task"), record.get("dataset"), record.get("model")) == (task, dataset, model)
    ]
    return max(seconds) / 60 if seconds else BASELINE_MINUTES[task]
