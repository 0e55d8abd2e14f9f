"""Which decoder reads the known future: candidates on the covariate suite's families of
:data:`CHOSEN_ON`, seeds 2021-2023.

Each candidate takes the place of :class:`~xct_estimators.nn.known_future.KnownFutureDecoder`
(``benchmarks/measure/decoders.py``: the earlier ones add to the head's output, reading each
target channel's tokens, the covariates over window and horizon and the targets' window
statistics, zero at the start of training) in ``xct-bench forecast --dataset known-FAMILY
--covariates all``'s XCTFormer run, everything else equal:

- ``filters``: the decoder of 0.1.0: linear filters over the window-normalised covariates up to
  each step, mixed per channel with weights read off its tokens; dropped for 20 % of the
  training samples;
- ``tide``: TiDE's way: each step's covariates projected by a residual MLP, all of them (window
  and horizon) and the channel's context read by a dense residual MLP into a vector per horizon
  step, then a temporal decoder per step;
- ``feature_filters``: a per-step MLP, linear filters over its features up to each step, a
  per-channel MLP of them with the window's level and spread (the package's decoder until
  ``data_units``);
- ``no_level``: ``feature_filters`` without the window's level and spread;
- ``level_gain``: ``no_level`` plus a gain on the window's level;
- ``data_units``: ``level_gain`` with its addition in the data's units;
- ``regression``: the package's decoder until ``step_gain``: ``data_units``' effects at every step of window and
  horizon, read off the covariates and the channel alone (no tokens); the window's are taken off
  the window before the backbone reads it, the horizon's added to its forecast;
- ``regression_without_gain``: ``regression`` without its gain on the window's level (a check of
  what the gain costs on real data with a calendar, and buys on the suite);
- ``step_gain``: ``regression`` with its gain read off the step's own features and the channel
  only, not the filters' responses, which read zeros before the window and so tell a window step
  from a horizon step (its gain module is drawn after the others');
- ``replicated_history``: ``step_gain`` whose filters read the window's first step for the steps
  before it, not zeros: a covariate that holds one value then gives every step the same response,
  which the backbone's normalisation takes off (the package's decoder until ``level_floor``);
- ``level_floor``: ``replicated_history`` whose gain scales the window's level above the lowest
  window mean of training plus a learned positive margin, not the level from the training mean (on
  ETTm1 with a calendar the test level lies far from the training mean);
- ``level_floor_without_gain``: ``level_floor`` without its gain, the package's decoder until
  ``feature_dropout`` (whose unused modules the candidate keeps, so a seed draws ``level_floor``'s
  weights);
- ``window_spread``: that decoder (without the unused modules) whose effects may scale with the
  target's spread over the window, by a learned share per channel, 0 at the start (a daily profile
  whose size follows the season; the package's is fixed in the data's units);
- ``feature_dropout``: ``level_floor_without_gain``'s design with TiDE's dropout on its feature
  MLP's hidden layer and on what the decoding reads of a step (the package's decoder until the next);
- ``level_floor_dropout``: the package's decoder: ``level_floor`` with that dropout (an effect
  scaling with the target's level, which ``known-multiplicative`` asks for).

``--families ETTh1`` (or ``ETTm1``, from ``$XCT_DATA_DIR``) runs a candidate on real data with the
calendar (hour of day, day of week) as its known future, ``--horizons`` the horizons to run.

The package's decoder is the one chosen here: the lowest geometric mean of MSE over the families
among the decoders that keep ETTh1 and ETTm1 with a calendar no worse than without it at every
horizon (``level_floor_dropout``);
``xct-bench`` runs confirm it, unchanged, on the families held out from this choice
(docs/forecasting.md, Covariates). Each finished run is a line of ``OUTPUT/rows.jsonl`` at once, so
a stopped run resumes where it was:

    python -m benchmarks.decoder_choice --output benchmarks/results/cpu/decoder-choice/suite  # ~1 h, 2 workers
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from unittest import mock

import torch

from benchmarks.measure.decoders import CANDIDATES, CHOSEN_ON, HORIZON, SEEDS, with_candidate
from xct_estimators import forecasting_module
from xct_estimators.bench.covariate_suite import FAMILIES, PREFIX, make_family, noise_floor
from xct_estimators.bench.datasets import load_forecast_dataset
from xct_estimators.bench.forecast.protocol import build_model, prepare, run_forecast

EPOCHS = None  # the preset's (a test sets fewer)
#: Real datasets a candidate runs on with the calendar as its known future (no noise floor).
CALENDAR_DATASETS = ("ETTh1", "ETTm1")


def run(candidate: str, family: str, seed: int, horizon: int = HORIZON) -> dict:
    """One seed of one candidate on one family, through the forecast protocol (one torch thread)."""
    from xct_estimators.bench.cli import quiet_libraries
    from xct_estimators.bench.provenance import run_fields

    torch.set_num_threads(1)
    quiet_libraries()
    real = family in CALENDAR_DATASETS
    dataset = family if real else PREFIX + family
    data = prepare(load_forecast_dataset(dataset, seed=seed), covariates="calendar" if real else "all")
    with (
        tempfile.TemporaryDirectory() as work_dir,
        mock.patch.object(forecasting_module, "XCTFormerNet", with_candidate(CANDIDATES[candidate])),
    ):
        build = dict(seed=seed, accelerator="cpu", devices=1, progress=False, work_dir=Path(work_dir), epochs=EPOCHS)
        forecaster = build_model("xctformer", dataset, horizon, **build)
        fields, _ = run_forecast(forecaster, data, horizon)
    added = sum(p.numel() for p in forecaster.model.net.known_future.parameters())
    floor = None if real else noise_floor(make_family(dataset, seed), data.seq_len, horizon)
    row = {"decoder": candidate, "family": family, "horizon": horizon, "seed": seed, "parameters": added}
    return {**row, "noise_floor": floor, **fields, **run_fields("cpu")}


def _key(row: dict) -> tuple:
    return row["decoder"], row["family"], row["horizon"], row["seed"]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="comma-separated, from: %(default)s")
    parser.add_argument("--families", default=",".join(CHOSEN_ON), help="comma-separated, default: %(default)s")
    parser.add_argument("--horizons", default=str(HORIZON), help="comma-separated, default: %(default)s")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated, default: %(default)s")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="runs at once, 1 thread each")
    parser.add_argument("--output", type=Path, required=True, help="folder of rows.jsonl; a rerun resumes it")
    args = parser.parse_args(argv)
    names, families = args.candidates.split(","), args.families.split(",")
    horizons = [int(h) for h in args.horizons.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    known_families = (*FAMILIES, *CALENDAR_DATASETS)
    for option, given, known in (("--candidates", names, CANDIDATES), ("--families", families, known_families)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"{option}: unknown {', '.join(unknown)}; choose from {', '.join(known)}.")
    from xct_estimators.bench.provenance import command_line

    args.output.mkdir(parents=True, exist_ok=True)
    rows_path = args.output / "rows.jsonl"
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    done = {_key(row) for row in rows}
    runs = [(n, f, s, h) for f in families for h in horizons for s in seeds for n in names]
    todo = [(n, f, s, h) for n, f, s, h in runs if (n, f, h, s) not in done]
    print(f"{len(todo)} runs to go ({len(done)} in {rows_path})", flush=True)
    command = command_line(["python", "-m", "benchmarks.decoder_choice", *(sys.argv[1:] if argv is None else argv)])
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for row in pool.map(run, *zip(*todo, strict=True)) if todo else ():
            row["command"] = command
            rows.append(row)
            with rows_path.open("a") as file:  # one line a run: a stopped run loses only the runs in flight
                file.write(json.dumps(row) + "\n")
            floor = "" if row["noise_floor"] is None else f"floor {row['noise_floor']:.4f}, "
            print(f"{row['decoder']} {row['family']} H={row['horizon']} seed {row['seed']}: MSE {row['mse']:.4f} "
                  f"({floor}{row['fit_seconds']:.0f} s)", flush=True)  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
