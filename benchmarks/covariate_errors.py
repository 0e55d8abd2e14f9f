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
#: The families of one series (a panel's test split is one per member).
SINGLE_SERIES = tuple(sorted(name for name in FAMILIES if name != "panel"))


def squared_errors(truth: np.ndarray, forecasts: list[np.ndarray], seq_len: int) -> np.ndarray:
    """(forecasts, horizon, channels) squared errors; ``truth`` (rows, channels) is the split,
    forecast ``i`` (horizon, channels) starts at row ``seq_len + i``."""
    horizon = forecasts[0].shape[0]
    return np.stack([(f - truth[seq_len + i : seq_len + i + horizon]) ** 2 for i, f in enumerate(forecasts)])


def split_errors(truth: np.ndarray, forecasts: list[np.ndarray], flag: np.ndarray, seq_len: int) -> dict:
    """MSE over every forecast step, over the steps whose ``flag`` is on and off, and by lead.
    ``truth`` (rows, channels) and ``flag`` (rows,) cover the test split; forecast ``i``
    (horizon, channels) starts at row ``seq_len + i``."""
    horizon = forecasts[0].shape[0]
    squared = squared_errors(truth, forecasts, seq_len)
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
        forecasts = forecast_test_split(model, prepared, HORIZON)
    starts = prepared.test.time_index[prepared.seq_len : prepared.seq_len + len(forecasts)]
    if [f.start_time() for f in forecasts] != list(starts):  # split_errors reads forecast i from row seq_len + i
        raise RuntimeError("The forecasts do not start at the test split's rows seq_len, seq_len + 1, ...")
    forecasts = [f.values() for f in forecasts]
    errors = split_errors(prepared.test.values(), forecasts, flag_values, prepared.seq_len)
    row = {"model": model_name, "family": family, "covariates": covariates, "seed": seed, "flag": flag}
    return {**row, "horizon": HORIZON, **errors, **run_fields("cpu")}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="multiplicative", choices=SINGLE_SERIES)
    parser.add_argument("--flag", default="promo", help="the 0/1 covariate that splits the steps (%(default)s)")
    parser.add_argument("--models", default="xctformer,tsmixer,tide", help="comma-separated (%(default)s)")
    parser.add_argument("--covariates", default="all,none", help="comma-separated modes (%(default)s)")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated (%(default)s)")
    parser.add_argument("--output", type=Path, required=True, help="folder of rows.jsonl; a rerun resumes it")
    args = parser.parse_args(argv)
    data = load_forecast_dataset(PREFIX + args.family)
    if args.flag not in data.future_columns:
        parser.error(f"--flag {args.flag}: not a covariate of known-{args.family}; name one of its 0/1 covariates.")
    if not set(np.unique(data.members[0][args.flag].values())) <= {0.0, 1.0}:
        parser.error(f"--flag {args.flag}: known-{args.family}'s {args.flag} is not a 0/1 flag; name one that is.")
    from xct_estimators.bench.provenance import command_line

    args.output.mkdir(parents=True, exist_ok=True)
    rows_path = args.output / "rows.jsonl"
    lines = rows_path.read_text().splitlines() if rows_path.exists() else []
    rows = [json.loads(line) for line in lines if line.strip()]
    done = {(r["model"], r["family"], r["flag"], r["horizon"], r["covariates"], r["seed"]) for r in rows}
    command = command_line(["python", "-m", "benchmarks.covariate_errors", *(sys.argv[1:] if argv is None else argv)])
    seeds, modes, models = (text.split(",") for text in (args.seeds, args.covariates, args.models))
    for model_name, covariates, seed in [(m, c, int(s)) for s in seeds for c in modes for m in models]:
        if (model_name, args.family, args.flag, HORIZON, covariates, seed) in done:
            continue
        row = {**run(model_name, args.family, covariates, seed, args.flag), "command": command}
        rows.append(row)
        with rows_path.open("a") as file:
            file.write(json.dumps(row) + "\n")
        split = ", ".join(f"flag {kind} {row[f'mse_flag_{kind}'] or float('nan'):.4f}" for kind in ("on", "off"))
        print(f"{model_name} {args.family} --covariates {covariates} seed {seed}: MSE {row['mse']:.4f}, {split}")
    return rows


if __name__ == "__main__":
    main()
