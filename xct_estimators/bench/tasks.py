"""Imputation and anomaly-detection runs for ``xct-bench impute`` / ``xct-bench detect``."""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np
from sklearn.preprocessing import StandardScaler
from tqdm.auto import tqdm

from ..nn.config import ABLATIONS
from ..nn.presets import TASK_SEQ_LEN
from .datasets import load_anomaly_dataset, load_forecast_dataset
from .detection import ANOMALY_RATIOS, evaluate_point, evaluate_tslib
from .detectors import build_detector
from .imputation import evaluate_series, evaluate_windows, window_starts
from .imputers import IMPUTATION_MODELS
from .models import ABLATION_MODELS, preset_name
from .results import run_key
from .runs import parse_devices, plain_settings

#: The paper's code: early stopping patience and the presets' epoch count for imputation.
PAPER_PATIENCE = 6
PAPER_EPOCHS = 10


def _engine(dataset_preset: str, task: str, args, **extra):
    from ..reconstruction import ReconstructionEngine, preset_params

    params = preset_params(dataset_preset, task)
    if args.epochs:
        params["n_epochs"] = args.epochs
    for name in ("batch_size", "learning_rate"):
        if getattr(args, name, None):
            params[name] = getattr(args, name)
    params.update(extra)
    accelerator = args.accelerator
    devices = parse_devices(args.devices)
    return ReconstructionEngine(
        **params,
        patience_after_warmup=False,  # the paper's early stopping counts from the first epoch
        random_state=args.seed,
        accelerator=accelerator,
        devices=devices,
        progress_bar=not args.no_progress,
    )


def imputation_splits(name: str, data_dir, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardised train, validation and test arrays for imputation (validation and test moved
    back by the input length 1024, as for forecasting)."""
    data = load_forecast_dataset(name, data_dir, seed=seed)
    splits = data.splits(TASK_SEQ_LEN["impute"])
    values = data.series.values(copy=False).astype(np.float64)
    scaler = StandardScaler().fit(values[slice(*splits.train)])
    scaled = scaler.transform(values).astype(np.float32)
    return scaled[slice(*splits.train)], scaled[slice(*splits.val)], scaled[slice(*splits.test)]


def build_imputer(model: str, dataset: str, mask_rate: float, args):
    from .imputers import LinearImputer, SAITSImputer, SktimeWindowImputer, XCTFormerBenchImputer

    if model in ("xctformer", "xctformer_linear") or model in ABLATION_MODELS:
        fill = "linear" if model == "xctformer_linear" else "zero"
        switches = ABLATIONS[ABLATION_MODELS[model]] if model in ABLATION_MODELS else {}
        engine = _engine(
            preset_name(dataset), "impute", args, mask_rate=mask_rate, fill=fill, patience=PAPER_PATIENCE,
            train_stride=args.train_stride, **switches,
        )  # fmt: skip
        return XCTFormerBenchImputer(engine)
    if model == "linear":
        return LinearImputer()
    if model == "sktime_imputer":
        return SktimeWindowImputer()
    if model == "saits":
        device = "cuda" if args.accelerator == "gpu" else "cpu"
        epochs = args.epochs or PAPER_EPOCHS
        return SAITSImputer(TASK_SEQ_LEN["impute"], mask_rate, epochs, args.train_stride, args.seed, device)
    raise ValueError(f"Unknown imputation model {model!r}; choose from {', '.join(IMPUTATION_MODELS)}.")


#: Models whose training reads ``--train-stride``.
_STRIDED = ("xctformer", "xctformer_linear", "saits", *ABLATION_MODELS)


def _impute_work(args, dataset: str, rate: float, model: str, arrays, record: dict):
    """One imputation run, wherever it executes."""
    imputer = build_imputer(model, dataset, rate, args)
    train, val, test = arrays
    window_length = TASK_SEQ_LEN["impute"]
    start = time.perf_counter()
    imputer.fit(train, val)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    if args.protocol == "tslib":
        n_windows = len(window_starts(len(test), window_length, args.eval_stride))
        with tqdm(total=n_windows, desc="windows", unit="win", leave=False, disable=args.no_progress) as wins:
            metrics = evaluate_windows(
                imputer.impute_windows, test, window_length, rate, args.seed, args.eval_stride, wins.update
            )
    else:
        metrics = evaluate_series(imputer.impute_series, test, rate, args.seed)
    record = {
        **record, **metrics, "epochs": imputer.settings.get("epochs"), "settings": plain_settings(imputer.settings),
        "fit_seconds": fit_seconds, "eval_seconds": time.perf_counter() - start,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }  # fmt: skip
    return [(record, None)]


def _impute_summary(record: dict) -> str:
    return (
        f"{record['dataset']} mask {record['mask_rate']} {record['model']}: MSE {record['mse']:.4f} "
        f"MAE {record['mae']:.4f}"
    )


def impute_jobs(args, finished: set, progress: bool = True) -> list:
    """``xct-bench impute``'s runs for ``args.seed`` that are not in ``finished``, as jobs."""
    from .backends import Job

    args = argparse.Namespace(**{**vars(args), "no_progress": args.no_progress or not progress})
    window_length = TASK_SEQ_LEN["impute"]
    splits = {d: imputation_splits(d, args.data_dir, args.seed) for d in args.dataset}  # all checked first
    jobs = []
    for dataset, rate, model in ((d, r, m) for d in args.dataset for r in args.mask_rates for m in args.models):
        imputer = build_imputer(model, dataset, rate, args)  # not trained here: it names the run's settings
        run = {
            "task": "impute", "dataset": dataset, "mask_rate": rate, "model": model, "seed": args.seed,
            "protocol": args.protocol, "eval_stride": args.eval_stride if args.protocol == "tslib" else None,
            "train_stride": args.train_stride if model in _STRIDED else None, "window_length": window_length,
            "settings": plain_settings(imputer.settings),
        }  # fmt: skip
        record = {**run, "run": run}
        if run_key(record) in finished:
            print(f"skip (already in results): {dataset} mask rate {rate} {model} seed {args.seed}")
            continue
        work = partial(_impute_work, args, dataset, rate, model, splits[dataset], record)
        jobs.append(Job(f"{dataset} mask {rate} {model} seed {args.seed}", work, _impute_summary, run))
    return jobs


def detection_arrays(name: str, data_dir) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train and test arrays standardised with a scaler fitted on the training array, test labels."""
    data = load_anomaly_dataset(name, data_dir)
    scaler = StandardScaler().fit(data.train)
    train = scaler.transform(data.train).astype(np.float32)
    test = scaler.transform(data.test).astype(np.float32)
    return train, test, np.asarray(data.labels, dtype=bool)


def _detection_engine(dataset: str, args, **switches):
    return _engine(
        dataset, "anomaly", args, window_length=TASK_SEQ_LEN["anomaly"], train_stride=args.train_stride,
        patience=PAPER_PATIENCE, fill="zero", **(args.arch or {}), **switches,
    )  # fmt: skip


def _detect_work(args, dataset: str, model: str, arrays, runs: dict, todo: list):
    """One detector trained once, evaluated under each protocol in ``todo``, wherever it executes."""
    length = TASK_SEQ_LEN["anomaly"]
    detector = build_detector(model, partial(_detection_engine, dataset, args), length, args.seed)
    train, test, labels = arrays
    ratio = ANOMALY_RATIOS[dataset]
    start = time.perf_counter()
    detector.fit(train)
    fit_seconds = time.perf_counter() - start
    outcome = []
    for protocol in todo:
        start = time.perf_counter()
        if protocol == "tslib":
            total = len(train) + len(test) - 2 * length + 2  # stride-1 windows of train and test
            with tqdm(total=total, desc="windows", unit="win", leave=False, disable=args.no_progress) as wins:
                metrics = evaluate_tslib(detector, train, test, labels, ratio, length, wins.update)
        else:
            metrics = evaluate_point(detector, train, test, labels, ratio)
        record = {
            **runs[protocol], "run": runs[protocol], **metrics, "settings": plain_settings(detector.settings),
            "fit_seconds": fit_seconds, "eval_seconds": time.perf_counter() - start,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }  # fmt: skip
        outcome.append((record, None))
    return outcome


def _detect_summary(record: dict) -> str:
    return (
        f"{record['dataset']} {record['model']} ({record['protocol']}): F1 {record['f1']:.4f}, "
        f"AUC-PR {record['auc_pr']:.4f}, AUC-ROC {record['auc_roc']:.4f}, "
        f"point-adjusted F1 {record['f1_adjusted']:.4f}"
    )


def detect_jobs(args, finished: set, progress: bool = True) -> list:
    """``xct-bench detect``'s runs for ``args.seed``: each (dataset, model) trained once for the
    protocols not in ``finished``."""
    from .backends import Job

    args = argparse.Namespace(**{**vars(args), "no_progress": args.no_progress or not progress})
    length = TASK_SEQ_LEN["anomaly"]
    arrays = {d: detection_arrays(d, args.data_dir) for d in args.dataset}  # all checked first
    jobs = []
    for dataset, model in ((d, m) for d in args.dataset for m in args.models):
        detector = build_detector(model, partial(_detection_engine, dataset, args), length, args.seed)
        base = {
            "task": "detect", "dataset": dataset, "model": model, "seed": args.seed,
            "train_stride": args.train_stride if model.startswith("xctformer") else None,
            "arch": args.arch if model.startswith("xctformer") else None, "anomaly_ratio": ANOMALY_RATIOS[dataset],
            "window_length": length,
            "settings": plain_settings(detector.settings),
        }  # fmt: skip
        runs = {p: {**base, "protocol": p} for p in args.protocol}
        todo = [p for p, run in runs.items() if run_key({"run": run}) not in finished]
        if not todo:
            print(f"skip (already in results): {dataset} {model} seed {args.seed}")
            continue
        work = partial(_detect_work, args, dataset, model, arrays[dataset], runs, todo)
        jobs.append(Job(f"{dataset} {model} seed {args.seed}", work, _detect_summary, runs[todo[0]]))
    return jobs

