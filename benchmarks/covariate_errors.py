"""Where a model's error on a covariate-suite family lies: horizon steps where a flag covariate is
on or off, and by lead. Answers whether a gap between models is the covariates' effect (steps with
the flag on) or the forecast of what no covariate explains (steps with it off).

Each run is ``xct-bench forecast --dataset known-FAMILY --horizons 96``'s, through the same
protocol, one torch thread; each finished run is a line of ``OUTPUT/rows.jsonl`` at once, so a
stopped run resumes where it was:

    python -m benchmarks.covariate_errors --output benchmarks/results/cpu/covariate-errors  # ~20 min
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from benchmarks.measure.decoders import HORIZON, SEEDS
from xct_estimators.bench.covariate_suite import FAMILIES, PREFIX
from xct_estimators.bench.datasets import load_forecast_dataset
from xct_estimators.bench.forecast.protocol import build_model, fit_model, forecast_test_split, prepare

#: Leads (0-based horizon steps) whose mean squared error a row keeps.
LEADS = (0, 23, 47, 71, 95)


def split_errors(truth: np.ndarray, forecasts: list[np.ndarray], flag: np.ndarray, seq_len: int) -> dict:
    """MSE over every forecast step, over the steps whose ``flag`` is on and off, and by lead.
    ``truth`` (rows, channels) and ``flag`` (rows,) cover the test split; forecast ``i``
    (horizon, channels) starts at row ``seq_len + i``."""
    horizon = forecasts[0].shape[0]
    squared = np.stack([(f - truth[seq_len + i : seq_len + i + horizon]) ** 2 for i, f in enumerate(forecasts)])
    on = np.stack([flag[seq_len + i : seq_len + i + horizon] for i in range(len(forecasts))]).astype(bool)
    by_lead = squared.mean(axis=(0, 2))
    return {
        "mse": float(squared.mean()),
        "mse_flag_on": float(squared[on].mean()) if on.any() else None,
        "mse_flag_off": float(squared[~on].mean()) if (~on).any() else None,
        "share_on": float(on.mean()),
        "mse_by_lead": {str(lead): float(by_lead[lead]) for lead in LEADS if lead < horizon},
    }


def run(model_name: str, family: str, covariates: str, seed: int, flag: str) -> dict:
    from xct_estimators.bench.cli import quiet_libraries
    from xct_estimators.bench.provenance import run_fields

    torch.set_num_threads(1)
    quiet_libraries()
    dataset = PREFIX + family
    data = load_forecast_dataset(dataset, seed=seed)
    prepared = prepare(data, covariates=covariates)
    flag_values = data.members[0][flag].values()[-len(prepared.test) :, 0]  # unscaled: 0 or 1
    with tempfile.TemporaryDirectory() as work_dir:
        build = dict(seed=seed, accelerator="cpu", devices=1, progress=False, work_dir=Path(work_dir))
        model = build_model(model_name, dataset, HORIZON, **build)
        fit_model(model, prepared)
        forecasts = [f.values() for f in forecast_test_split(model, prepared, HORIZON)]
    errors = split_errors(prepared.test.values(), forecasts, flag_values, prepared.seq_len)
    row = {"model": model_name, "family": family, "covariates": covariates, "seed": seed, "flag": flag}
    return {**row, "horizon": HORIZON, **errors, **run_fields("cpu")}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="multiplicative", choices=sorted(FAMILIES))
    parser.add_argument("--flag", default="promo", help="the 0/1 covariate that splits the steps (%(default)s)")
    parser.add_argument("--models", default="xctformer,tsmixer,tide", help="comma-separated (%(default)s)")
    parser.add_argument("--covariates", default="all,none", help="comma-separated modes (%(default)s)")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated (%(default)s)")
    parser.add_argument("--output", type=Path, required=True, help="folder of rows.jsonl; a rerun resumes it")
    args = parser.parse_args(argv)
    if args.flag not in load_forecast_dataset(PREFIX + args.family).future_columns:
        parser.error(f"--flag {args.flag}: not a covariate of known-{args.family}; name one of its 0/1 covariates.")
    from xct_estimators.bench.provenance import command_line

    args.output.mkdir(parents=True, exist_ok=True)
    rows_path = args.output / "rows.jsonl"
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    done = {(r["model"], r["family"], r["covariates"], r["seed"]) for r in rows}
    command = command_line(["python", "-m", "benchmarks.covariate_errors", *(sys.argv[1:] if argv is None else argv)])
    for seed in map(int, args.seeds.split(",")):
        for covariates in args.covariates.split(","):
            for model_name in args.models.split(","):
                if (model_name, args.family, covariates, seed) in done:
                    continue
                row = {**run(model_name, args.family, covariates, seed, args.flag), "command": command}
                rows.append(row)
                with rows_path.open("a") as file:
                    file.write(json.dumps(row) + "\n")
                print(f"{model_name} {args.family} --covariates {covariates} seed {seed}: MSE {row['mse']:.4f}, "
                      f"flag on {row['mse_flag_on']:.4f}, off {row['mse_flag_off']:.4f}", flush=True)  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
