"""``xct-bench detect``: the anomaly-detection benchmark, its data, detectors, protocols and runs.

Data: the training and test arrays of MSL or SMAP, standardised on the training array.

Detectors (:data:`DETECTION_MODELS`): each has ``fit(train)``, ``window_energies(values, length,
progress)`` (one energy per stride-1 window and time step: the ``tslib`` protocol),
``point_scores(values)`` (one score per step and the number of windows behind them: the ``point``
protocol) and ``settings``. Reconstructors
(XCTFormer, the window mean) score a window by its reconstruction MSE over channels; Darts'
scorers give one score per step, and a window's energies are the scores of its steps.

Protocols. ``tslib`` (the paper's numbers, Time-Series-Library's loop): every stride-1 window of the
training and of the test array is scored, one energy per window and time step (the
reconstruction MSE over channels); the energies are concatenated in window order, so a point
appears in up to ``window_length`` windows, and the test windows' labels are concatenated the
same way. Threshold: ``np.percentile(concat(train, test energies), 100 - anomaly_ratio)``;
prediction: energy > threshold; point adjustment on the concatenated sequences.

``point``: each point gets one score (what a user of the scorer or detector gets: overlapping
windows' reconstructions averaged), the same threshold rule over the train and test scores,
metrics on the original labels.

Both report precision/recall/F1 with and without point adjustment, AUC-PR, AUC-ROC, and
VUS-PR and VUS-ROC (:mod:`.vus`, TSB-AD's definition, over the scores in the protocol's order).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Optional

import numpy as np
from sklearn.preprocessing import StandardScaler
from tqdm.auto import tqdm

from ..._optional import optional_import
from ...nn.hyperparameters import ABLATIONS
from ...nn.presets import COMMAND_TASKS, PAPER_PATIENCE, TASK_SEQ_LEN, get_preset
from ..catalog import DETECTION_MODELS
from ..datasets import load_anomaly_dataset
from ..models import (
    ABLATION_MODELS,
    compiled_graphs,
    finished,
    reconstruction_engine,
    timed_fit,
    without_later_defaults,
)
from ..provenance import run_fields
from ..results import identity
from ..runs import plain_settings
from .entities import evaluate_entities, load_entities, training_rows
from .metrics import detection_metrics, point_adjust, threshold  # noqa: F401 (the protocols' names)
from .record import DetectRecord
from .scoring import PAPER_SCORING, scored
from .settings import DetectSettings

TASK = DetectRecord.TASK
#: The presets' name of this task, "anomaly".
PRESET_TASK = COMMAND_TASKS[TASK]
#: The paper's anomaly ratio per dataset, in percent (the threshold percentile is 100 - ratio).
ANOMALY_RATIOS = {"SMD": 0.5, "MSL": 1.0, "SMAP": 1.0, "PSM": 1.0, "SWaT": 1.0}


def window_view(values: np.ndarray, length: int) -> np.ndarray:
    """Every stride-1 window of a (time, channels) array, (windows, length, channels), no copy."""
    return np.lib.stride_tricks.sliding_window_view(values, length, axis=0).transpose(0, 2, 1)


def window_labels(labels: np.ndarray, length: int) -> np.ndarray:
    """The labels of every stride-1 window, concatenated in window order."""
    return np.lib.stride_tricks.sliding_window_view(np.asarray(labels, dtype=bool), length).reshape(-1)


def chunked_window_energies(
    values: np.ndarray,
    length: int,
    energies_of: Callable[[np.ndarray], np.ndarray],
    chunk: int = 4096,
    progress: Optional[Callable[[int], object]] = None,
) -> np.ndarray:
    """(windows, length) energies of every stride-1 window, ``chunk`` windows at a time
    (``energies_of`` maps (n, length, channels) windows to (n, length) energies)."""
    windows = window_view(values, length)
    out = np.empty((len(windows), length), dtype=np.float32)
    for start in range(0, len(windows), chunk):
        batch = np.ascontiguousarray(windows[start : start + chunk])
        out[start : start + len(batch)] = energies_of(batch)
        if progress is not None:
            progress(len(batch))
    return out


def evaluate_tslib(detector, train, test, labels, anomaly_ratio: float, length: int, progress=None) -> dict:
    """The paper's protocol (module docstring) for a fitted bench detector."""
    train_energy = detector.window_energies(train, length, progress)
    test_energy = detector.window_energies(test, length, progress)
    metrics = detection_metrics(
        test_energy, window_labels(labels, length), threshold(train_energy, test_energy, anomaly_ratio)
    )
    return {**metrics, "n_windows": len(test_energy), "n_train_windows": len(train_energy)}


def evaluate_point(detector, train, test, labels, anomaly_ratio: float, scorings=(PAPER_SCORING,)) -> dict:
    """scoring -> the measures of one score per point (module docstring) for a fitted bench detector."""
    out = {}
    for scoring, (train_scores, test_scores, n_windows) in scored(detector, train, test, scorings).items():
        metrics = detection_metrics(test_scores, labels, threshold(train_scores, test_scores, anomaly_ratio))
        out[scoring] = {**metrics, "n_windows": n_windows}
    return out


#: Window of the Darts scorers: ten steps of context for a per-step score.
DARTS_SCORER_WINDOW = 10
#: ``xctformer_masked``: its training hides this share of the points (the imputation benchmark's
#: middle rate), and its scoring hides as much in each of its passes.
MASKED_RATE, HIDDEN_PASSES = 0.25, 4


def _reconstruction_energy(windows: np.ndarray, reconstruction: np.ndarray) -> np.ndarray:
    return np.square(reconstruction - windows).mean(axis=-1)


def _averaged(values: np.ndarray, length: int, stride: int, reconstruct) -> tuple[np.ndarray, int]:
    """Reconstruct windows every ``stride`` steps (the last one ending at the end), average overlaps."""
    starts = np.arange(0, len(values) - length + 1, stride)
    if starts[-1] != len(values) - length:
        starts = np.append(starts, len(values) - length)
    total = np.zeros(values.shape, dtype=np.float64)
    count = np.zeros((len(values), 1))
    for start in starts:
        total[start : start + length] += reconstruct(values[None, start : start + length])[0]
        count[start : start + length] += 1
    return total / count, len(starts)


class _PerChannelErrors:
    """A detector with per-channel ``point_errors``: its point score is their mean (the paper's)."""

    def point_scores(self, values):
        errors, n_windows = self.point_errors(values)
        return np.nanmean(errors, axis=1), n_windows


class XCTFormerBenchDetector(_PerChannelErrors):
    """A :class:`~xct_estimators.reconstruction.ReconstructionEngine` in anomaly mode."""

    def __init__(self, engine, validation_share: float = 0.2, hidden_passes: Optional[int] = None):
        self.engine = engine
        self.validation_share = validation_share
        self.hidden_passes = hidden_passes  # None: every point seen (the paper); see ReconstructionEngine.score
        self.points_only = hidden_passes is not None  # no window energies of hidden points: no tslib protocol
        params = {"window_length": engine.window_length, **without_later_defaults(engine.architecture)}
        params.update(n_epochs=engine.n_epochs, batch_size=engine.batch_size, learning_rate=engine.learning_rate)
        self.settings = {**params, "patience": engine.patience, "train_stride": engine.train_stride}
        if hidden_passes:
            self.settings.update(mask_rate=engine.mask_rate, fill=engine.fill, hidden_passes=hidden_passes)

    def fit(self, train: np.ndarray) -> XCTFormerBenchDetector:
        # The paper's code: validation = the last 20 % of the training array, also trained on.
        self.engine.fit(train, val_values=train[int(len(train) * (1 - self.validation_share)) :])
        self.settings.update(epochs_trained=self.engine.epochs_trained, best_epoch=self.engine.best_epoch)
        return self

    def window_energies(self, values, length, progress=None):
        if length != self.engine.window_length:
            raise ValueError(f"The engine reconstructs windows of {self.engine.window_length}, not {length}.")
        visible = np.ones((1, length, values.shape[1]), dtype=bool)

        def energies_of(windows):
            reconstruction = self.engine.reconstruct_windows(windows, np.broadcast_to(visible, windows.shape))
            return _reconstruction_energy(windows, reconstruction)

        return chunked_window_energies(values, length, energies_of, progress=progress)

    def point_errors(self, values):
        passes = self.hidden_passes or 1
        return self.engine.score(values, self.hidden_passes), passes * len(self.engine.window_starts(len(values)))


class WindowMeanDetector(_PerChannelErrors):
    """Each window reconstructed by its per-channel mean: no training, deterministic."""

    def __init__(self, window_length: int):
        self.window_length = window_length
        self.settings = {"window_length": window_length, "window_stride": max(window_length // 2, 1)}

    @staticmethod
    def reconstruct_windows(windows: np.ndarray) -> np.ndarray:
        return np.broadcast_to(windows.mean(axis=1, keepdims=True), windows.shape)

    def fit(self, train: np.ndarray) -> WindowMeanDetector:
        return self

    def window_energies(self, values, length, progress=None):
        return chunked_window_energies(
            values, length, lambda w: _reconstruction_energy(w, self.reconstruct_windows(w)), progress=progress
        )

    def point_errors(self, values):
        stride = self.settings["window_stride"]
        reconstruction, n_windows = _averaged(values, self.window_length, stride, self.reconstruct_windows)
        return np.square(reconstruction - values), n_windows


class InterpolationDetector(_PerChannelErrors):
    """Each point predicted from its two neighbours in time (their mean, one at the ends): no
    training, deterministic; the floor of ``xctformer_masked``, whose passes hide no two
    neighbouring steps of a channel, so linear interpolation is exactly this."""

    points_only = True

    def __init__(self, window_length: int):
        self.settings = {"prediction": "mean of the two neighbouring steps", "window_length": window_length}

    def fit(self, train: np.ndarray) -> InterpolationDetector:
        return self

    def point_errors(self, values):
        values = np.asarray(values, dtype=np.float64)
        predicted = np.empty_like(values)
        predicted[1:-1] = (values[:-2] + values[2:]) / 2
        predicted[0], predicted[-1] = values[1], values[-2]
        return np.square(values - predicted), None


class RandomDetector:
    """Uniform scores from a fixed seed: what each measure gives to noise (under point adjustment
    random scores can look state of the art: Kim et al., AAAI 2022)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.settings = {"scores": "uniform on [0, 1)", "seed": seed}

    def fit(self, train: np.ndarray) -> RandomDetector:
        return self

    def _generator(self, values: np.ndarray) -> np.random.Generator:
        return np.random.default_rng([self.seed, len(values)])  # the train and test arrays draw apart

    def window_energies(self, values, length, progress=None):
        windows = len(values) - length + 1
        if progress is not None:
            progress(windows)
        return self._generator(values).random((windows, length), dtype=np.float32)

    def point_scores(self, values):
        return self._generator(values).random(len(values)), None


class DartsScorerDetector:
    """A fittable Darts anomaly scorer; its per-step scores serve both protocols.

    Darts scores a step from the ``window`` steps ending at it, so the first ``window - 1``
    steps have no score of their own: they take the first score.
    """

    def __init__(self, name: str, seed: int):
        self.name = name
        self.seed = seed
        self.settings = {"window": DARTS_SCORER_WINDOW}
        if name == "darts_kmeans":
            self.settings.update(scorer="KMeansScorer", k=8)
        else:
            self.settings.update(scorer="PyODScorer", model="IForest")
        self.scorer = None

    def _build(self):
        from darts.ad import KMeansScorer, PyODScorer

        if self.name == "darts_kmeans":
            return KMeansScorer(k=8, window=DARTS_SCORER_WINDOW, random_state=self.seed)
        iforest = optional_import("pyod.models.iforest", extra="baselines", purpose="The darts_iforest baseline")
        return PyODScorer(iforest.IForest(random_state=self.seed), window=DARTS_SCORER_WINDOW)

    @staticmethod
    def _series(values):
        from darts import TimeSeries

        return TimeSeries.from_values(np.asarray(values, dtype=np.float32))

    def fit(self, train: np.ndarray) -> DartsScorerDetector:
        self.scorer = self._build().fit(self._series(train))
        return self

    def _step_scores(self, values) -> np.ndarray:
        scores = self.scorer.score(self._series(values)).values(copy=False)[:, 0].astype(np.float32)
        return np.concatenate([np.full(len(values) - len(scores), scores[0], dtype=np.float32), scores])

    def window_energies(self, values, length, progress=None):
        windows = np.lib.stride_tricks.sliding_window_view(self._step_scores(values), length)
        if progress is not None:
            progress(len(windows))
        return windows

    def point_scores(self, values):
        return self._step_scores(values), None


def build_detector(model: str, engine_factory, window_length: int, seed: int):
    """The bench detector named ``model``; ``engine_factory()`` builds XCTFormer's engine."""
    if model == "xctformer" or model in ABLATION_MODELS:
        switches = ABLATIONS[ABLATION_MODELS[model]] if model in ABLATION_MODELS else {}
        return XCTFormerBenchDetector(engine_factory(**switches))
    if model == "xctformer_masked":
        return XCTFormerBenchDetector(engine_factory(mask_rate=MASKED_RATE, fill="linear"), hidden_passes=HIDDEN_PASSES)
    if model == "window_mean":
        return WindowMeanDetector(window_length)
    if model == "interpolation":
        return InterpolationDetector(window_length)  # the window of --scoring local/...
    if model == "random":
        return RandomDetector(seed)
    if model in ("darts_kmeans", "darts_iforest"):
        return DartsScorerDetector(model, seed)
    raise ValueError(f"Unknown detection model {model!r}; choose from {', '.join(DETECTION_MODELS)}.")


def detection_arrays(name: str, data_dir) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train and test arrays standardised with a scaler fitted on the training array, test labels."""
    data = load_anomaly_dataset(name, data_dir)
    scaler = StandardScaler().fit(data.train)
    train = scaler.transform(data.train).astype(np.float32)
    test = scaler.transform(data.test).astype(np.float32)
    return train, test, np.asarray(data.labels, dtype=bool)


def _detection_engine(dataset: str, settings: DetectSettings, **switches):
    training = dict(window_length=settings.window_length, train_stride=settings.train_stride, patience=PAPER_PATIENCE)
    return reconstruction_engine(
        dataset, PRESET_TASK, settings, **training, **{"fill": "zero", **(settings.arch or {}), **switches}
    )


def _detect_work(args: DetectSettings, dataset: str, model: str, data, runs: dict, todo: list):
    """One detector trained once, evaluated under each (protocol, scoring) in ``todo``, wherever it
    executes. ``data``: the pooled (train, test, labels) arrays, or the entities."""
    length = args.window_length
    detector = build_detector(model, partial(_detection_engine, dataset, args), length, args.seed)
    pooled = isinstance(data, tuple)
    train = data[0] if pooled else training_rows(data)
    ratio = ANOMALY_RATIOS[dataset]
    fit_seconds = timed_fit(lambda: detector.fit(train), model.startswith("xctformer"))
    outcome = []
    for protocol in dict.fromkeys(protocol for protocol, _ in todo):  # every scoring of a protocol at once
        scorings = [scoring for p, scoring in todo if p == protocol]
        start, graphs = time.perf_counter(), compiled_graphs()
        if protocol == "tslib":
            _, test, labels = data
            total = tslib_windows(len(train), len(test), length)
            with tqdm(total=total, desc="windows", unit="win", leave=False, disable=args.no_progress) as wins:
                measured = {PAPER_SCORING: evaluate_tslib(detector, train, test, labels, ratio, length, wins.update)}
        elif protocol == "point":
            measured = evaluate_point(detector, *data, ratio, scorings)
        else:
            measured = evaluate_entities(detector, data, ratio, scorings)
        for scoring, metrics in measured.items():
            outcome.append(
                _record(args, detector, runs[protocol, scoring], scoring, metrics, fit_seconds, start, graphs)
            )
    return outcome


def _record(args, detector, run: dict, scoring: str, metrics: dict, fit_seconds: float, start: float, graphs: int):
    """The record of one (protocol, scoring) run; its evaluation time is that of its protocol's scorings together."""
    settings = {**plain_settings(detector.settings), **_scoring_setting(scoring)}
    record = {**run, "run": run, **metrics, "settings": settings}
    ours = isinstance(detector, XCTFormerBenchDetector)
    record.update(args.record_fields(compiles=ours, mixed=ours))
    record.update(finished(fit_seconds, start), command=args.command_line, **run_fields(args.accelerator))
    record["eval_compilations"] = compiled_graphs() - graphs
    return DetectRecord.from_json(record), None


def _scoring_setting(scoring: str) -> dict:
    """A run's settings name its scoring unless it is the paper's (so earlier records keep their identity)."""
    return {} if scoring == PAPER_SCORING else {"scoring": scoring}


def _detect_summary(record: DetectRecord) -> str:
    scoring = record.settings.get("scoring")
    return (
        f"{record.dataset} {record.model} ({record.protocol}{f', {scoring}' if scoring else ''}): F1 {record.f1:.4f}, "
        f"AUC-PR {record.auc_pr:.4f}, AUC-ROC {record.auc_roc:.4f}, VUS-PR {record.vus_pr:.4f}, "
        f"point-adjusted F1 {record.f1_adjusted:.4f}"
    )


def detect_jobs(settings: DetectSettings, finished: set, progress: bool = True) -> list:
    """``xct-bench detect``'s runs for ``settings.seed``: each (dataset, model) trained once for the
    pooled protocols and once for the per-entity one, each evaluated under the (protocol, scoring)
    pairs not in ``finished``. ``--scoring`` applies to reconstructors under ``point`` and
    ``entity``; ``tslib`` and the other detectors score their own way."""
    from ..backends import Job

    args = settings.replace(no_progress=settings.no_progress or not progress)
    length = args.window_length
    arrays = {d: detection_arrays(d, args.data_dir) for d in args.dataset}  # all checked first
    entities = {d: load_entities(d, args.data_dir) for d in args.dataset if "entity" in args.protocol}
    jobs = []
    for dataset in args.dataset:
        _check_window(length, dataset, arrays[dataset], entities.get(dataset))
    for dataset, model in ((d, m) for d in args.dataset for m in args.models):
        try:
            detector = build_detector(model, partial(_detection_engine, dataset, args), length, args.seed)
        except ValueError as error:
            raise ValueError(f"--window-length {length} with {model} on {dataset}: {error}") from None
        ours = model.startswith("xctformer")
        base = {"task": TASK, "dataset": dataset, "model": model, "seed": args.seed}
        base.update(train_stride=args.train_stride if ours else None, arch=args.arch if ours else None)
        base.update(anomaly_ratio=ANOMALY_RATIOS[dataset], window_length=length)
        base.update(args.identity(compiles=ours, mixed=ours))
        runs = {}
        for protocol in args.protocol:
            if protocol == "tslib" and getattr(detector, "points_only", False):
                print(
                    f"skip: {model} scores points, not windows; it runs under --protocol point and entity ({dataset})"
                )
                continue
            scorable = hasattr(detector, "point_errors") and protocol != "tslib"
            for scoring in args.scoring if scorable else [PAPER_SCORING]:
                own = {**plain_settings(detector.settings), **_scoring_setting(scoring)}
                runs[protocol, scoring] = {**base, "settings": own, "protocol": protocol}
        todo = [key for key, run in runs.items() if identity(run) not in finished]
        if runs and not todo:
            print(f"skip (already in results): {dataset} {model} seed {args.seed}")
        for group in ([k for k in todo if k[0] != "entity"], [k for k in todo if k[0] == "entity"]):
            if group:
                data = entities[dataset] if group[0][0] == "entity" else arrays[dataset]
                work = partial(_detect_work, args, dataset, model, data, runs, group)
                what = "per entity" if group[0][0] == "entity" else "pooled"
                jobs.append(Job(f"{dataset} {model} {what} seed {args.seed}", work, _detect_summary, runs[group[0]]))
    return jobs


def _check_window(length: int, dataset: str, arrays, entities) -> None:
    """Refuse a window longer than an array it must slide over, naming the longest that fits."""
    parts = {"training array": len(arrays[0]), "test array": len(arrays[1])}
    for entity in entities or []:
        parts.update(
            {
                f"entity {entity.name}'s training rows": len(entity.train),
                f"entity {entity.name}'s test rows": len(entity.test),
            }
        )
    where, rows = min(parts.items(), key=lambda item: item[1])
    if length > rows:
        raise ValueError(
            f"--window-length {length} is longer than {dataset}'s {where} ({rows} rows): pass at most {rows}."
        )


def tune_data(settings) -> tuple:
    """(dataset name, series, None): the training array; its last 20 % validates (never the test labels)."""
    train, _, _ = detection_arrays(settings.dataset, settings.data_dir)
    return settings.dataset, train, None


def tslib_windows(train_rows: int, test_rows: int, length: int) -> int:
    """Windows the tslib protocol scores: every stride-1 window of the train and the test array."""
    return train_rows + test_rows - 2 * length + 2


def preset_of(dataset: str):
    """The paper's detection preset of ``dataset``."""
    return get_preset(dataset, PRESET_TASK)


def run_windows(dataset: str, rows: tuple[int, int], protocols, horizon=None) -> tuple[int, int]:
    """(training, evaluated) windows of one run on arrays of ``rows`` (train, test) rows, evaluated
    under ``protocols``: point scores a window every half length of both arrays."""
    train, test = rows
    length = TASK_SEQ_LEN[PRESET_TASK]
    evaluated = tslib_windows(train, test, length) * ("tslib" in protocols)
    point = ("point" in protocols) + ("entity" in protocols)
    return train - length + 1, evaluated + (train + test) // (length // 2) * point
