"""Which decoder reads the known future: the candidates on ``control`` (or another dataset), seeds 2021-2023.

Each candidate takes the place of :class:`~xct_estimators.nn.known_future.KnownFutureDecoder`
(same inputs: each target channel's flattened tokens and the normalised covariates of window and
horizon; same output: additions to the head's output, zero at the start of training) in
``xct-bench forecast --dataset control --covariates future``'s run, everything else equal:

- ``tokens``: no decoder; the horizon's covariates reach the forecast through attention only,
  as covariate tokens (the model before the decoder);
- ``per_step``: TiDE's temporal decoder, per target channel: each horizon step's addition is a
  residual MLP of the channel's tokens (projected) and that step's covariates;
- ``filters``: the package's decoder (learned filters over the covariates up to each step).

    python -m benchmarks.decoder_choice --output benchmarks/results/cpu/decoder-choice/control.json  # ~12 min, 1 thread
    python -m benchmarks.decoder_choice --dataset ETTh1 --covariates calendar --data-dir DATA
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from unittest import mock

import torch
from torch import nn

from xct_estimators.bench.catalog import DATA_DIR_ENV
from xct_estimators.bench.datasets import load_forecast_dataset
from xct_estimators.bench.forecast.protocol import build_model, model_settings, prepare, run_forecast
from xct_estimators.nn import known_future, model

SEEDS = (2021, 2022, 2023)
EPOCHS = None  # the preset's (a test sets fewer)


class TokensOnly(nn.Module):
    """No decoder: adds nothing."""

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len):
        super().__init__()
        self.shape = (future_len * (out_len // future_len),)

    def forward(self, channels: torch.Tensor, known: torch.Tensor) -> torch.Tensor:
        return channels.new_zeros(channels.shape[0], *self.shape, channels.shape[1])


class PerStep(nn.Module):
    """TiDE's temporal decoder per target channel: [projected tokens, the step's covariates] ->
    residual MLP -> the step's addition."""

    WIDTH, HIDDEN = 16, 32

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len):
        super().__init__()
        self.seq_len, self.n_params = seq_len, out_len // future_len
        self.summary = nn.Linear(patch_num * d_model, self.WIDTH)
        inputs = self.WIDTH + n_future
        self.mlp = nn.Sequential(nn.Linear(inputs, self.HIDDEN), nn.ReLU(), nn.Linear(self.HIDDEN, self.n_params))
        self.skip = nn.Linear(inputs, self.n_params)
        for layer in (self.mlp[-1], self.skip):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, channels: torch.Tensor, known: torch.Tensor) -> torch.Tensor:
        b, c, _ = channels.shape
        steps = known[:, self.seq_len :]  # (B, H, F): each horizon step's covariates
        h = steps.shape[1]
        summary = self.summary(channels)[:, None].expand(b, h, c, self.WIDTH)
        inputs = torch.cat([summary, steps[:, :, None].expand(b, h, c, steps.shape[2])], dim=-1)
        out = self.mlp(inputs) + self.skip(inputs)  # (B, H, C, Q)
        return out.transpose(2, 3).reshape(b, h * self.n_params, c)


CANDIDATES = {"tokens": TokensOnly, "per_step": PerStep, "filters": known_future.KnownFutureDecoder}


def run(candidate: str, seed: int, args: argparse.Namespace, work_dir: Path) -> dict:
    """One seed of one candidate through the forecast protocol."""
    data = prepare(load_forecast_dataset(args.dataset, args.data_dir, seed=seed), covariates=args.covariates)
    build = dict(seed=seed, accelerator="cpu", devices=1, progress=False, work_dir=work_dir, epochs=EPOCHS)
    forecaster = build_model("xctformer", args.dataset, args.horizon, **build)
    with mock.patch.object(model, "KnownFutureDecoder", CANDIDATES[candidate]):  # read when the network is built
        fields, _ = run_forecast(forecaster, data, args.horizon)
    decoder = forecaster.model.net.known_future
    added = sum(p.numel() for p in decoder.parameters())
    row = {"decoder": candidate, "seed": seed, "parameters": added, "settings": model_settings(forecaster), **fields}
    print(f"{candidate} seed {seed}: MSE {row['mse']:.4f} ({row['fit_seconds']:.0f} s)", flush=True)
    return row


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="comma-separated, from: %(default)s")
    parser.add_argument("--dataset", default="control")
    parser.add_argument("--covariates", default="future", choices=("future", "calendar"))
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--data-dir", default=os.environ.get(DATA_DIR_ENV))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (they decide how sums are rounded)")
    parser.add_argument("--output", type=Path, help="write the rows and their provenance to this JSON file")
    args = parser.parse_args(argv)
    names = args.candidates.split(",")
    unknown = sorted(set(names) - set(CANDIDATES))
    if unknown:
        parser.error(f"--candidates: unknown {', '.join(unknown)}; choose from {', '.join(CANDIDATES)}.")
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as work_dir:
        rows = [run(name, seed, args, Path(work_dir)) for name in names for seed in SEEDS]
    for name in names:
        mses = [row["mse"] for row in rows if row["decoder"] == name]
        print(f"{name}: MSE {statistics.mean(mses):.4f} ± {statistics.stdev(mses):.4f} over seeds {SEEDS}")
    record = {"dataset": args.dataset, "covariates": args.covariates, "horizon": args.horizon, "rows": rows}
    if args.output:
        from xct_estimators.bench.provenance import provenance

        argv = ["python", "-m", "benchmarks.decoder_choice", *(sys.argv[1:] if argv is None else argv)]
        record.update(provenance(argv))
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(record, indent=1) + "\n")
    return record


def table(results: Path, root: Path) -> str:
    """docs/forecasting.md's table: each candidate on ``control`` beside Darts' TiDE and TSMixer
    given the same plan (the ``covariates-control`` record)."""
    from xct_estimators.bench.tables import compact_table

    path = results / "cpu" / "decoder-choice" / "control.json"
    record = json.loads(path.read_text())
    spread = lambda values: f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"  # noqa: E731
    rows = []
    for decoder in dict.fromkeys(row["decoder"] for row in record["rows"]):
        runs = [row for row in record["rows"] if row["decoder"] == decoder]
        mses = [row["mse"] for row in runs]
        rows.append([f"`{decoder}`", str(runs[0]["parameters"]), spread(mses), *(f"{m:.3f}" for m in mses)])
    seeds = [row["seed"] for row in record["rows"] if row["decoder"] == record["rows"][0]["decoder"]]
    darts = results / "cpu" / "covariates-control" / "results.jsonl"
    baselines = [json.loads(line) for line in darts.read_text().splitlines() if line.strip()]
    for name in ("tide", "tsmixer"):
        runs = [r for r in baselines if r["model"] == name and r["run"].get("covariates") == "future"]
        mses = [next(r["mse"] for r in runs if r["seed"] == seed) for seed in seeds]
        rows.append([f"Darts `{name}`", "-", spread(mses), *(f"{m:.3f}" for m in mses)])
    header = ["decoder", "parameters added", "MSE (mean ± sd)", *(f"seed {seed}" for seed in seeds)]
    device = record["device"]
    source = (
        f"\n{record['dataset']}, horizon {record['horizon']}, the plan as a future covariate; MSE on the test split. "
        f"{device['cpu']}, {device['cpu_threads']} thread(s), commit {record['git_commit'][:7]}; command: "
        f"`{record['command']}`; record: `{path.relative_to(root).as_posix()}`; Darts' rows: "
        f"`{darts.relative_to(root).as_posix()}`.\n"
    )
    return compact_table(header, rows) + source


if __name__ == "__main__":
    main()
