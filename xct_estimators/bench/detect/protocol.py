"""``xct-bench detect``: the anomaly-detection benchmark's data, protocols (``tslib``, the paper's;
``point``; ``entity``: docs/benchmarks.md, Anomaly detection) and runs; the detectors are in
:mod:`.detectors`, VUS in :mod:`..vus`."""

from __future__ import annotations

import time
from functools import partial

import numpy as np
from sklearn.preprocessing import StandardScaler
from tqdm.auto import tqdm

from ...nn.presets import COMMAND_TASKS, PAPER_PATIENCE
from ..datasets import load_anomaly_dataset
from ..models import (
    compiled_graphs,
    finished,
    reconstruction_engine,
    timed_fit,
)
from ..option_types import arch_text
from ..provenance import run_fields
from ..results import identity
from ..runs import plain_settings
from .detectors import XCTFormerBenchDetector, build_detector
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


def window_labels(labels: np.ndarray, length: int) -> np.ndarray:
    """The labels of every stride-1 window, concatenated in window order."""
    return np.lib.stride_tricks.sliding_window_view(np.asarray(labels, dtype=bool), length).reshape(-1)


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
            arch = f" and --arch {arch_text(args.arch)}" if args.arch and model.startswith("xctformer") else ""
            raise ValueError(f"{model} on {dataset} with --window-length {length}{arch}: {error}") from None
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
