"""The three tasks ``xct-bench`` runs, each described once: how a run is planned, what its records
hold, which of their fields places a run in the paper's tables and the measure comparisons rank by.
The commands, reports and the results page read these entries instead of comparing task names."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from . import paper
from .catalog import DETECTION_MODELS, FORECAST_MODELS, IMPUTATION_MODELS
from .detect.record import DetectRecord
from .detect.settings import DetectSettings
from .forecast.record import ForecastRecord
from .forecast.settings import ForecastSettings
from .impute.record import ImputeRecord
from .impute.settings import ImputeSettings


@dataclass(frozen=True)
class Measure:
    label: str
    key: str
    lower_is_better: bool


@dataclass(frozen=True)
class Task:
    name: str  # also its package under xct_estimators.bench, whose protocol module has NAME_jobs and tune_data
    title: str
    settings: type  # its command's typed settings, whose fields are the command's options
    command_help: str  # its command's line in ``xct-bench --help``
    description: str  # what its command does, in ``xct-bench NAME --help``
    models: dict[str, str]  # model name -> one line, listed in its command's ``--help``
    strided: bool  # whether training windows can be strided (--train-stride)
    record: type  # its records' class (a :class:`~.record.Record`): their fields and types
    setting: Optional[str]  # the record field that places a run in the paper's tables
    metrics: tuple[str, str]  # the paper's two, first its headline
    scores: tuple[str, ...]  # every measure a record holds, as the report lists them
    measure: Measure
    #: (dataset, where, metric, model) -> the number the paper publishes for that model (or, as
    #: ``published_note`` says, a reference every model is set beside); results pages ask for XCTFormer's
    published: Callable[..., Optional[float]] = lambda dataset, where, metric, model="xctformer": None
    published_note: str = "the paper's XCTFormer"
    #: what the runs table's published columns hold
    runs_note: str = "the paper's number for the run's model, where it gives one"

    def _module(self):
        return importlib.import_module(f"{__package__}.{self.name}.protocol")

    def plan(self, settings, finished: set, progress: bool) -> list:
        """The runs of ``settings`` not in ``finished``, as jobs for a backend."""
        return getattr(self._module(), f"{self.name}_jobs")(settings, finished, progress)

    def tune_data(self, settings) -> tuple:
        """(dataset name, series, val_series) a tuning study on ``settings.dataset`` uses."""
        return self._module().tune_data(settings)


def _errors(published: Optional[tuple[float, float]], metric: str) -> Optional[float]:
    return {"mse": published[0], "mae": published[1]}.get(metric) if published else None


def _detection_reference(dataset: str, protocol: str, metric: str, model: str = "xctformer") -> Optional[float]:
    """The paper's point-adjusted F1 of XCTFormer, under the paper's protocol only. TSB-AD's VUS-PR
    are of its own MSL and SMAP series (14 TSB-AD-M files, all channels), not of the entities here,
    so no published number sits beside the entity protocol."""
    if metric == "f1_adjusted" and dataset in paper.ANOMALY and protocol == "tslib" and model == "xctformer":
        return paper.ANOMALY[dataset][2] / 100
    return None


#: The paper's imputer: XCTFormer, with either fill of the hidden inputs.
_PAPERS_IMPUTER = ("xctformer", "xctformer_linear")
FORECAST = Task(
    name=ForecastRecord.TASK,
    title="forecasting",
    settings=ForecastSettings,
    command_help="long-term forecasting (default command)",
    description="Train each model on the training split, forecast every test window with Darts' "
    "historical_forecasts, score with darts.metrics.",
    models=FORECAST_MODELS,
    strided=False,
    record=ForecastRecord,
    setting="horizon",
    metrics=("mse", "mae"),
    scores=("mse", "mae"),
    measure=Measure("MSE", "mse", True),
    published=lambda dataset, horizon, metric, model="xctformer": _errors(
        paper.forecast_reference(dataset, horizon, model), metric
    ),
)
IMPUTE = Task(
    name=ImputeRecord.TASK,
    title="imputation",
    settings=ImputeSettings,
    command_help="imputation (input 1024, random point masks)",
    description="Train each model on the training split (validation split for early stopping), hide points of "
    "the test split at random, score MSE/MAE on the hidden points.",
    models=IMPUTATION_MODELS,
    strided=True,
    record=ImputeRecord,
    setting="mask_rate",
    metrics=("mse", "mae"),
    scores=("mse", "mae"),
    measure=Measure("MSE", "mse", True),
    published=lambda dataset, rate, metric, model="xctformer": _errors(
        paper.IMPUTATION.get(paper.dataset_key(dataset), {}).get(rate) if model in _PAPERS_IMPUTER else None, metric
    ),
)
#: Detection ranks by VUS-PR (TSB-AD's most reliable measure), not the point-adjusted F1 that noise can win.
DETECT = Task(
    name=DetectRecord.TASK,
    title="anomaly detection",
    settings=DetectSettings,
    command_help="anomaly detection (window length 100, the paper's threshold rule)",
    description="Train each model on the training array, score the test array, threshold at the (100 - anomaly "
    "ratio) percentile of train and test energies; F1 with and without point adjustment, AUC-PR, AUC-ROC, "
    "VUS-PR and VUS-ROC.",
    models=DETECTION_MODELS,
    strided=True,
    record=DetectRecord,
    setting=None,
    metrics=("f1_adjusted", "f1"),
    scores=("vus_pr", "auc_pr", "auc_roc", "vus_roc", "f1", "f1_adjusted"),
    measure=Measure("VUS-PR", "vus_pr", False),
    published=_detection_reference,
    published_note="the paper's point-adjusted F1 of XCTFormer under its protocol (none beside VUS-PR: TSB-AD's "
    "published VUS-PR are of its own MSL and SMAP series, another protocol than the entities here)",
    runs_note="XCTFormer's point-adjusted F1 under the paper's protocol",
)
TASKS = {task.name: task for task in (FORECAST, IMPUTE, DETECT)}
