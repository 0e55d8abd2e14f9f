"""Which decoder reads the known future: candidates on the covariate suite's families of
:data:`CHOSEN_ON`, seeds 2021-2023.

Each candidate takes the place of :class:`~xct_estimators.nn.known_future.KnownFutureDecoder`
(same inputs: each target channel's flattened tokens, the covariates over window and horizon, the
targets' window statistics; same output: additions to the head's output, zero at the start of
training) in ``xct-bench forecast --dataset known-FAMILY --covariates all``'s XCTFormer run,
everything else equal:

- ``filters``: the decoder of 0.1.0: linear filters over the window-normalised covariates up to
  each step, mixed per channel with weights read off its tokens; dropped for 20 % of the
  training samples;
- ``tide``: TiDE's way: each step's covariates projected by a residual MLP, all of them (window
  and horizon) and the channel's context read by a dense residual MLP into a vector per horizon
  step, then a temporal decoder per step;
- ``feature_filters``: the package's decoder (a per-step MLP, linear filters over its features up
  to each step, a per-channel MLP).

The package's decoder is the one chosen here; ``xct-bench`` runs confirm it, unchanged, on the
families held out from this choice (docs/forecasting.md, Covariates). Each finished run is a line
of ``OUTPUT/rows.jsonl`` at once, so a stopped run resumes where it was:

    python -m benchmarks.decoder_choice --output benchmarks/results/cpu/decoder-choice/suite  # ~1 h, 2 workers
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from unittest import mock

import torch
from torch import nn

from xct_estimators.bench.covariate_suite import FAMILIES, PREFIX, make_family, noise_floor
from xct_estimators.bench.datasets import load_forecast_dataset
from xct_estimators.bench.forecast.protocol import build_model, prepare, run_forecast
from xct_estimators.nn import known_future, model
from xct_estimators.nn.known_future import ResidualMLP
from xct_estimators.nn.norm import instance_stats

SEEDS = (2021, 2022, 2023)
#: The families the decoder is chosen on; the rest of the suite is held out from the choice.
CHOSEN_ON = ("lagged", "multiplicative", "quadratic", "events", "some-channels", "panel")
HORIZON = 96
EPOCHS = None  # the preset's (a test sets fewer)


class _Unscaled(nn.Module):
    """A candidate that standardises nothing with the training data's statistics."""

    def set_statistics(self, *statistics) -> None:
        pass


class Filters(_Unscaled):
    """The decoder of 0.1.0 (see the module's docstring)."""

    FILTERS, DROP = 8, 0.2

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len, n_channels, n_static=0):
        super().__init__()
        self.seq_len, self.future_len, self.n_params = seq_len, future_len, out_len // future_len
        self.filters = nn.Linear(seq_len * n_future, self.FILTERS)
        self.mixing = nn.Linear(patch_num * d_model, self.FILTERS * self.n_params)
        nn.init.zeros_(self.mixing.weight)
        nn.init.zeros_(self.mixing.bias)

    def forward(self, channels, known, mean, std, static=None):
        b, c, _ = channels.shape
        known_mean, known_std = instance_stats(known)  # over window and horizon
        steps = ((known - known_mean) / known_std)[:, 1:].unfold(1, self.seq_len, 1).flatten(2)
        mixing = self.mixing(channels).view(b, c, self.n_params, self.FILTERS)
        out = torch.einsum("bhr,bcqr->bhqc", self.filters(steps), mixing)
        if self.training:
            out = out * torch.bernoulli(out.new_full((b, 1, 1, 1), 1 - self.DROP)) / (1 - self.DROP)
        return out.reshape(b, self.future_len * self.n_params, c)


class Tide(_Unscaled):
    """TiDE's feature projection, dense encoder-decoder and temporal decoder, per target channel."""

    FEATURES, CONTEXT, HIDDEN, DECODED = 4, 16, 128, 8

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len, n_channels, n_static=0):
        super().__init__()
        self.seq_len, self.future_len, self.n_params = seq_len, future_len, out_len // future_len
        self.features = ResidualMLP(n_future, 32, self.FEATURES)
        self.context = nn.Linear(patch_num * d_model, self.CONTEXT)
        flat = (seq_len + future_len) * self.FEATURES + self.CONTEXT + 2 + n_static
        self.dense = nn.Sequential(
            ResidualMLP(flat, self.HIDDEN, self.HIDDEN), nn.LayerNorm(self.HIDDEN),
            ResidualMLP(self.HIDDEN, self.HIDDEN, future_len * self.DECODED), nn.LayerNorm(future_len * self.DECODED),
        )  # fmt: skip
        self.temporal = ResidualMLP(self.DECODED + self.FEATURES, 32, self.n_params, zero=True)

    def forward(self, channels, known, mean, std, static=None):
        b, c, _ = channels.shape
        h = self.future_len
        features = self.features(known)  # (B, L + H, E)
        context = torch.cat([self.context(channels), mean.transpose(1, 2), std.log().transpose(1, 2)], dim=-1)
        read = features.flatten(1) if static is None else torch.cat([features.flatten(1), static.flatten(1)], dim=1)
        flat = read[:, None].expand(b, c, read.shape[1])
        decoded = self.dense(torch.cat([flat, context], dim=-1)).view(b, c, h, self.DECODED).transpose(1, 2)
        out = self.temporal(torch.cat([decoded, features[:, self.seq_len :, None].expand(b, h, c, -1)], dim=-1))
        return out.transpose(2, 3).reshape(b, h * self.n_params, c)


CANDIDATES = {"filters": Filters, "tide": Tide, "feature_filters": known_future.KnownFutureDecoder}


def run(candidate: str, family: str, seed: int, horizon: int = HORIZON) -> dict:
    """One seed of one candidate on one family, through the forecast protocol (one torch thread)."""
    from xct_estimators.bench.cli import quiet_libraries
    from xct_estimators.bench.provenance import run_fields

    torch.set_num_threads(1)
    quiet_libraries()
    dataset = PREFIX + family
    data = prepare(load_forecast_dataset(dataset, seed=seed), covariates="all")
    with (
        tempfile.TemporaryDirectory() as work_dir,
        mock.patch.object(model, "KnownFutureDecoder", CANDIDATES[candidate]),
    ):
        build = dict(seed=seed, accelerator="cpu", devices=1, progress=False, work_dir=Path(work_dir), epochs=EPOCHS)
        forecaster = build_model("xctformer", dataset, horizon, **build)
        fields, _ = run_forecast(forecaster, data, horizon)
    added = sum(p.numel() for p in forecaster.model.net.known_future.parameters())
    floor = noise_floor(make_family(dataset, seed), data.seq_len, horizon)
    row = {"decoder": candidate, "family": family, "horizon": horizon, "seed": seed, "parameters": added}
    return {**row, "noise_floor": floor, **fields, **run_fields("cpu")}


def _key(row: dict) -> tuple:
    return row["decoder"], row["family"], row["horizon"], row["seed"]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="comma-separated, from: %(default)s")
    parser.add_argument("--families", default=",".join(CHOSEN_ON), help="comma-separated, default: %(default)s")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="runs at once, 1 thread each")
    parser.add_argument("--output", type=Path, required=True, help="folder of rows.jsonl; a rerun resumes it")
    args = parser.parse_args(argv)
    names, families = args.candidates.split(","), args.families.split(",")
    for option, given, known in (("--candidates", names, CANDIDATES), ("--families", families, FAMILIES)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"{option}: unknown {', '.join(unknown)}; choose from {', '.join(known)}.")
    from xct_estimators.bench.provenance import command_line

    args.output.mkdir(parents=True, exist_ok=True)
    rows_path = args.output / "rows.jsonl"
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    done = {_key(row) for row in rows}
    todo = [(n, f, s) for f in families for s in SEEDS for n in names if (n, f, HORIZON, s) not in done]
    print(f"{len(todo)} runs to go ({len(done)} in {rows_path})", flush=True)
    command = command_line(["python", "-m", "benchmarks.decoder_choice", *(sys.argv[1:] if argv is None else argv)])
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for row in pool.map(run, *zip(*todo, strict=True)) if todo else ():
            row["command"] = command
            rows.append(row)
            with rows_path.open("a") as file:  # one line a run: a stopped run loses only the runs in flight
                file.write(json.dumps(row) + "\n")
            print(f"{row['decoder']} {row['family']} seed {row['seed']}: MSE {row['mse']:.4f} (floor "
                  f"{row['noise_floor']:.4f}, {row['fit_seconds']:.0f} s)", flush=True)  # fmt: skip
    return rows


def _mean_sd(values: list[float]) -> str:
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}" if len(values) > 1 else f"{values[0]:.3f}"


def table(results: Path, root: Path) -> str:
    """docs/forecasting.md's table of the choice: each candidate's MSE per family of :data:`CHOSEN_ON`."""
    from benchmarks.measure import compact_table

    path = results / "cpu" / "decoder-choice" / "suite" / "rows.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    families = list(dict.fromkeys(row["family"] for row in rows))
    decoders = [name for name in CANDIDATES if any(row["decoder"] == name for row in rows)]
    lines = []
    for family in families:
        mine = [row for row in rows if row["family"] == family]
        cells = [_mean_sd([r["mse"] for r in mine if r["decoder"] == name]) for name in decoders]
        lines.append([f"`known-{family}`", *cells, f"{statistics.mean(r['noise_floor'] for r in mine):.3f}"])
    header = ["family", *(f"`{name}`" for name in decoders), "noise floor"]
    first = rows[0]
    source = (
        f"\nMSE (mean ± sd over seeds {', '.join(map(str, sorted({r['seed'] for r in rows})))}), horizon "
        f"{first['horizon']}, on the test split; noise floor: the MSE of a forecast that knows everything but the "
        f"noise. Record: `{path.relative_to(root).as_posix()}` (commit {first['git_commit'][:7]}, "
        f"{first['device']['cpu']}, 1 thread per run; `{first['command']}`).\n"
    )
    return compact_table(header, lines) + source


if __name__ == "__main__":
    main()


#: The xct-bench record folders of the suite (families chosen on, held out) and of ``control``.
SUITE_FOLDERS = ("covariates-chosen-on", "covariates-held-out", "covariates-control")
SUITE_MODELS = ("xctformer", "tide", "tsmixer")


def suite_table(results: Path, root: Path) -> str:
    """docs/forecasting.md's table of the confirmation: XCTFormer, TiDE and TSMixer with the same
    covariates and settings on every family and horizon (mean ± sd over seeds), the noise floor,
    and XCTFormer's MSE over the better of the other two; then the geometric mean of that ratio."""
    import math

    from benchmarks.measure import compact_table

    lines, ratios, sources = [], [], []
    for folder in SUITE_FOLDERS:
        path = results / "cpu" / folder / "results.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        records = [r for r in records if r["run"].get("covariates") in ("all", "future") and r["model"] in SUITE_MODELS]
        cells = {}
        for r in records:
            cells.setdefault((r["dataset"], r["horizon"]), {}).setdefault(r["model"], []).append(r)
        for (dataset, horizon), by_model in sorted(cells.items()):
            means = {m: statistics.mean(r["mse"] for r in runs) for m, runs in by_model.items()}
            other = min(means[m] for m in SUITE_MODELS[1:] if m in means)
            ratio = means["xctformer"] / other
            ratios.append(ratio)
            family = dataset.removeprefix(PREFIX)
            role = "chosen on" if family in CHOSEN_ON else "held out" if family in FAMILIES else "earlier choice"
            floors = [r["noise_floor"] for runs in by_model.values() for r in runs if r.get("noise_floor") is not None]
            shown = [_mean_sd([r["mse"] for r in by_model[m]]) for m in SUITE_MODELS]
            floor = f"{statistics.mean(floors):.3f}" if floors else "-"
            lines.append([f"`{dataset}`", role, str(horizon), *shown, floor, f"{ratio:.2f}"])
        first = records[0]
        sources.append(
            f"`{path.relative_to(root).as_posix()}` (commit {first['git_commit'][:7]}, {first['device']['cpu']}; "
            f"`{first['command']}`)"
        )
    header = ["dataset", "decoder", "horizon", *(f"`{m}`" for m in SUITE_MODELS), "noise floor", "ratio"]
    wins = sum(r <= 1 for r in ratios)
    geometric = math.exp(statistics.mean(math.log(r) for r in ratios))
    source = (
        f"\nMSE on the test split, mean ± sd over seeds 2021-2023, every model with `xct-bench`'s defaults and the "
        f"same covariates; ratio: XCTFormer's mean over the better mean of TiDE and TSMixer. XCTFormer is no worse "
        f"in {wins} of {len(ratios)} cells; the geometric mean of the ratio is {geometric:.2f}. Records: "
        f"{'; '.join(sources)}.\n"
    )
    return compact_table(header, lines) + source
