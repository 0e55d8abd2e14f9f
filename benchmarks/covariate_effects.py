"""What a fitted XCTFormer's known-future effects are worth, per channel, on validation and test:
each split's MSE with the decoder's effects on, and zeroed on window and horizon (the backbone
alone, as trained with them). ``--columns`` keeps some of the covariates (``hour`` of the
calendar's ``hour,dayofweek``): which of them the error comes from, and whether validation
could tell.

The fit is ``xct-bench forecast --dataset DATASET --horizons H --covariates MODE``'s XCTFormer run,
one torch thread; each finished run is a line of ``OUTPUT/rows.jsonl`` at once, so a stopped run
resumes where it was:

    python -m benchmarks.covariate_effects --dataset ETTm1 --horizon 720 --columns hour \\
        --data-dir DATA --output benchmarks/results/cpu/covariate-effects  # ~30 min a seed
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import torch

from benchmarks.covariate_errors import squared_errors
from benchmarks.measure.decoders import SEEDS
from xct_estimators.bench.datasets import load_forecast_dataset
from xct_estimators.bench.forecast.protocol import build_model, fit_model, prepare

SPLITS = {"val": 1, "test": 2}  # PreparedSeries.future's index of each split


def per_channel_mse(truth: np.ndarray, forecasts: list[np.ndarray], seq_len: int) -> np.ndarray:
    """Each channel's MSE over every forecast step (``squared_errors``' layout)."""
    return squared_errors(truth, forecasts, seq_len).mean(axis=(0, 1))


def keep_columns(prepared, columns: list[str]):
    """``prepared`` with its future covariates cut to ``columns``."""
    return dataclasses.replace(prepared, future=tuple(part[columns] for part in prepared.future))


def split_errors(model, prepared, horizon: int, split: str) -> np.ndarray:
    series, future = getattr(prepared, split), prepared.future[SPLITS[split]]
    windows = dict(start=prepared.seq_len, start_format="position", forecast_horizon=horizon, stride=1)
    forecasts = model.historical_forecasts(
        series, future_covariates=future, **windows, overlap_end=False, retrain=False, last_points_only=False,
        verbose=False,
    )  # fmt: skip
    return per_channel_mse(series.values(), [f.values() for f in forecasts], prepared.seq_len)


def effects_off(model):
    """A context in which ``model``'s decoder gives zero effects."""
    decoder = model.model.net.known_future
    zeros = lambda known, level, static=None: known.new_zeros(*known.shape[:2], level.shape[-1])  # noqa: E731
    return mock.patch.object(decoder, "forward", zeros)


def run(dataset: str, horizon: int, covariates: str, columns: list[str], seed: int, data_dir) -> dict:
    from xct_estimators.bench.cli import quiet_libraries
    from xct_estimators.bench.provenance import run_fields

    torch.set_num_threads(1)
    quiet_libraries()
    prepared = keep_columns(
        prepare(load_forecast_dataset(dataset, data_dir=data_dir, seed=seed), covariates=covariates), columns
    )
    row = {"dataset": dataset, "horizon": horizon, "covariates": covariates, "columns": columns, "seed": seed}
    with tempfile.TemporaryDirectory() as work_dir:
        build = dict(seed=seed, accelerator="cpu", devices=1, progress=False, work_dir=Path(work_dir))
        model = build_model("xctformer", dataset, horizon, **build)
        start = time.perf_counter()
        fit_model(model, prepared)
        row["fit_seconds"] = time.perf_counter() - start
        for split in SPLITS:
            row[f"{split}_on"] = split_errors(model, prepared, horizon, split).tolist()
            with effects_off(model):
                row[f"{split}_off"] = split_errors(model, prepared, horizon, split).tolist()
    return {**row, **run_fields("cpu")}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ETTm1")
    parser.add_argument("--horizon", type=int, default=720)
    parser.add_argument("--covariates", default="calendar", help="a mode with future covariates (%(default)s)")
    parser.add_argument("--columns", default=None, help="comma-separated future covariates to keep (default: all)")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated (%(default)s)")
    parser.add_argument("--data-dir", default=None, help="benchmark files (default: $XCT_DATA_DIR)")
    parser.add_argument("--output", type=Path, required=True, help="folder of rows.jsonl; a rerun resumes it")
    args = parser.parse_args(argv)
    sample = prepare(load_forecast_dataset(args.dataset, data_dir=args.data_dir), covariates=args.covariates)
    if sample.future[0] is None:
        parser.error(f"--covariates {args.covariates}: {args.dataset} gets no future covariates; use calendar.")
    known = list(sample.future[0].components)
    columns = known if args.columns is None else args.columns.split(",")
    unknown = sorted(set(columns) - set(known))
    if unknown or not columns:
        parser.error(f"--columns: unknown {', '.join(unknown) or 'none given'}; choose from {', '.join(known)}.")
    from xct_estimators.bench.provenance import command_line

    args.output.mkdir(parents=True, exist_ok=True)
    rows_path = args.output / "rows.jsonl"
    lines = rows_path.read_text().splitlines() if rows_path.exists() else []
    rows = [json.loads(line) for line in lines if line.strip()]
    done = {(r["dataset"], r["horizon"], r["covariates"], tuple(r["columns"]), r["seed"]) for r in rows}
    command = command_line(["python", "-m", "benchmarks.covariate_effects", *(sys.argv[1:] if argv is None else argv)])
    for seed in (int(s) for s in args.seeds.split(",")):
        if (args.dataset, args.horizon, args.covariates, tuple(columns), seed) in done:
            continue
        row = {**run(args.dataset, args.horizon, args.covariates, columns, seed, args.data_dir), "command": command}
        rows.append(row)
        with rows_path.open("a") as file:
            file.write(json.dumps(row) + "\n")
        means = ", ".join(f"{name} {np.mean(row[name]):.4f}" for name in ("val_on", "val_off", "test_on", "test_off"))
        print(f"{args.dataset} H={args.horizon} {','.join(columns)} seed {seed}: {means}", flush=True)
    return rows


if __name__ == "__main__":
    main()
