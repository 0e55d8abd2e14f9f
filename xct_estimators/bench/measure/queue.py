"""The paper-scale runs this project still lacks, in the order they decide things, each an
``xct-bench`` run started only when its estimate fits what is left of the budget."""

from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from xct_estimators.bench.catalog import DEFAULT_DETECTION_MODELS, DEFAULT_IMPUTATION_MODELS, DEFAULT_MODELS
from xct_estimators.bench.measure.converged import CONVERGED, converged_training
from xct_estimators.bench.measure.estimates import (
    DATASET_ROWS,
    RECORDS,
    Fit,
    baseline_minutes,
    run_seconds,
    step_seconds,
)
from xct_estimators.bench.paper import HORIZONS
from xct_estimators.bench.provenance import command_line, provenance
from xct_estimators.bench.tasks import TASKS
from xct_estimators.nn.presets import IMPUTATION_MASK_RATES


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


#: The queue runs each task's default models, with both of XCTFormer's imputation fills and both
#: Darts detectors.
IMPUTATION_MODELS = (*DEFAULT_IMPUTATION_MODELS, "xctformer_linear")
#: Baselines from the optional 'baselines' extra (PyOD), left out of ``--smoke``.
OPTIONAL_MODELS = ("darts_iforest",)
DETECTION_MODELS = (*DEFAULT_DETECTION_MODELS, "darts_kmeans", *OPTIONAL_MODELS)


QUEUE = (
    Entry("a", "converged fp32 vs bf16 (decides bf16 and compile)", "converged"),
    Entry("b", "MSL detection", "detect", "MSL", models=DETECTION_MODELS, protocols=("tslib", "point")),
    Entry("c", "SMAP detection", "detect", "SMAP", models=DETECTION_MODELS, protocols=("tslib", "point")),
    Entry("d", "ETTh1 imputation", "impute", "ETTh1", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("e", "ETTh2 imputation at 50 %", "impute", "ETTh2", (0.5,), IMPUTATION_MODELS),
    Entry("f", "ETTm1 imputation", "impute", "ETTm1", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("g", "ETTm2 imputation", "impute", "ETTm2", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("h", "Weather imputation", "impute", "weather", IMPUTATION_MASK_RATES, IMPUTATION_MODELS),
    Entry("i", "Weather forecasting", "forecast", "weather", models=DEFAULT_MODELS, horizons=HORIZONS),
)


#: bf16 counts as safe when its best validation loss is within this of fp32's, or within the
#: spread of two fp32 seeds.
BF16_TOLERANCE = 0.02


def entry_minutes(entry: Entry, mode: str, steps: dict, factors: Optional[dict] = None) -> float:
    """The entry's estimated GPU minutes: its XCTFormer runs (:func:`run_seconds`, each part through
    its :func:`calibration` fit) and its baselines."""
    if entry.task == "converged":
        total = 0.0
        for _, dataset, task, epochs, stride, _ in CONVERGED:  # its settings, one home
            windows = TASKS[task].windows(dataset, DATASET_ROWS[dataset])[0] / stride
            per_mode = [step_seconds(dataset, task, m, steps) for m in ("fp32", "bf16", "fp32")]
            batch = TASKS[task].preset(dataset).batch_size
            total += sum(epochs * windows / batch * s for s in per_mode)
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
@dataclass(frozen=True)
class QueueOptions:
    """What a queue run was asked for (``benchmarks/paper_scale.py``'s options)."""

    output: Path
    data_dir: Optional[str]
    accelerator: str
    smoke: bool
    argv: list[str]

    @property
    def device(self) -> str:
        return "cuda" if self.accelerator == "gpu" else "cpu"


@dataclass
class Budget:
    seconds: Optional[float]
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - (time.monotonic() - self.started)


def entry_settings(entry: Entry, options: QueueOptions, fast: bool):
    from xct_estimators.bench.settings import DetectSettings, ForecastSettings, ImputeSettings

    common = dict(output=options.output / entry.task, data_dir=options.data_dir, accelerator=options.accelerator)
    common["resume"] = True
    common.update(no_progress=True, compile=fast, precision="bf16-mixed" if fast else "32")
    common["command_line"] = command_line(options.argv)
    if options.smoke:
        common["epochs"] = 1
    models = [m for m in entry.models if not (options.smoke and m in OPTIONAL_MODELS)]
    if entry.task == "detect":
        return DetectSettings(dataset=[entry.dataset], models=models, protocol=list(entry.protocols), **common)
    if entry.task == "forecast":  # smoke: one horizon of the small synthetic set
        horizons, dataset = (entry.horizons[:1], "synthetic") if options.smoke else (entry.horizons, entry.dataset)
        return ForecastSettings(dataset=[dataset], models=models, horizons=list(horizons), **common)
    rates = list(entry.mask_rates[:1] if options.smoke else entry.mask_rates)  # smoke: every entry, one rate
    return ImputeSettings(dataset=[entry.dataset], models=models, mask_rates=rates, **common)


def run_converged(options: QueueOptions, budget: Budget, minutes: float) -> str:
    output = options.output
    if converged_record(output, committed=not options.smoke) is not None:
        return "done (record found)"
    if minutes * 60 > budget.left():
        return f"stopped: needs about {minutes:.0f} min, {budget.left() / 60:.1f} left"
    rows = converged_training(options.device, options.data_dir, options.smoke)
    output.mkdir(parents=True, exist_ok=True)
    record = {"converged": rows, "bf16_safe": bf16_safe(rows), "smoke": options.smoke, **provenance(options.argv)}
    (output / "converged.json").write_text(json.dumps(record, indent=2) + "\n")
    return f"ran: bf16 safe = {record['bf16_safe']}"


def run_entry(entry: Entry, options: QueueOptions, budget: Budget, fast: bool, job_minutes: float) -> str:
    """The entry's runs not yet recorded, each started only when its estimate fits the budget."""
    from xct_estimators.bench.backends import LocalBackend, execute
    from xct_estimators.bench.results import ResultStore

    settings = entry_settings(entry, options, fast)
    jobs = TASKS[entry.task].plan(settings, ResultStore(settings.output).finished(), progress=False)
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


def run_queue(options: QueueOptions, entries: list[tuple[Entry, float]], budget_s: Optional[float]) -> None:
    """Each entry's runs not yet recorded, in order, while the budget lasts; after the converged
    comparison, the rest train in bf16 with ``torch.compile`` where it shows bf16 is safe."""
    budget = Budget(budget_s)
    fast = bool(bf16_safe(converged_record(options.output, committed=not options.smoke))) and not options.smoke
    with smoke_sized() if options.smoke else contextlib.nullcontext():
        for entry, minutes in entries:
            if entry.task == "converged":
                outcome = run_converged(options, budget, minutes)
                safe = bf16_safe(converged_record(options.output, committed=not options.smoke))
                fast = bool(safe) and not options.smoke
            else:
                runs = max(len(entry.mask_rates), len(entry.horizons), 1)
                runs *= sum(1 for m in entry.models if m.startswith("xctformer"))
                outcome = run_entry(entry, options, budget, fast, minutes / max(runs, 1))
            print(f"({entry.key}) {entry.title}: {outcome}", flush=True)
            if outcome.startswith("stopped"):
                return
