"""Which decoder reads the known future: the candidates on ``control`` (or another dataset), seeds 2021-2023.

Each candidate takes the place of :class:`~xct_estimators.nn.known_future.KnownFutureDecoder`
(same inputs: each target channel's flattened tokens and the normalised covariates of window and
horizon; same output: additions to the head's output, zero at the start of training) in
``xct-bench forecast --dataset control --covariates future``'s run, everything else equal:

- ``per_step``: TiDE's temporal decoder, per target channel: each horizon step's addition is a
  residual MLP of the channel's tokens (projected) and that step's covariates;
- ``filters_no_drop``: the package's decoder (learned filters over the covariates up to each
  step), used for every training sample;
- ``filters``: the package's decoder, which training drops for a sample at a time.

Records named ``*-horizon-tokens.json`` were made with the network before 2026-12-02, in which the
future covariates were also channels of tokens over window and horizon (``tokens``: those tokens
and no decoder).

    python -m benchmarks.decoder_choice --output benchmarks/results/cpu/decoder-choice/control.json  # ~10 min, 1 thread
    python -m benchmarks.decoder_choice --dataset ETTh1 --covariates calendar --data-dir DATA \
        --candidates filters_no_drop,filters --output benchmarks/results/cpu/decoder-choice/etth1-calendar.json
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


class FiltersNoDrop(known_future.KnownFutureDecoder):
    """The package's decoder, never dropped in training."""

    def __init__(self, *sizes):
        super().__init__(*sizes)
        self.drop = 0.0


CANDIDATES = {"per_step": PerStep, "filters_no_drop": FiltersNoDrop, "filters": known_future.KnownFutureDecoder}


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


def table(results: Path, root: Path, name: str = "control") -> str:
    """docs/forecasting.md's table of the record ``name``: the earlier network's candidates (with
    horizon tokens), today's, XCTFormer without covariates and, on ``control``, Darts' TiDE and
    TSMixer given the same plan (from the ``covariates-*`` record)."""
    from benchmarks.measure import compact_table

    folder = results / "cpu" / "decoder-choice"
    spread = lambda values: f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"  # noqa: E731
    rows, sources = [], []
    earlier, current = folder / f"{name}-horizon-tokens.json", folder / f"{name}.json"
    for path, label in ((earlier, "{} + horizon tokens"), (current, "{}")):
        record = json.loads(path.read_text())
        for decoder in dict.fromkeys(row["decoder"] for row in record["rows"]):
            runs = [row for row in record["rows"] if row["decoder"] == decoder]
            mses = [row["mse"] for row in runs]
            shown = label.format(f"`{decoder}`") if decoder != "tokens" else "horizon tokens only"
            rows.append([shown, str(runs[0]["parameters"]), spread(mses), *(f"{m:.4f}" for m in mses)])
        device = record["device"]
        sources.append(
            f"`{path.relative_to(root).as_posix()}` (commit {record['git_commit'][:7]}, {device['cpu']}, "
            f"{device['cpu_threads']} thread(s); `{record['command']}`)"
        )
    seeds = [row["seed"] for row in record["rows"] if row["decoder"] == record["rows"][0]["decoder"]]
    covariates = record.get("covariates", "future")
    darts = results / "cpu" / f"covariates-{'control' if covariates == 'future' else 'calendar'}" / "results.jsonl"
    baselines = [json.loads(line) for line in darts.read_text().splitlines() if line.strip()]
    baselines = [r for r in baselines if r["dataset"] == record["dataset"] and r["horizon"] == record["horizon"]]
    for baseline, given, shown in (
        ("xctformer", None, "XCTFormer without covariates"),
        ("tide", "future", "Darts `tide`"),
        ("tsmixer", "future", "Darts `tsmixer`"),
    ):
        runs = {r["seed"]: r["mse"] for r in baselines if (r["model"], r["run"].get("covariates")) == (baseline, given)}
        if runs:
            mses = [runs[seed] for seed in seeds]
            rows.append([shown, "-", spread(mses), *(f"{m:.4f}" for m in mses)])
    header = ["decoder", "parameters added", "MSE (mean ± sd)", *(f"seed {seed}" for seed in seeds)]
    given = "the plan" if covariates == "future" else "hour of day and day of week"
    source = (
        f"\n{record['dataset']}, horizon {record['horizon']}, {given} as future covariates; MSE on the test split. "
        f"Records: {'; '.join(sources)}; other rows: `{darts.relative_to(root).as_posix()}`.\n"
    )
    return compact_table(header, rows) + source


if __name__ == "__main__":
    main()
