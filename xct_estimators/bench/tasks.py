"""Imputation and anomaly-detection runs for ``xct-bench impute`` / ``xct-bench detect``."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import numpy as np
from sklearn.preprocessing import StandardScaler
from tqdm.auto import tqdm

from ..nn.presets import TASK_SEQ_LEN
from .datasets import load_anomaly_dataset, load_forecast_dataset
from .models import preset_name
from .protocols import ANOMALY_RATIOS, anomaly_metrics, evaluate_imputation
from .results import ResultStore, run_key


def _engine(dataset_preset: str, task: str, args, **extra):
    from ..reconstruction import ReconstructionEngine, preset_params

    params = preset_params(dataset_preset, task)
    if args.epochs:
        params["n_epochs"] = args.epochs
    from .cli import parse_devices

    accelerator = args.accelerator
    devices = parse_devices(args.devices)
    return ReconstructionEngine(
        **params,
        random_state=args.seed,
        accelerator=accelerator,
        devices=devices,
        progress_bar=not args.no_progress,
        **extra,
    )


def fit_and_evaluate(engine, train: np.ndarray, evaluate) -> dict:
    """Train ``engine``, run ``evaluate(engine)``; its metrics plus the fields every run records."""
    start = time.perf_counter()
    engine.fit(train)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    metrics = evaluate(engine)
    return {
        **metrics,
        "epochs": engine.n_epochs,
        "train_stride": engine.train_stride,
        "fit_seconds": fit_seconds,
        "eval_seconds": time.perf_counter() - start,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def detection_metrics(engine, train, test, labels, alpha) -> dict:
    """Per-point score = reconstruction MSE over channels; metrics at the (1 - alpha) quantile."""
    train_scores = engine.score(train).mean(axis=1)
    test_scores = engine.score(test).mean(axis=1)
    return anomaly_metrics(test_scores, labels, train_scores, alpha)


def imputation_splits(name: str, data_dir, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Standardised train and test arrays of a dataset for imputation (input 1024)."""
    data = load_forecast_dataset(name, data_dir, seed=seed)
    splits = data.splits(TASK_SEQ_LEN["impute"])
    values = data.series.values(copy=False).astype(np.float64)
    scaler = StandardScaler().fit(values[slice(*splits.train)])
    scaled = scaler.transform(values).astype(np.float32)
    return scaled[slice(*splits.train)], scaled[slice(*splits.test)]


def run_imputations(args) -> int:
    from .cli import print_report

    output = Path(args.output)
    store = ResultStore(output)
    finished = store.finished() if args.resume else set()
    plan = [(d, rate) for d in args.dataset for rate in args.mask_rates]
    cache = {}
    bar = tqdm(plan, desc="runs", unit="run")
    for dataset, rate in bar:
        record = {"dataset": dataset, "task": "impute", "mask_rate": rate, "model": "xctformer", "seed": args.seed}
        if run_key(record) in finished:
            bar.write(f"skip (already in results): {dataset} mask rate {rate}")
            continue
        if dataset not in cache:
            cache[dataset] = imputation_splits(dataset, args.data_dir, args.seed)
        train, test = cache[dataset]
        engine = _engine(preset_name(dataset), "impute", args, mask_rate=rate)
        evaluate = partial(evaluate_imputation, values=test, mask_rate=rate, seed=args.seed)
        record.update(fit_and_evaluate(engine, train, evaluate))
        store.append(record)
        bar.write(f"{dataset} mask {rate}: MSE {record['mse']:.4f} MAE {record['mae']:.4f}")
    return print_report(output)


def run_detections(args) -> int:
    from .cli import print_report

    output = Path(args.output)
    store = ResultStore(output)
    finished = store.finished() if args.resume else set()
    bar = tqdm(args.dataset, desc="runs", unit="run")
    for dataset in bar:
        record = {"dataset": dataset, "task": "detect", "model": "xctformer", "seed": args.seed}
        if run_key(record) in finished:
            bar.write(f"skip (already in results): {dataset}")
            continue
        data = load_anomaly_dataset(dataset, args.data_dir)
        scaler = StandardScaler().fit(data.train)
        train = scaler.transform(data.train).astype(np.float32)
        test = scaler.transform(data.test).astype(np.float32)
        engine = _engine(dataset, "anomaly", args)
        engine.window_stride = engine.window_length  # non-overlapping windows, as Time-Series-Library scores
        evaluate = partial(detection_metrics, train=train, test=test, labels=data.labels, alpha=ANOMALY_RATIOS[dataset])
        record.update(fit_and_evaluate(engine, train, evaluate))
        store.append(record)
        bar.write(f"{dataset}: F1 {record['f1']:.4f}, point-adjusted F1 {record['f1_adjusted']:.4f}")
    return print_report(output)
