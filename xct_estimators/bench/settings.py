"""Typed settings of each ``xct-bench`` command: the command line builds one, the runners read it.

Each field that is an option says so with :func:`option`: its default, value type and help live
here once, and the parser builds ``--seq-len`` from ``seq_len``. A class's own fields come first in
``--help``, then those of its bases in their order.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Optional

from .._devices import training_processes
from ..nn.presets import PAPER_SEED, PAPER_SEEDS
from .catalog import (
    BACKENDS,
    DATA_DIR_ENV,
)
from .option_types import (
    arch,
    csv,
    csv_ints,
    csv_positive_ints,
    devices,
    mask_rate,
    positive_float,
    positive_int,
)

DEFAULT_OUTPUT = "xct-bench-results"
#: ``--precision``'s choices: Lightning's names; the first is the default.
PRECISIONS = ("32", "bf16-mixed")
#: Epochs of ``xct-bench explain`` unless ``--epochs`` says otherwise: enough for a first picture.
EXPLAIN_EPOCHS = 3


def option(default: Any = None, help: str = "", *, type=None, choices=None, shown: Optional[str] = None):
    """A settings field that is also a command-line option. ``shown``: the default as ``--help``
    states it, where the value alone would not say it (None: the preset's, ...)."""
    metadata = {"help": help, "type": type, "choices": choices, "shown": shown}
    if isinstance(default, list):
        return field(default_factory=functools.partial(list, default), metadata=metadata)
    return field(default=default, metadata=metadata)


def parse_devices(value):
    """Lightning's ``devices``: a count given as digits becomes an int (``"2"`` -> 2)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def listed(names) -> str:
    return ", ".join(names)


@dataclass(frozen=True, kw_only=True)
class CommonSettings:
    """What every command that trains shares."""

    #: Options of the base classes a command leaves out, because it would ignore them.
    OMITTED: ClassVar[frozenset] = frozenset()

    data_dir: Optional[str] = option(help="folder with the datasets", shown=f"${DATA_DIR_ENV}")
    output: Path = option(Path(DEFAULT_OUTPUT), "results folder")
    resume: bool = option(False, "skip runs already in OUTPUT/results.jsonl")
    seed: int = option(PAPER_SEED, "random seed", type=int)
    seeds: Optional[list[int]] = option(
        help="comma-separated seeds, each a run of its own "
        f"(the paper: {','.join(map(str, PAPER_SEEDS))}); the report gives the mean ± standard deviation "
        "over them",
        type=csv_ints,
        shown="one run, --seed",
    )
    epochs: Optional[int] = option(
        help="training epochs",
        type=positive_int,
        shown=f"XCTFormer the preset's, the Darts baselines 10; explain: {EXPLAIN_EPOCHS}",
    )
    accelerator: str = option(
        "auto",
        "Lightning accelerator for the models that train through Lightning; auto: a GPU if any",
        choices=("auto", "cpu", "gpu"),
    )
    devices: Any = option("auto", "Lightning devices: a count, -1 for all, or indices such as 0,1", type=devices)
    no_progress: bool = option(False, "hide the epoch progress bars")
    command_line: Optional[str] = None  # as typed (every record names it)

    def __post_init__(self) -> None:
        object.__setattr__(self, "output", Path(self.output))
        object.__setattr__(self, "devices", parse_devices(self.devices))

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def per_seed(self) -> list:
        """One settings object per seed of ``seeds`` (or ``seed`` alone)."""
        return [self.replace(seed=seed) for seed in self.seeds or [self.seed]]


@dataclass(frozen=True, kw_only=True)
class TrainingSettings:
    """Training options of the reconstruction tasks (None: the preset's)."""

    train_stride: int = option(
        1, "step between training windows; >1 trains on fewer windows", type=positive_int, shown="1, the paper"
    )
    batch_size: Optional[int] = option(help="training batch size", type=positive_int, shown="the preset's")
    learning_rate: Optional[float] = option(
        help="peak learning rate",
        type=positive_float,
        shown="the preset's",
    )
    arch: Optional[dict[str, Any]] = option(
        help="override the preset's network, e.g. d_model=64,d_ff=128,e_layers=1,n_heads=1 (CPU runs)",
        type=arch,
        shown="the preset's",
    )


@dataclass(frozen=True, kw_only=True)
class ComputeSettings:
    """How XCTFormer's network computes (``--compile``, ``--precision``, ``--exact-fp32``); part of
    each run's identity."""

    compile: bool = option(
        False,
        "compile XCTFormer's network with torch.compile (fast on a GPU with --precision bf16-mixed; "
        "part of each run's identity)",
    )
    precision: str = option(
        PRECISIONS[0],
        "Lightning's training precision for the models that train through Lightning (part of each run's identity)",
        choices=PRECISIONS,
    )
    plain_attention: bool = option(
        False,
        "train XCTFormer on CRAB's plain PyTorch path (fused_attention=False), which keeps the N x N weights: "
        "on a GPU where they fit, often the faster one (docs/scaling.md; part of each run's identity)",
    )
    exact_fp32: bool = option(
        False,
        "float32 matrix products in full float32 on the GPU, not TF32 where the GPU has it "
        "(part of each run's identity)",
    )

    def identity(self, compiles: bool, mixed: bool) -> dict[str, Any]:
        """The run-identity fields of a model that can compile (``compiles``) and train in mixed
        precision (``mixed``); absent at their defaults, so runs recorded before these options
        keep their identity."""
        fields: dict[str, Any] = {}
        if mixed and self.precision != PRECISIONS[0]:
            fields["precision"] = self.precision
        if compiles and self.compile:
            fields["compile"] = True
        if self.exact_fp32:
            fields["exact_fp32"] = True
        processes = training_processes(getattr(self, "accelerator", "auto"), getattr(self, "devices", "auto"))
        if mixed and processes > 1:  # each process takes a batch: another effective batch, other numbers
            fields["processes"] = processes
        return fields

    def record_fields(self, compiles: bool, mixed: bool) -> dict[str, Any]:
        """What a run's record says it ran with (both fields, always)."""
        return {"precision": self.precision if mixed else PRECISIONS[0], "compile": self.compile and compiles}


@dataclass(frozen=True, kw_only=True)
class BackendSettings:
    """Where the runs execute (``--backend``)."""

    backend: str = option(
        "local",
        "local: runs one after another here; ray: every run a Ray task, in parallel "
        "(pip install 'xct-estimators[ray]')",
        choices=BACKENDS,
    )
    ray_address: Optional[str] = option(
        help="with --backend ray: 'auto' or HOST:PORT joins a running cluster", shown="start a local one"
    )
    cpus_per_run: Optional[float] = option(
        help="with --backend ray: CPUs each run reserves",
        type=positive_float,
        shown="1; with --accelerator gpu also one GPU",
    )


@dataclass(frozen=True, kw_only=True)
class ExplainSettings(CommonSettings):
    OMITTED: ClassVar[frozenset] = frozenset({"resume"})  # explain always reuses its saved models

    dataset: list[str] = option(["ETTm1"], "comma-separated forecasting datasets", type=csv(str))
    horizons: Optional[list[int]] = option(help="comma-separated", type=csv_positive_ints, shown="96")
    features: Optional[str] = option(help="as for forecast", choices=("M", "MS"), shown="MS for synthetic, M otherwise")
    seq_len: int = option(96, "look-back window", type=positive_int)


@dataclass(frozen=True, kw_only=True)
class TuneSettings(TrainingSettings, CommonSettings):
    OMITTED: ClassVar[frozenset] = frozenset({"resume", "seeds"})  # a study continues from its storage, one seed

    task: str = option("forecast", "whose search space and training to tune")  # choices: the task registry (parser)
    dataset: str = option("ETTh1", "one dataset")
    trials: int = option(20, "trials in the study, all workers together", type=positive_int)
    timeout: Optional[float] = option(help="stop this worker after S seconds", type=positive_float, shown="no limit")
    horizon: int = option(96, "forecast: horizon", type=positive_int)
    look_backs: Optional[list[int]] = option(
        help="forecast: search the input length among these, e.g. 96,192,336,512,720, and the patch length with "
        "it; validation starts the longest before its first target, so every trial scores the same targets",
        type=csv_positive_ints,
        shown="the paper's 96, not searched",
    )
    mask_rate: float = option(0.25, "impute: mask rate", type=mask_rate)
    patience: Optional[int] = option(
        help="forecast: end a trial after N epochs past the warm-up without a lower validation MSE",
        type=positive_int,
        shown="all epochs",
    )
    storage: Optional[str] = option(
        help="Optuna RDB URL (sqlite:///..., postgresql://...) or journal file path", shown="OUTPUT/optuna.journal"
    )
    study_name: Optional[str] = option(help="study to create or join", shown="task-dataset-horizon")
    space: Optional[str] = option(help="JSON file with a search space", shown="the paper's")
    arch: Optional[dict[str, Any]] = option(
        help="fix network settings for every trial, e.g. e_layers=1,n_heads=1", type=arch, shown="searched"
    )


def default(spec: dataclasses.Field):
    """A settings field's default value (a fresh list where it is one)."""
    return spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default


def options(settings_cls) -> list[dataclasses.Field]:
    """The fields of ``settings_cls`` that are command-line options, its own first, then its bases'."""
    fields = settings_cls.__dataclass_fields__
    names: list[str] = []
    for klass in settings_cls.__mro__:
        names += [name for name in vars(klass).get("__annotations__", {}) if name not in names]
    return [
        fields[name]
        for name in names
        if name in fields and "help" in fields[name].metadata and name not in settings_cls.OMITTED
    ]
