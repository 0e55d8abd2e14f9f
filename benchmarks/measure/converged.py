"""Training end to end on a device: the Darts path, the engine trained to the end in fp32 and
bf16-mixed (the converged comparison), and one run of the paper's imputation protocol."""

from __future__ import annotations

import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from benchmarks.measure.networks import SMOKE_ARCH
from xct_estimators.bench.settings import TuneSettings
from xct_estimators.bench.tasks import TASKS
from xct_estimators.nn.presets import COMMAND_TASKS, PAPER_SEED, PAPER_SEEDS


def darts_path(device: str, data_dir, smoke: bool) -> dict:
    """from_preset("ETTh1", 96), 2 epochs, historical forecasts over the test split, on ``device`` and CPU."""
    try:
        from xct_estimators.bench.datasets import load_forecast_dataset
        from xct_estimators.bench.forecast.protocol import prepare
    except ImportError as error:
        return {"skipped": f"Darts is not importable ({error}); carry the wheels named in this script's docstring"}
    except Exception:  # e.g. Darts against a newer numpy or pandas than it knows
        return {"failed": "importing Darts: " + traceback.format_exc()[-3000:]}
    try:
        data = prepare(load_forecast_dataset("synthetic" if smoke else "ETTh1", data_dir, seed=PAPER_SEED))
    except (FileNotFoundError, ValueError, OSError) as error:
        return {"skipped": f"no ETTh1 data ({error}); pass --data-dir"}
    try:
        return _darts_runs(device, data, smoke)
    except Exception:  # a finding to report; the sections before it are kept
        return {"failed": traceback.format_exc()[-3000:]}


def _darts_runs(device: str, data, smoke: bool) -> dict:
    from xct_estimators import XCTFormerModel
    from xct_estimators.bench.forecast.protocol import forecast_test_split, score

    if smoke:
        data.train, data.val, data.test = data.train[:400], data.val[:250], data.test[:250]
    result = {}
    for where in dict.fromkeys((device, "cpu")):
        extra = dict(SMOKE_ARCH) if smoke else {}
        model = XCTFormerModel.from_preset(
            "ETTh1",
            96,
            n_epochs=2,
            random_state=PAPER_SEED,
            **extra,
            pl_trainer_kwargs={
                "accelerator": "gpu" if where == "cuda" else "cpu",
                "devices": 1,
                "enable_progress_bar": False,
                "enable_model_summary": False,
                "logger": False,
            },
        )
        start = time.perf_counter()
        model.fit(data.train, val_series=data.val, verbose=False)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        forecasts = forecast_test_split(model, data, 96)
        result[where] = {
            **score(model, data, forecasts),
            "fit_seconds": fit_s,
            "forecast_seconds": time.perf_counter() - start,
            "windows": len(forecasts),
        }
    return result


#: The converged comparison: (name, preset dataset, xct-bench task, epochs, train stride, the task's
#: own settings), trained through the ReconstructionEngine on the real data with the recipe
#: (one-cycle schedule, best epoch kept) and validated as the task's tuning study is.
CONVERGED = [
    ("ETTh1 imputation", "ETTh1", "impute", 10, 2, {"mask_rate": 0.25}),
    ("MSL anomaly", "MSL", "detect", 6, 8, {}),
]


#: fp32 and bf16 from one seed; fp32 from another seed: the spread the bf16 gap is read against.
CONVERGED_RUNS = {
    "fp32": ({}, PAPER_SEEDS[0]),
    "bf16-mixed": ({"precision": "bf16-mixed"}, PAPER_SEEDS[0]),
    f"fp32, seed {PAPER_SEEDS[1]}": ({}, PAPER_SEEDS[1]),
}


def _converged_arrays(dataset: str, task: str, data_dir, smoke: bool):
    """(training, validation) arrays as the task's tuning study takes them (detection: no
    validation array, the engine holds out the end of the training array); ``smoke``: sines, whose
    last rows validate either task."""
    if smoke:  # learnable channels: the reconstruction of smooth sines
        t = np.arange(600)[:, None]
        values = np.sin(t * np.array([0.05, 0.11, 0.23]) + np.array([0.0, 1.0, 2.0])).astype(np.float32)
        return values[:500], values[500:]
    _, train, val = TASKS[task].tune_data(TuneSettings(task=task, dataset=dataset, data_dir=data_dir))
    return train, val


def converged_training(device: str, data_dir, smoke: bool) -> list[dict]:
    """Best validation loss after the same training in fp32 and bf16-mixed (the 2 % criterion),
    with a second fp32 seed for the spread; the validation loss is the engine's (masked MSE for
    imputation, reconstruction MSE for anomaly detection), evaluated under each run's precision."""
    from xct_estimators.reconstruction import ReconstructionEngine, preset_params

    rows = []
    for name, dataset, task, epochs, stride, own in CONVERGED:
        row = {"preset": name, "epochs": epochs, "train_stride": stride, "runs": {}}
        rows.append(row)
        try:
            train, val = _converged_arrays(dataset, task, data_dir, smoke)
        except (FileNotFoundError, ValueError, OSError) as error:
            row["skipped"] = f"no {dataset} data ({error}); pass --data-dir"
            continue
        params = preset_params(dataset, COMMAND_TASKS[task])
        params.update(n_epochs=epochs, patience=None, train_stride=stride, fill="zero", **own)
        if smoke:
            params.update(SMOKE_ARCH, window_length=48, n_epochs=2, batch_size=8, patch_len=8, stride=4)
        row["epochs"] = params["n_epochs"]
        row["settings"] = {k: params.get(k) for k in ("window_length", "batch_size", "learning_rate", "mask_rate")}
        for run, (trainer_kwargs, seed) in CONVERGED_RUNS.items():
            try:
                accelerator = "gpu" if device == "cuda" else "cpu"
                engine = ReconstructionEngine(
                    **params,
                    random_state=seed,
                    accelerator=accelerator,
                    devices=1,
                    pl_trainer_kwargs=dict(trainer_kwargs),
                )
                start = time.perf_counter()
                engine.fit(train, val_values=val)
                row["runs"][run] = {
                    "best_val_loss": engine.best_val_loss,
                    "best_epoch": engine.best_epoch,
                    "val_losses": [round(v, 5) for v in engine.val_losses],
                    "seconds": time.perf_counter() - start,
                }
            except Exception:  # a finding to report; the other runs still go
                row["runs"][run] = {"error": traceback.format_exc()[-2000:]}
            print(f"{name} {run}: {row['runs'][run]}", flush=True)
    return rows


def paper_run(output: Path, data_dir, timeout_s: float) -> dict:
    command = [
        sys.executable,
        "-m",
        "xct_estimators.bench",
        "impute",
        "--dataset",
        "ETTh1",
        "--mask-rates",
        "0.25",
        "--models",
        "xctformer,linear",
        "--accelerator",
        "gpu",
        "--output",
        str(output / "impute"),
        "--no-progress",
    ] + (["--data-dir", str(data_dir)] if data_dir else [])
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {
            "command": " ".join(command),
            "timed_out_after_s": timeout_s,
            "note": "finished runs are in impute/results.jsonl; rerun with --resume",
        }
    return {
        "command": " ".join(command),
        "returncode": done.returncode,
        "seconds": time.perf_counter() - start,
        "tail": done.stdout[-3000:] + done.stderr[-2000:],
    }
