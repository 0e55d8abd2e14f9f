"""Imputation and anomaly-detection runs for ``xct-bench impute`` / ``xct-bench detect``."""

from __future__ import annotations

import time
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
    accelerator = args.accelerator
    devices = int(args.devices) if str(args.devices).isdigit() else args.devices
    return ReconstructionEngine(
        **params,
        random_state=args.seed,
        accelerator=accelerator,
        devices=devices,
        progress_bar=not args.no_progress,
        **extra,
    )


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
        start = time.perf_counter()
        engine.fit(train)
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        scores = evaluate_imputation(engine, test, rate, seed=args.seed)
        record.update(
            scores,
            epochs=engine.n_epochs,
            fit_seconds=fit_seconds,
            eval_seconds=time.perf_counter() - start,
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        )
        store.append(record)
        bar.write(f"{dataset} mask {rate}: MSE {scores['mse']:.4f} MAE {scores['mae']:.4f}")
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
        start = time.perf_counter()
        engine.fit(train)
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        train_scores = engine.score(train).mean(axis=1)
        test_scores = engine.score(test).mean(axis=1)
        metrics = anomaly_metrics(test_scores, data.labels, train_scores, ANOMALY_RATIOS[dataset])
        record.update(
            metrics,
            epochs=engine.n_epochs,
            fit_seconds=fit_seconds,
            eval_seconds=time.perf_counter() - start,
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        )
        store.append(record)
        bar.write(f"{dataset}: F1 {metrics['f1']:.4f}, point-adjusted F1 {metrics['f1_adjusted']:.4f}")
    return print_report(output)
