"""Typed settings of each ``xct-bench`` command: the command line builds one, the runners read it.

Field names are the command-line options' (``--seq-len`` is ``seq_len``); each field's default is
the option's default, so the parser takes its defaults from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..nn.presets import PAPER_SEED

DEFAULT_OUTPUT = "xct-bench-results"


def parse_devices(value):
    """Lightning's ``devices``: a count given as digits becomes an int (``"2"`` -> 2)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


@dataclass(frozen=True, kw_only=True)
class CommonSettings:
    """What every command that trains shares."""

    data_dir: Optional[str] = None
    output: Path = Path(DEFAULT_OUTPUT)
    resume: bool = False
    seed: int = PAPER_SEED
    seeds: Optional[list[int]] = None
    epochs: Optional[int] = None
    accelerator: str = "auto"
    devices: Any = "auto"
    no_progress: bool = False
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
class BackendSettings:
    """Where the runs execute (``--backend``)."""

    backend: str = "local"
    ray_address: Optional[str] = None
    cpus_per_run: Optional[float] = None  # None: 1 (Ray's own default)


#: ``--precision``'s choices: Lightning's names; the first is the default.
PRECISIONS = ("32", "bf16-mixed")


@dataclass(frozen=True, kw_only=True)
class ComputeSettings:
    """How XCTFormer's network computes (``--compile``, ``--precision``, ``--exact-fp32``); part of
    each run's identity."""

    compile: bool = False
    precision: str = PRECISIONS[0]
    exact_fp32: bool = False

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
        return fields

    def record_fields(self, compiles: bool, mixed: bool) -> dict[str, Any]:
        """What a run's record says it ran with (both fields, always)."""
        return {"precision": self.precision if mixed else PRECISIONS[0], "compile": self.compile and compiles}


@dataclass(frozen=True, kw_only=True)
class TrainingSettings:
    """Training options of the reconstruction tasks (None: the preset's)."""

    train_stride: int = 1
    batch_size: Optional[int] = None
    learning_rate: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class ForecastSettings(CommonSettings, BackendSettings, ComputeSettings):
    dataset: list[str] = field(default_factory=lambda: ["synthetic"])
    horizons: Optional[list[int]] = None
    models: Optional[list[str]] = None  # None: the forecasting default models
    features: Optional[str] = None
    seq_len: int = 96
    full: bool = False
    covariates: list[str] = field(default_factory=lambda: ["none"])


#: XCTFormer's default peak learning rate in ``xct-bench impute``, as a share of the preset's: at the
#: paper's peak, ETTh2 at a 12.5 % mask rate diverges at the one-cycle peak and gradient clipping does
#: not prevent it (benchmarks/results/cpu/training-stability); this share does not, and trains
#: better than half the peak at every rate both ran (impute-etth2-peak-0.75 against impute-etth2-half-peak).
STABLE_PEAK_SHARE = 0.75


@dataclass(frozen=True, kw_only=True)
class ImputeSettings(CommonSettings, BackendSettings, TrainingSettings, ComputeSettings):
    dataset: list[str] = field(default_factory=lambda: ["ETTh1"])
    models: Optional[list[str]] = None
    protocol: str = "tslib"
    eval_stride: int = 1
    mask_rates: Optional[list[float]] = None  # None: the paper's four
    paper_learning_rate: bool = False  # XCTFormer at the preset's peak rate, not the stable one

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.paper_learning_rate and self.learning_rate:
            raise ValueError("--paper-learning-rate and --learning-rate both set the peak rate: give one of them.")


@dataclass(frozen=True, kw_only=True)
class DetectSettings(CommonSettings, BackendSettings, TrainingSettings, ComputeSettings):
    dataset: list[str] = field(default_factory=lambda: ["MSL"])
    models: Optional[list[str]] = None
    protocol: list[str] = field(default_factory=lambda: ["tslib"])
    arch: Optional[dict[str, Any]] = None


#: Epochs of ``xct-bench explain`` unless ``--epochs`` says otherwise: enough for a first picture.
EXPLAIN_EPOCHS = 3


@dataclass(frozen=True, kw_only=True)
class ExplainSettings(CommonSettings):
    dataset: list[str] = field(default_factory=lambda: ["ETTm1"])
    horizons: Optional[list[int]] = None
    features: Optional[str] = None
    seq_len: int = 96


@dataclass(frozen=True, kw_only=True)
class TuneSettings(CommonSettings, TrainingSettings):
    task: str = "forecast"
    dataset: str = "ETTh1"
    trials: int = 20
    timeout: Optional[float] = None
    horizon: int = 96
    mask_rate: float = 0.25
    storage: Optional[str] = None
    study_name: Optional[str] = None
    space: Optional[str] = None
    arch: Optional[dict[str, Any]] = None


def default(settings_cls, name: str):
    """The default of field ``name`` of ``settings_cls`` (what the option's parser shows)."""
    spec = settings_cls.__dataclass_fields__[name]
    return spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default
