"""The paper's facts: hyperparameters per task and dataset (App. B, Table "Hyperparameter
settings"), its training recipe's constants, the ablations and the DeCoP rule; and, beyond the
paper, the forecasting recipes a recorded look-back search found (:func:`searched_preset`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from .hyperparameters import ARCHITECTURE_PARAMS

if TYPE_CHECKING:  # the config module loads torch; the presets are plain data
    from .config import XCTFormerConfig

TASKS = ("forecast", "impute", "anomaly")
#: ``xct-bench`` and the tuner name the anomaly task by its command, ``detect``.
COMMAND_TASKS = {"forecast": "forecast", "impute": "impute", "detect": "anomaly"}

#: OneCycleLR's warm-up share (App. B).
PAPER_PCT_START = 0.4
#: Early-stopping patience of the paper's code.
PAPER_PATIENCE = 6
#: The seeds of the paper's repeated runs; its code's single runs take the first.
PAPER_SEEDS = (2021, 2022, 2023, 2024, 2025)
PAPER_SEED = PAPER_SEEDS[0]
#: Imputation mask rates of the paper (Table 3).
IMPUTATION_MASK_RATES = (0.125, 0.25, 0.375, 0.5)
#: Input window of each task in the paper: forecasting look-back 96 (TimesNet setup),
#: imputation 1024 (TimeMixer++ setup), anomaly detection 100.
TASK_SEQ_LEN = {"forecast": 96, "impute": 1024, "anomaly": 100}

#: Channels of each benchmark dataset.
DATASET_CHANNELS = {
    "ETTh1": 7,
    "ETTh2": 7,
    "ETTm1": 7,
    "ETTm2": 7,
    "Weather": 21,
    "ECL": 321,
    "Traffic": 862,
    "MSL": 55,
    "PSM": 25,
    "SMAP": 25,
    "SMD": 38,
    "SWaT": 51,
}

_ALIASES = {"electricity": "ECL"}


@dataclass(frozen=True)
class XCTFormerPreset:
    """One row of the paper's hyperparameter table: architecture plus training recipe."""

    task: str
    dataset: str
    patch_len: int
    stride: int
    e_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    dropout: float
    fc_dropout: float
    attn_dropout: float
    decop_k: Optional[int]
    batch_size: int
    learning_rate: float
    epochs: int
    input_len: Optional[int] = None  # a searched recipe's; None: the paper's for the task

    @property
    def n_channels(self) -> int:
        return DATASET_CHANNELS[self.dataset]

    @property
    def seq_len(self) -> int:
        return TASK_SEQ_LEN[self.task] if self.input_len is None else self.input_len

    def architecture(self) -> dict:
        """The network hyperparameters, as keyword arguments of :class:`XCTFormerConfig`."""
        return {name: getattr(self, name) for name in ARCHITECTURE_PARAMS}

    def estimator_params(self, length_name: str) -> dict:
        """Constructor arguments of an estimator with this row: the input length under the
        estimator's name for it (``input_chunk_length`` or ``window_length``), the architecture,
        and the training recipe (``n_epochs``, ``batch_size``, ``learning_rate``)."""
        training = dict(n_epochs=self.epochs, batch_size=self.batch_size, learning_rate=self.learning_rate)
        return {length_name: self.seq_len, **self.architecture(), **training}

    def config(self, out_len: Optional[int] = None, **overrides) -> XCTFormerConfig:
        """An :class:`XCTFormerConfig` for this row.

        ``seq_len`` and ``n_channels`` default to the paper's setting for the task and
        dataset; ``out_len`` defaults to ``seq_len`` (reconstruction) and is required for
        forecasting. ``overrides`` replace any field.
        """
        if out_len is None:
            if self.task == "forecast":
                raise ValueError("A forecasting preset needs out_len (the horizon, e.g. 96).")
            out_len = overrides.get("seq_len", self.seq_len)
        fields = {"seq_len": self.seq_len, "n_channels": self.n_channels, "out_len": out_len}
        fields.update(self.architecture())
        fields.update(overrides)
        from .config import XCTFormerConfig

        return XCTFormerConfig(**fields)


# fmt: off
_PRESETS = [
    #                          dataset  patch stride layers heads d_model d_ff drop  fc    attn  k    batch lr      epochs
    XCTFormerPreset("forecast", "ETTh1",   16,  8,    1,     1,    8,      16,  0.2,  0.3,  0.6,  None, 32,  0.001,  10),
    XCTFormerPreset("forecast", "ETTh2",   16,  8,    3,     1,    30,     60,  0.1,  0.2,  0.8,  None, 32,  0.01,   10),
    XCTFormerPreset("forecast", "ETTm1",   16,  8,    2,     4,    32,     64,  0.1,  0.05, 0.8,  None, 32,  0.005,  10),
    XCTFormerPreset("forecast", "ETTm2",   16,  8,    1,     1,    224,    448, 0.1,  0.05, 0.8,  None, 32,  0.005,  10),
    XCTFormerPreset("forecast", "Weather", 16,  8,    3,     2,    248,    496, 0.1,  0.05, 0.8,  None, 32,  0.0005, 10),
    XCTFormerPreset("forecast", "Traffic", 16,  8,    3,     4,    248,    496, 0.1,  0.05, 0.6,  192,  8,   0.001,  10),
    XCTFormerPreset("forecast", "ECL",     16,  8,    3,     1,    248,    496, 0.1,  0.05, 0.5,  64,   32,  0.005,  10),
    XCTFormerPreset("impute",   "ETTh1",   16,  8,    2,     1,    64,     128, 0.1,  0.05, 0.5,  None, 32,  0.01,   10),
    XCTFormerPreset("impute",   "ETTh2",   64,  32,   3,     1,    160,    320, 0.1,  0.05, 0.3,  None, 32,  0.005,  10),
    XCTFormerPreset("impute",   "ETTm1",   16,  8,    3,     4,    96,     192, 0.1,  0.05, 0.1,  None, 32,  0.005,  10),
    XCTFormerPreset("impute",   "ETTm2",   16,  8,    2,     1,    128,    256, 0.1,  0.05, 0.5,  None, 32,  0.001,  10),
    XCTFormerPreset("impute",   "Weather", 16,  8,    3,     1,    192,    384, 0.1,  0.05, 0.8,  None, 32,  0.001,  10),
    XCTFormerPreset("impute",   "ECL",     64,  32,   2,     2,    192,    384, 0.1,  0.05, 0.7,  128,  32,  0.005,  10),
    XCTFormerPreset("anomaly",  "MSL",     16,  8,    2,     4,    256,    512, 0.1,  0.05, 0.7,  None, 128, 0.01,   10),
    XCTFormerPreset("anomaly",  "PSM",     16,  8,    2,     1,    256,    512, 0.1,  0.05, 0.8,  None, 128, 0.001,  10),
    XCTFormerPreset("anomaly",  "SMAP",    16,  8,    3,     1,    256,    128, 0.1,  0.05, 0.3,  None, 128, 0.005,  10),
    XCTFormerPreset("anomaly",  "SMD",     16,  8,    2,     1,    168,    336, 0.1,  0.05, 0.3,  None, 128, 0.001,  10),
    XCTFormerPreset("anomaly",  "SWaT",    16,  8,    1,     2,    216,    432, 0.1,  0.05, 0.4,  None, 128, 0.0005, 10),
]
# fmt: on

PRESETS: dict[tuple[str, str], XCTFormerPreset] = {(p.task, p.dataset): p for p in _PRESETS}


def _canonical_dataset(dataset: str) -> str:
    key = dataset.lower()
    key = _ALIASES.get(key, key)
    for name in DATASET_CHANNELS:
        if name.lower() == key.lower():
            return name
    raise ValueError(
        f"Unknown dataset {dataset!r}: the paper has presets for "
        f"{', '.join(DATASET_CHANNELS)} (also {', '.join(f'{a!r} for {c}' for a, c in _ALIASES.items())})."
    )


def known_channels(dataset: str) -> Optional[int]:
    """Channels of one of the paper's datasets (case and aliases ignored); ``None`` for other data."""
    try:
        return DATASET_CHANNELS[_canonical_dataset(dataset)]
    except ValueError:
        return None


def get_preset(dataset: str, task: str = "forecast") -> XCTFormerPreset:
    """The paper's row for ``dataset`` (case-insensitive) and ``task``.

    ``task`` is one of ``"forecast"``, ``"impute"``, ``"anomaly"``.
    """
    if task not in TASKS:
        raise ValueError(f"Unknown task {task!r}; choose one of {TASKS}.")
    name = _canonical_dataset(dataset)
    try:
        return PRESETS[(task, name)]
    except KeyError:
        have = [d for (t, d) in PRESETS if t == task]
        raise ValueError(
            f"The paper has no {task!r} preset for {name}; {task!r} presets exist for {', '.join(have)}."
        ) from None


def list_presets(task: Optional[str] = None) -> list[XCTFormerPreset]:
    """All presets, or those of one task, in the paper's table order."""
    return [p for p in _PRESETS if task is None or p.task == task]


#: The recipes ``XCTFormerModel.from_preset`` takes: the paper's rows, or a searched one.
RECIPES = ("paper", "searched")
#: Forecasting recipes beyond the paper: (dataset, horizon searched at) -> the best trial of the
#: project's look-back search there (``xct-bench tune --look-backs``), as a preset row with its own
#: input length (the lab's records hold the searches; a test holds each row equal to its search's best).
SEARCHED: dict[tuple[str, int], XCTFormerPreset] = {
    # task, dataset, patch_len, stride, e_layers, n_heads, d_model, d_ff, dropout, fc_dropout, attn_dropout,
    # decop_k, batch_size, learning_rate, epochs, input_len
    ("ETTh1", 96): XCTFormerPreset("forecast", "ETTh1", 48, 24, 2, 1, 34, 68, 0.2, 0.3, 0.8, None, 32, 0.005, 10, 96),
    ("ETTh1", 336): XCTFormerPreset(
        "forecast", "ETTh1", 32, 16, 1, 4, 36, 72, 0.3, 0.2, 0.8, None, 32, 0.0005, 10, 336
    ),
    ("ETTh2", 96): XCTFormerPreset("forecast", "ETTh2", 32, 16, 1, 1, 48, 96, 0.2, 0.15, 0.8, None, 32, 0.01, 10, 192),
}


def searched_preset(dataset: str, horizon: int) -> XCTFormerPreset:
    """The searched forecasting recipe for ``dataset`` at ``horizon``: the one searched at
    :func:`searched_horizon`."""
    return SEARCHED[_canonical_dataset(dataset), searched_horizon(dataset, horizon)]


def searched_datasets() -> list[str]:
    """The datasets with a searched recipe."""
    return sorted({name for name, _ in SEARCHED})


def searched_horizon(dataset: str, horizon: int) -> int:
    """The horizon whose search gives ``dataset``'s recipe at ``horizon``: the nearest searched one
    (the shorter on a tie)."""
    name = _canonical_dataset(dataset)
    searched = sorted(h for (d, h) in SEARCHED if d == name)
    if not searched:
        have = ", ".join(searched_datasets()) or "no dataset so far"
        raise ValueError(
            f"No searched recipe for {name} yet (the project's recorded searches: {have}). Take the paper's "
            "(recipe='paper'; xct-bench: --models xctformer). With a search of your own (xct-bench tune "
            "--look-backs, docs/scaling.md), build the model from its result: "
            "XCTFormerModel.from_params(output_chunk_length=..., **best_params(study))."
        )
    return min(searched, key=lambda h: (abs(h - horizon), h))
