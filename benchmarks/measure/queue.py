"""The paper-scale runs this project still lacks, in the order they decide things, each an
``xct-bench`` run started only when its estimate fits what is left of the budget."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from benchmarks.measure.converged import CONVERGED, converged_training
from benchmarks.measure.estimates import (
    DATASET_ROWS,
    RECORDS,
    Fit,
    baseline_minutes,
    calibration,
    measured_training,
    preset_of,
    run_seconds,
    run_windows,
    step_record,
    step_seconds,
)
from benchmarks.measure.networks import SMOKE_ARCH
from xct_estimators.bench.catalog import DEFAULT_DETECTION_MODELS, DEFAULT_IMPUTATION_MODELS, DEFAULT_MODELS
from xct_estimators.bench.paper import HORIZONS
from xct_estimators.bench.provenance import command_line, provenance
from xct_estimators.bench.tasks import TASKS
from xct_estimators.nn.presets import IMPUTATION_MASK_RATES

#: The queue runs each task's default models, with both of XCTFormer's imputation fills and both
#: Darts detectors.
IMPUTATION_MODELS = (*DEFAULT_IMPUTATION_MODELS, "xctformer_linear")
#: Baselines from the optional 'baselines' extra (PyOD), left out of ``--smoke``.
OPTIONAL_MODELS = ("darts_iforest",)
DETECTION_MODELS = (*DEFAULT_DETECTION_MODELS, "darts_kmeans", *OPTIONAL_MODELS)


#: bf16 counts as safe when its best validation loss is within this of fp32's, or within the
#: spread of two fp32 seeds.
BF16_TOLERANCE = 0.02


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


def trains_fast(options) -> bool:
    """Whether XCTFormer's runs train in bf16 with ``torch.compile``: the converged comparison says
    bf16 is safe, and this is neither a ``--smoke`` run nor the baselines' (CPU) part."""
    if options.smoke or options.baselines:
        return False
    return bool(bf16_safe(converged_record(options.output, committed=True)))


# -- running ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueOptions:
    """What a queue run was asked for (``benchmarks/paper_scale.py``'s options)."""

    output: Path
    data_dir: Optional[str]
    accelerator: str
    smoke: bool
    argv: list[str]
    baselines: bool = False  # run the baselines (on the CPU) instead of XCTFormer
    seeds: tuple[int, ...] = ()  # each a run of its own; none: the paper's first

    def runs_model(self, model: str) -> bool:
        """Whether this queue run trains ``model``: XCTFormer's runs are the GPU's, the baselines' the
        CPU's (their work does not need a GPU, and a GPU minute is scarce)."""
        return model.startswith("xctformer") != self.baselines

    @property
    def device(self) -> str:
        return "cuda" if self.accelerator == "gpu" else "cpu"


@dataclass
class Budget:
    seconds: Optional[float]
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - (time.monotonic() - self.started)


def smoke_data(folder: Path) -> Path:
    """Tiny stand-ins for the queue's datasets in the files ``xct-bench`` reads (``--smoke``): a CSV
    per imputation dataset (``<name>.csv``), MSL's and SMAP's arrays (``--data-dir folder``)."""
    import numpy as np
    import pandas as pd

    def sines(rows, channels, seed):
        t = np.arange(rows)[:, None]
        rng = np.random.default_rng(seed)
        return np.sin(t / rng.uniform(3, 30, channels)) + 0.05 * rng.normal(size=(rows, channels))

    folder.mkdir(parents=True, exist_ok=True)
    for seed, name in enumerate(("ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather")):
        frame = pd.DataFrame(sines(3000, 4, seed), columns=list("abcd"))
        frame.insert(0, "date", pd.date_range("2020-01-01", periods=len(frame), freq="h"))
        frame.to_csv(folder / f"{name}.csv", index=False)
    labels = np.zeros(200)
    labels[100:110] = 1
    for seed, name in enumerate(("MSL", "SMAP")):
        (folder / name).mkdir(exist_ok=True)
        for part, values in (("train", sines(300, 3, seed)), ("test", sines(200, 3, seed + 5)), ("test_label", labels)):
            np.save(folder / name / f"{name}_{part}.npy", values.astype(np.float32))
    return folder


#: The longest a unit of the queue (one run) should take: a lent GPU session's share. A run
#: estimated longer is not cut (training does not resume inside a run); --dry-run names it.
UNIT_MINUTES = 8


# -- the entries ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Converged:
    """The converged fp32 and bf16 training of :data:`CONVERGED`, which decides whether the runs
    after it train in bf16 with ``torch.compile``."""

    key: str
    title: str

    def minutes(self, mode: str, steps: dict, factors: Optional[dict] = None) -> float:
        total = 0.0
        for _, dataset, task, epochs, stride, _ in CONVERGED:  # its settings, one home
            windows = run_windows(task, dataset, DATASET_ROWS[dataset])[0] / stride
            per_mode = [step_seconds(dataset, task, m, steps) for m in ("fp32", "bf16", "fp32")]
            batch = preset_of(task, dataset).batch_size
            total += sum(epochs * windows / batch * s for s in per_mode)
        return total / 60

    def run(self, options: QueueOptions, budget: Budget, fast: bool, minutes: float) -> str:
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


@dataclass(frozen=True)
class Runs:
    """One ``xct-bench`` command of the queue: a task's models on one dataset."""

    key: str
    title: str
    task: str
    dataset: str
    models: tuple[str, ...]
    each: tuple[str, tuple] = ("", ())  # a settings list whose every value is a run of its own
    protocol: tuple[str, ...] = ()  # detection's protocols, every one evaluated in each run
    smoke: tuple[tuple[str, Any], ...] = ()  # settings for ``--smoke``'s tiny data and networks
    smoke_csv: bool = False  # ``--smoke`` reads the dataset from its stand-in CSV file
    plain: Optional[bool] = None  # CRAB's plain path (``--plain-attention``); None: the faster one measured

    def on_plain_path(self, mode: str, steps: dict) -> bool:
        """Whether XCTFormer trains on CRAB's plain path: as the entry says, else where the GPU check
        measured its step faster than the fused path's for the nearest network (measured at all: its
        attention weights fit in the GPU's memory there)."""
        if self.plain is not None:
            return self.plain
        dataset, horizon = preset_of(self.task, self.dataset).dataset, (self.each[1] or [None])[0]
        try:
            plain = step_seconds(
                dataset, self.task, f"{mode} plain", steps, horizon if self.task == "forecast" else None
            )
        except KeyError:  # not measured on the plain path
            return False
        return plain < step_seconds(dataset, self.task, mode, steps, horizon if self.task == "forecast" else None)

    def units(
        self, mode: str, steps: dict, factors: Optional[dict] = None, baselines: bool = False
    ) -> list[tuple[str, float]]:
        """Each run of the entry (a model at a value of ``each``), the unit the queue starts only when
        it fits the budget, with its estimated GPU minutes. XCTFormer's: its training as the queue
        recorded it for this entry on the estimates' GPU (:func:`measured_training`), else by
        :func:`run_seconds` through its :func:`calibration` fit, and its evaluation by the latter; a
        baseline's (``baselines``: the runs of the CPU part) by :func:`baseline_minutes`."""
        name, values = self.each
        mode = f"{mode} plain" if self.on_plain_path(mode, steps) else mode
        trained = measured_training(self.task, self.dataset, mode, steps["source"].get("gpu"))
        found = []
        for value in values or [None]:
            horizon = value if name == "horizons" else None
            parts = run_seconds(self.task, self.dataset, self.protocol or ("tslib",), mode, steps, horizon)
            seconds = {part: (factors or {}).get((self.task, part), Fit())(s) for part, s in parts.items()}
            ours = (seconds["evaluate"] + (seconds["train"] if trained is None else trained)) / 60
            for model in (m for m in self.models if m.startswith("xctformer") != baselines):
                cost = ours if model.startswith("xctformer") else baseline_minutes(self.task, self.dataset, model)
                found.append((self.unit_name(model, value), cost))
        return found

    def unit_name(self, model: str, value=None) -> str:
        """A unit's name: the model, and where ``each`` has values, the run's (``tide horizon 96``)."""
        name = self.each[0]
        return f"{model} {name.rstrip('s').replace('_', ' ')} {value:g}" if name else model

    def minutes(self, mode: str, steps: dict, factors: Optional[dict] = None, baselines: bool = False) -> float:
        """Estimated minutes of every run of the part (:meth:`units`)."""
        return sum(minutes for _, minutes in self.units(mode, steps, factors, baselines))

    def settings(self, options: QueueOptions, fast: bool):
        """The command's typed settings; ``--smoke`` takes one value of ``each``, no optional model, and
        the entry's ``smoke`` settings."""
        name, values = self.each
        fields = {name: list(values[:1] if options.smoke else values)} if name else {}
        if self.protocol:
            fields["protocol"] = list(self.protocol)
        if self.on_plain_path("bf16+compile" if fast else "fp32", step_record()):
            fields["plain_attention"] = True
        models = [m for m in self.models if options.runs_model(m) and not (options.smoke and m in OPTIONAL_MODELS)]
        fields.update(dataset=[self.dataset], models=models)
        data_dir = options.data_dir
        if options.smoke:
            data_dir = str(smoke_data(options.output / "smoke-data"))
            if self.smoke_csv:
                fields["dataset"] = [f"{data_dir}/{self.dataset}.csv"]
            fields.update(self.smoke)
            fields["models"] = [m for m in fields["models"] if options.runs_model(m)]
        return TASKS[self.task].settings(
            output=options.output / self.task,
            data_dir=data_dir,
            accelerator=options.accelerator,
            resume=True,
            no_progress=True,
            compile=fast,
            precision="bf16-mixed" if fast else "32",
            command_line=command_line(options.argv),
            **({"epochs": 1} if options.smoke else {}),
            **fields,
        )

    def pending(self, options: QueueOptions, fast: bool) -> tuple[list, Any]:
        """(the jobs of this part's runs not yet in the records, for every seed; the records)."""
        from xct_estimators.bench.results import ResultStore

        settings = self.settings(options, fast)
        store = ResultStore(settings.output)
        finished = store.finished()
        seeds = options.seeds or [settings.seed]
        return [
            job for seed in seeds for job in TASKS[self.task].plan(settings.replace(seed=seed), finished, False)
        ], store

    def pending_units(self, options: QueueOptions, fast: bool) -> Counter:
        """The names of the units with a run not yet recorded (:meth:`units`), with how many (one per seed)."""
        return Counter(
            self.unit_name(job.run["model"], job.run.get(self.each[0].rstrip("s")))
            for job in self.pending(options, fast)[0]
        )

    def run(self, options: QueueOptions, budget: Budget, fast: bool, minutes: float) -> str:
        """The runs not yet recorded, each started only when its unit's estimate fits the budget."""
        from xct_estimators.bench.backends import LocalBackend, execute

        jobs, store = self.pending(options, fast)
        if not jobs:
            return "done (every run recorded)"
        steps = step_record()
        mode = "bf16+compile" if fast else "fp32"
        costs = dict(self.units(mode, steps, calibration(steps), options.baselines))
        for i, job in enumerate(jobs):
            unit = self.unit_name(job.run["model"], job.run.get(self.each[0].rstrip("s")))
            cost = costs.get(unit, max(costs.values()))  # --smoke's stand-in values are no unit of the plan
            if cost * 60 > budget.left():
                left = budget.left() / 60
                return f"stopped before {job.label}: needs about {cost:.0f} min, {left:.1f} left ({i} ran)"
            execute([job], store, LocalBackend(), progress=False)
        return f"ran {len(jobs)} run(s)"


#: The detection entries keep the fused path their committed records ran: a run on the other path
#: is another run, which would not resume them. The rest take the faster path measured.
_DETECT = dict(
    models=DETECTION_MODELS,
    protocol=("tslib", "point"),
    plain=False,
    smoke=(("window_length", 32), ("arch", dict(SMOKE_ARCH, patch_len=8, stride=8))),
)
_IMPUTE = dict(
    models=IMPUTATION_MODELS,
    smoke=(("arch", dict(SMOKE_ARCH, patch_len=64, stride=64)), ("train_stride", 100), ("eval_stride", 256)),
    smoke_csv=True,
)
_RATES = ("mask_rates", IMPUTATION_MASK_RATES)
QUEUE = (
    Converged("a", "converged fp32 vs bf16 (decides bf16 and compile)"),
    Runs("b", "MSL detection", "detect", "MSL", **_DETECT),
    Runs("c", "SMAP detection", "detect", "SMAP", **_DETECT),
    Runs("d", "ETTh1 imputation", "impute", "ETTh1", each=_RATES, **_IMPUTE),
    Runs("e", "ETTh2 imputation at 50 %", "impute", "ETTh2", each=("mask_rates", (0.5,)), **_IMPUTE),
    Runs("f", "ETTm1 imputation", "impute", "ETTm1", each=_RATES, **_IMPUTE),
    Runs("g", "ETTm2 imputation", "impute", "ETTm2", each=_RATES, **_IMPUTE),
    Runs("h", "Weather imputation", "impute", "weather", each=_RATES, **_IMPUTE),
    Runs(
        "i",
        "Weather forecasting",
        "forecast",
        "weather",
        DEFAULT_MODELS,
        ("horizons", HORIZONS),
        smoke=(("dataset", ["synthetic"]), ("models", ["xctformer", "naive"]), ("seq_len", 16), ("horizons", [8])),
    ),
)


def plan(mode: str, steps: dict, factors: dict, baselines: bool = False) -> list[tuple[Converged | Runs, float]]:
    """The entries with their estimated minutes: XCTFormer's part (on a GPU), or the baselines' (on the CPU;
    no converged comparison)."""
    if baselines:
        return [
            (entry, entry.minutes(mode, steps, factors, baselines=True)) for entry in QUEUE if isinstance(entry, Runs)
        ]
    return [(entry, entry.minutes(mode, steps, factors)) for entry in QUEUE]


def run_queue(options: QueueOptions, entries: list[tuple[Converged | Runs, float]], budget_s: Optional[float]) -> None:
    """Each entry's runs not yet recorded, in order, while the budget lasts; once the converged
    comparison shows bf16 is safe, the rest train in bf16 with ``torch.compile``. A run that does not
    fit what is left passes the turn to the next entry's shorter runs; nothing runs before the
    converged comparison has."""
    budget = Budget(budget_s)
    for entry, minutes in entries:
        fast = trains_fast(options)
        outcome = entry.run(options, budget, fast, minutes)
        print(f"({entry.key}) {entry.title}: {outcome}", flush=True)
        if outcome.startswith("stopped") and isinstance(entry, Converged):
            return
