"""``xct-bench detect``'s options."""

from __future__ import annotations

from dataclasses import dataclass

from ...nn.presets import COMMAND_TASKS, TASK_SEQ_LEN
from ..catalog import ANOMALY_DATASETS, DEFAULT_DETECTION_MODELS, DETECTION_MODELS, DETECTION_PROTOCOLS
from ..option_types import csv_of, positive_int
from ..settings import BackendSettings, CommonSettings, ComputeSettings, TrainingSettings, listed, option
from .scoring import PAPER_SCORING, scoring_list


@dataclass(frozen=True, kw_only=True)
class DetectSettings(TrainingSettings, CommonSettings, ComputeSettings, BackendSettings):
    dataset: list[str] = option(["MSL"], f"comma-separated: {listed(ANOMALY_DATASETS)}", type=csv_of(ANOMALY_DATASETS))
    models: list[str] = option(
        list(DEFAULT_DETECTION_MODELS), "comma-separated, see models below", type=csv_of(tuple(DETECTION_MODELS))
    )
    protocol: list[str] = option(
        ["tslib"],
        "comma-separated; tslib: every stride-1 window's energies, the paper's table; point: one score per point "
        "from averaged windows, what the scorer and detector give; entity: each entity (spacecraft channel) "
        "standardised and scored on its own, measures averaged over entities (TSB-AD's way)",
        type=csv_of(DETECTION_PROTOCOLS),
    )
    scoring: list[str] = option(
        [PAPER_SCORING],
        "comma-separated scaling/aggregation[/span[/channels]] for the reconstructors under point and entity: "
        "none/mean (the paper), standardize/mean, standardize/max, standardize/K (the mean of the K largest channel "
        "scores); a span, as in standardize/max/100, smooths the step scores by a centred moving mean over that many "
        "steps; channels all or continuous, as in none/mean/100/continuous, scores only the channels with more than "
        "two distinct training values (not 0/1 flags); the scaling local, as in local/mean/100/continuous, divides "
        "each error by its input's variance over the window centred on the step",
        type=scoring_list,
    )
    window_length: int = option(
        TASK_SEQ_LEN[COMMAND_TASKS["detect"]],
        "length of the windows the detectors reconstruct (tslib: of every scored window)",
        type=positive_int,
        shown="100, the paper",
    )
