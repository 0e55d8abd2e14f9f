"""The paper-scale runs this project still lacks, in order, with an estimate each: run as many as a
GPU budget allows.

    python benchmarks/paper_scale.py --dry-run                        # the plan, minutes per entry
    python benchmarks/paper_scale.py --budget-s 780 --data-dir DATA   # on a GPU: what fits in 13 min
    python benchmarks/paper_scale.py --smoke --output /tmp/queue      # every entry, tiny, on the CPU

Entries, in the order they decide things: (a) the converged fp32-vs-bf16 comparison
(``gpu_check.py``'s section 5), which decides whether the rest may train in bf16 with
``torch.compile``; (b) MSL and (c) SMAP anomaly detection with the presets, both protocols and
the baselines; imputation at the paper's rates with the baselines: (d) ETTh1, (e) ETTh2 at 50 %,
(f) ETTm1, (g) ETTm2, (h) Weather; (i) Weather forecasting at the paper's four horizons with the
Darts baselines (its preset takes hours per horizon on a CPU). Every run is an ``xct-bench`` run:
records go to
``OUTPUT/<task>/results.jsonl`` with their provenance, and a run whose identity is already there
is done (rerun the same command to go on). A run starts only when its estimate fits in what is
left of ``--budget-s``; none is cut in the middle.

Estimates: the training step time of the paper-scale networks measured on a GPU (the newest
``benchmarks/results/gpu_check/*/compile_modes.jsonl``), scaled by each network's FLOPs and
batch, times the windows each epoch and evaluation see, then fitted to what the XCTFormer runs
already recorded on a GPU took against their own estimate: training by a factor (the FLOPs leave
out the loader and the loop), evaluation by a fixed part (compiling the inference graphs) plus a
factor. They are upper bounds where early stopping ends training sooner. The device image lacks
Darts: install the two wheels that ``gpu_check.py``'s docstring names (and PyOD's for
``darts_iforest``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # gpu_check, a sibling script

from xct_estimators.bench.paper import HORIZONS  # noqa: E402
from xct_estimators.nn.presets import IMPUTATION_MASK_RATES, TASK_SEQ_LEN, get_preset  # noqa: E402

RECORDS = ROOT / "benchmarks" / "results"
DEFAULT_OUTPUT = RECORDS / "paper_scale"

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
#: The measured network each task's estimate scales from (its preset dataset and task); no
#: forecasting network is measured, so forecasting scales from the imputation one.
REFERENCE = {"impute": ("ETTh1", "impute"), "detect": ("MSL", "anomaly"), "forecast": ("ETTh1", "impute")}
#: The preset table's name of each task.
PRESET_TASK = {"impute": "impute", "detect": "anomaly", "forecast": "forecast"}
#: A forward pass without gradients costs about a third of a training step.
INFERENCE_SHARE = 1 / 3
#: Seconds a run spends outside its steps: starting, reading data, Lightning's loop.
RUN_OVERHEAD_S = 30
#: A baseline run with no record of its own (minutes): a generous guess, so the budget holds.
BASELINE_MINUTES = {"impute": 1.0, "detect": 10.0, "forecast": 5.0}
#: bf16 counts as safe when its best validation loss is within this of fp32's, or within the
#: spread of two fp32 seeds.
BF16_TOLERANCE = 0.02


@dataclass(frozen=True)
class Entry:
    key: str
    title: str
    task: str  # "converged", "impute", "detect" or "forecast"
    dataset: str = ""
    mask_rates: tuple[float, ...] = ()
    models: tuple[str, ...] = ()
    protocols: tuple[str, ...] = ("tslib",)
    horizons: tuple[int, ...] = ()


IMPUTATION_MODELS = ("xctformer", "xctformer_linear", "linear", "sktime_imputer")
#: Baselines from the optional 'baselines' extra (PyOD), left out of ``--smoke``.
OPTIONAL_MODELS = ("darts_iforest",)
DETECTION_MODELS = ("xctformer", "window_mean", "random", "darts_kmeans", "darts_iforest")
FORECAST_MODELS = ("xctformer", "naive", "dlinear", "nlinear", "tide", "tsmixer")
QUEUE = (
    Entry("a", "converged fp32 vs bf16 (decides bf16 and compile)", "converged"),
    Entry("b", "MSL detection", "detect", "MSL", models=DETECTION_MODELS, protocols=("tslib", "point")),
    Entry("c", "SMAP detection", "detect", "SMAP", models=DETECTION_MODELS, protocols=("tslib", "point")),
    Entry("d", "ETTh1 imputation", "impute", "ETTh1", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("e", "ETTh2 imputation at 50 %", "impute", "ETTh2", (0.5,), IMPUTATION_MODELS),
    Entry("f", "ETTm1 imputation", "impute", "ETTm1", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("g", "ETTm2 imputation", "impute", "ETTm2", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("h", "Weather imputation", "impute", "weather", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("i", "Weather forecasting", "forecast", "weather", models=FORECAST_MODELS, horizons=HORIZONS),
)


# -- estimates ---------------------------------------------------------------------------------
def step_record(pattern: str = "gpu_check/*/compile_modes.jsonl") -> dict[tuple[str, str], dict]:
    """(preset dataset, task) -> {mode: seconds per training step, "batch": the batch}, from the
    newest GPU record, and the record's path and device under ``"source"``."""
    paths = sorted(RECORDS.glob(pattern))
    if not paths:
        raise FileNotFoundError(f"No GPU step-time record (benchmarks/results/{pattern}) to estimate from.")
    lines = [json.loads(line) for line in paths[-1].read_text().splitlines() if line.strip()]
    steps: dict[Any, dict] = {"source": {"path": paths[-1].relative_to(ROOT).as_posix(), **lines[0]["environment"]}}
    for line in lines[1:]:
        name = {"ETTh1 imputation": ("ETTh1", "impute"), "MSL anomaly": ("MSL", "anomaly")}.get(line["preset"])
        if name is None:  # a network no estimate scales from
            continue
        measured = steps.setdefault(name, {"batch": line["batch"]})
        measured[line["mode"]] = line["ms"] / 1e3
        measured["setup " + line["mode"]] = line["seconds_with_compile"]  # compiling and warm-up steps
    return steps


@functools.cache
def _forward_flops(dataset: str, task: str, out_len: Optional[int] = None) -> int:
    from xct_estimators.bench.profile import count_flops
    from xct_estimators.nn import XCTFormerNet

    preset = get_preset(dataset, task)  # the plain path: the counter sees every attention product
    net = XCTFormerNet(preset.config(out_len).replace(max_attention_bytes=None, fused_attention=False))
    return count_flops(net, preset.seq_len, preset.n_channels)


def step_seconds(dataset: str, task: str, mode: str, steps: dict, horizon: Optional[int] = None) -> float:
    """One training step of ``dataset``'s preset at its batch (forecasting: for ``horizon``): the
    reference network's measured step, scaled by FLOPs per window and the batch."""
    reference = REFERENCE[task]
    measured = steps[reference]
    ratio = _forward_flops(dataset, PRESET_TASK[task], horizon) / _forward_flops(*reference)
    return measured[mode] * ratio * get_preset(dataset, PRESET_TASK[task]).batch_size / measured["batch"]


#: The two parts of a run that the calibration scales apart: the evaluation's share of its time
#: depends on the protocol's window count, not on the training's.
PARTS = ("train", "evaluate")


def run_seconds(
    task: str, dataset: str, protocols, mode: str, steps: dict, horizon: Optional[int] = None
) -> dict[str, float]:
    """One XCTFormer run (forecasting: at ``horizon``) by the FLOPs alone, in :data:`PARTS`:
    training to the preset's last epoch with its setup (compiling, reading data), and every
    evaluation."""
    from xct_estimators.bench.models import preset_name

    preset = get_preset(preset_name(dataset) if task != "detect" else dataset, PRESET_TASK[task])
    step = step_seconds(preset.dataset, task, mode, steps, horizon)
    train = preset.epochs * math.ceil(_train_windows(dataset, task, horizon) / preset.batch_size) * step
    setup = steps[REFERENCE[task]]["setup " + mode] + RUN_OVERHEAD_S
    evaluate = _eval_windows(dataset, task, protocols, horizon) / preset.batch_size * step * INFERENCE_SHARE
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


def calibration(steps: dict, pattern: str = "**/results.jsonl") -> dict[tuple[str, str], Fit]:
    """(task, part) -> how the XCTFormer runs recorded on a GPU took against their FLOP estimate
    (:func:`fit_line`): the FLOPs leave out the data loader, scoring on the CPU, compiling the
    inference graphs, another GPU. A task with no such record takes the fit of all records of
    that part; none at all, the estimate as it is."""
    trainings: dict[tuple, dict] = {}
    for path in RECORDS.glob(pattern):
        for record in map(json.loads, filter(str.strip, path.read_text().splitlines())):
            if not (record.get("device") or {}).get("gpu") or not str(record.get("model")).startswith("xctformer"):
                continue
            # one training evaluated under each protocol: records that share the run but the protocol
            key = json.dumps({**record["run"], "protocol": None, "fit_seconds": record["fit_seconds"]}, sort_keys=True)
            run = trainings.setdefault(key, {"record": record, "protocols": [], "evaluate": 0.0})
            run["protocols"].append(record.get("protocol"))
            run["evaluate"] += record["eval_seconds"]
    points: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for run in trainings.values():
        record = run["record"]
        mode = "bf16+compile" if record.get("compile") else "fp32" if record.get("precision") == "32" else "bf16"
        protocols, horizon = tuple(run["protocols"]), record.get("horizon")
        estimate = run_seconds(record["task"], record["dataset"], protocols, mode, steps, horizon)
        measured = {"train": record["fit_seconds"], "evaluate": run["evaluate"]}
        for part in (part for part in PARTS if estimate[part] > 0):
            points.setdefault((record["task"], part), []).append((estimate[part], measured[part]))
    # training's extra time grows with its steps (the loader, the loop); evaluation's has a fixed
    # part too (compiling the inference graphs) that dominates a short evaluation
    fits = {key: fit_line(found, overhead=key[1] == "evaluate") for key, found in points.items()}
    every = {part: [p for (_, q), found in points.items() if q == part for p in found] for part in PARTS}
    fallback = {part: fit_line(every[part], part == "evaluate") if every[part] else Fit() for part in PARTS}
    return {(task, part): fits.get((task, part), fallback[part]) for task in REFERENCE for part in PARTS}


def entry_minutes(entry: Entry, mode: str, steps: dict, factors: Optional[dict] = None) -> float:
    """The entry's estimated GPU minutes: its XCTFormer runs (:func:`run_seconds`, each part through
    its :func:`calibration` fit) and its baselines."""
    if entry.task == "converged":
        total = 0.0
        import gpu_check

        for _, dataset, preset_task, epochs, stride in gpu_check.CONVERGED:  # its settings, one home
            task = "detect" if preset_task == "anomaly" else preset_task
            train_windows = _train_windows(dataset, task) / stride
            per_mode = [step_seconds(dataset, task, m, steps) for m in ("fp32", "bf16", "fp32")]
            batch = get_preset(dataset, "anomaly" if task == "detect" else task).batch_size
            total += sum(epochs * train_windows / batch * s for s in per_mode)
        return total / 60
    one = 0.0  # one XCTFormer model's runs: one per mask rate, or one per horizon
    for horizon in entry.horizons or [None]:
        parts = run_seconds(entry.task, entry.dataset, entry.protocols, mode, steps, horizon)
        one += sum((factors or {}).get((entry.task, part), Fit())(seconds) for part, seconds in parts.items())
    one *= max(len(entry.mask_rates), 1)
    runs = max(len(entry.mask_rates), len(entry.horizons), 1)
    ours = sum(1 for m in entry.models if m.startswith("xctformer")) * one / 60
    baselines = runs * sum(
        baseline_minutes(entry.task, entry.dataset, m) for m in entry.models if not m.startswith("xctformer")
    )
    return ours + baselines


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


def _splits(dataset: str, task: str = "impute"):
    """The splits of ``dataset`` (xct-bench's borders for its row count and the task's input)."""
    from xct_estimators.bench.catalog import ETT_KINDS
    from xct_estimators.bench.datasets import split_borders

    kind = ETT_KINDS.get(dataset, "ratio")
    return split_borders(DATASET_ROWS[dataset], kind, TASK_SEQ_LEN[task])


def _train_windows(dataset: str, task: str, horizon: Optional[int] = None) -> int:
    if task == "detect":
        return DATASET_ROWS[dataset][0] - TASK_SEQ_LEN["anomaly"] + 1
    start, stop = _splits(dataset, task).train
    return stop - start - TASK_SEQ_LEN[task] - (horizon or 0) + 1


def _eval_windows(dataset: str, task: str, protocols, horizon: Optional[int] = None) -> int:
    if task == "detect":  # tslib: every stride-1 window of both arrays; point: a window every half length
        train, test = DATASET_ROWS[dataset]
        length = TASK_SEQ_LEN["anomaly"]
        tslib = (train + test - 2 * length + 2) * ("tslib" in protocols)
        return tslib + (train + test) // (length // 2) * ("point" in protocols)
    start, stop = _splits(dataset, task).test  # moved back by the input length: its first window is whole
    return stop - start - TASK_SEQ_LEN[task] - (horizon or 0) + 1


# -- bf16 ---------------------------------------------------------------------------------------
def bf16_safe(converged: Optional[list[dict]]) -> Optional[bool]:
    """Whether the converged comparison shows bf16 trains as well as fp32 on every network: its best
    validation loss within :data:`BF16_TOLERANCE` of fp32's, or within the fp32 seed-to-seed
    spread. ``None`` when the comparison has not run (or a run failed)."""
    if not converged:
        return None
    for row in converged:
        runs = row.get("runs", {})
        try:
            fp32, bf16, other = (runs[k]["best_val_loss"] for k in ("fp32", "bf16-mixed", "fp32, seed 2022"))
        except (KeyError, TypeError):
            return None
        if abs(bf16 - fp32) / fp32 > max(BF16_TOLERANCE, abs(other - fp32) / fp32):
            return False
    return True


def converged_record(output: Path, committed: bool = True) -> Optional[list[dict]]:
    """The converged comparison: this queue's own record, else (``committed``) the newest
    ``gpu_check`` report's."""
    own = output / "converged.json"
    if own.is_file():
        return json.loads(own.read_text())["converged"]
    if not committed:
        return None
    for path in sorted(RECORDS.glob("gpu_check/*/report.json"), reverse=True):
        rows = json.loads(path.read_text()).get("converged")
        if rows and bf16_safe(rows) is not None:
            return rows
    return None


# -- running ------------------------------------------------------------------------------------
@dataclass
class Budget:
    seconds: Optional[float]
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - (time.monotonic() - self.started)


def entry_settings(entry: Entry, output: Path, args, fast: bool):
    from xct_estimators.bench.settings import DetectSettings, ForecastSettings, ImputeSettings

    common = dict(output=output / entry.task, data_dir=args.data_dir, accelerator=args.accelerator, resume=True)
    common.update(no_progress=True, compile=fast, precision="bf16-mixed" if fast else "32")
    common["command_line"] = args.command
    if args.smoke:
        common["epochs"] = 1
    models = [m for m in entry.models if not (args.smoke and m in OPTIONAL_MODELS)]
    if entry.task == "detect":
        return DetectSettings(dataset=[entry.dataset], models=models, protocol=list(entry.protocols), **common)
    if entry.task == "forecast":  # smoke: one horizon of the small synthetic set
        horizons, dataset = (entry.horizons[:1], "synthetic") if args.smoke else (entry.horizons, entry.dataset)
        return ForecastSettings(dataset=[dataset], models=models, horizons=list(horizons), **common)
    rates = list(entry.mask_rates[:1] if args.smoke else entry.mask_rates)  # smoke: every entry, one rate
    return ImputeSettings(dataset=[entry.dataset], models=models, mask_rates=rates, **common)


def run_converged(output: Path, args, budget: Budget, minutes: float) -> str:
    import gpu_check

    if converged_record(output, committed=not args.smoke) is not None:
        return "done (record found)"
    if minutes * 60 > budget.left():
        return f"stopped: needs about {minutes:.0f} min, {budget.left() / 60:.1f} left"
    device = "cuda" if args.accelerator == "gpu" else "cpu"
    rows = gpu_check.converged_training(device, args.data_dir, args.smoke)
    from xct_estimators.bench.provenance import provenance

    output.mkdir(parents=True, exist_ok=True)
    record = {"converged": rows, "bf16_safe": bf16_safe(rows), "smoke": args.smoke, **provenance(args.argv)}
    (output / "converged.json").write_text(json.dumps(record, indent=2) + "\n")
    return f"ran: bf16 safe = {record['bf16_safe']}"


def run_entry(entry: Entry, output: Path, args, budget: Budget, fast: bool, job_minutes: float) -> str:
    """The entry's runs not yet recorded, each started only when its estimate fits the budget."""
    from xct_estimators.bench.backends import LocalBackend, execute
    from xct_estimators.bench.detect import detect_jobs
    from xct_estimators.bench.forecast import forecast_jobs
    from xct_estimators.bench.impute import impute_jobs
    from xct_estimators.bench.results import ResultStore

    settings = entry_settings(entry, output, args, fast)
    planner = {"detect": detect_jobs, "impute": impute_jobs, "forecast": forecast_jobs}[entry.task]
    jobs = planner(settings, ResultStore(settings.output).finished(), progress=False)
    if not jobs:
        return "done (every run recorded)"
    for i, job in enumerate(jobs):
        model = job.run.get("model", "")
        cost = job_minutes if model.startswith("xctformer") else baseline_minutes(entry.task, entry.dataset, model)
        if cost * 60 > budget.left():
            return f"stopped before {job.label}: needs about {cost:.0f} min, {budget.left() / 60:.1f} left ({i} ran)"
        execute([job], settings.output, LocalBackend(), progress=False)
    return f"ran {len(jobs)} run(s)"


@contextlib.contextmanager
def smoke_sized():
    """Tiny networks and synthetic arrays in place of the presets and the datasets (``--smoke``)."""
    import numpy as np

    import xct_estimators.bench.detect as detect_module
    import xct_estimators.bench.impute as impute_module
    import xct_estimators.reconstruction as reconstruction
    from xct_estimators.bench.datasets import AnomalyDataset

    def sines(rows, seed):
        t = np.arange(rows)[:, None]
        rng = np.random.default_rng(seed)
        return (np.sin(t / rng.uniform(3, 9, 3)) + 0.05 * rng.normal(size=(rows, 3))).astype(np.float32)

    tiny = dict(window_length=32, patch_len=8, stride=8, d_model=8, n_heads=1, d_ff=16, e_layers=1, dropout=0.0)
    tiny.update(fc_dropout=0.0, attn_dropout=0.0, decop_k=None, n_epochs=1, batch_size=32, learning_rate=1e-3)
    labels = np.zeros(200, dtype=bool)
    labels[100:110] = True
    patches = {
        (reconstruction, "preset_params"): lambda dataset, task: dict(tiny),
        (impute_module, "imputation_splits"): lambda name, data_dir, seed: (
            sines(300, 0),
            sines(100, 1),
            sines(100, 2),
        ),
        (impute_module, "TASK_SEQ_LEN"): {"impute": 32},
        (impute_module, "dataset_fingerprint"): lambda name, data_dir: None,
        (detect_module, "load_anomaly_dataset"): lambda name, data_dir: AnomalyDataset(
            name, sines(300, 3), sines(200, 4), labels
        ),
        (detect_module, "TASK_SEQ_LEN"): {"anomaly": 32},
    }
    saved = {key: getattr(*key) for key in patches}
    try:
        for (module, name), value in patches.items():
            setattr(module, name, value)
        yield
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)


def plan(mode: str, steps: dict, factors: dict) -> list[tuple[Entry, float]]:
    return [(entry, entry_minutes(entry, mode, steps, factors)) for entry in QUEUE]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="records folder (default: %(default)s)")
    parser.add_argument("--data-dir", help="folder with the datasets (default: $XCT_DATA_DIR)")
    parser.add_argument("--budget-s", type=float, help="stop before a run that would not finish within S seconds")
    parser.add_argument("--accelerator", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the estimate per entry, run nothing")
    parser.add_argument("--smoke", action="store_true", help="every entry on tiny settings and synthetic data (CPU)")
    args = parser.parse_args(argv)
    args.argv = ["benchmarks/paper_scale.py", *(sys.argv[1:] if argv is None else argv)]
    from xct_estimators.bench.provenance import command_line

    args.command = command_line(args.argv)
    if args.smoke:
        args.accelerator = "cpu"
    steps = step_record()
    source = steps["source"]
    safe = bf16_safe(converged_record(args.output, committed=not args.smoke))
    fast = bool(safe) and not args.smoke
    mode = "bf16+compile" if fast else "fp32"
    print(
        f"estimates from {source['path']} ({source['gpu']}, commit {source['git commit'][:7]}); bf16 safe: "
        f"{'not yet known' if safe is None else safe}; the runs train in {mode}"
    )
    factors = calibration(steps)
    measured = ", ".join(f"{task} {part} {fit}" for (task, part), fit in factors.items())
    print(f"scaled by what the runs recorded on a GPU took against the estimate: {measured}")
    entries = plan(mode, steps, factors)
    for entry, minutes in entries:
        print(f"({entry.key}) {entry.title}: about {minutes:.0f} GPU min", flush=True)
    print(f"all: about {sum(m for _, m in entries):.0f} GPU min")
    if args.dry_run:
        return 0
    budget = Budget(args.budget_s)
    with smoke_sized() if args.smoke else contextlib.nullcontext():
        for entry, minutes in entries:
            if entry.task == "converged":
                outcome = run_converged(args.output, args, budget, minutes)
                safe = bf16_safe(converged_record(args.output, committed=not args.smoke))
                fast = bool(safe) and not args.smoke
            else:
                runs = max(len(entry.mask_rates), len(entry.horizons), 1)
                runs *= sum(1 for m in entry.models if m.startswith("xctformer"))
                outcome = run_entry(entry, args.output, args, budget, fast, minutes / max(runs, 1))
            print(f"({entry.key}) {entry.title}: {outcome}", flush=True)
            if outcome.startswith("stopped"):
                return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
