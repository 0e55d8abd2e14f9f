"""Milliseconds per training step (forward, backward, Adam) of a forecasting network with known
future covariates on the CPU: the decoder as training runs it (the C++ pairwise kernel, the
filters by FFT), as it runs where the kernels cannot be built (no C++ compiler: the FFT only), and
as it ran before either (the (batch, steps, channels, hidden) values stored, the filters as a
convolution), and the same network without covariates for scale; timed interleaved, the median
of repeats. A benchmark that prints numbers, not a test.

    python -m benchmarks.decoder_step [--dataset ETTm1] [--horizon 720] [--covariates 2] [--threads 1]
        [--repeats 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
from contextlib import ExitStack, nullcontext
from unittest import mock

import torch

from benchmarks.measure.cpu_steps import interleaved_ms
from xct_estimators.bench.provenance import provenance
from xct_estimators.nn import XCTFormerNet, crab_kernel, get_preset, known_future


def without_kernel() -> ExitStack:
    """The decoder as where the kernels cannot be built, until the returned context exits."""
    stack = ExitStack()
    stack.enter_context(mock.patch.object(known_future, "_kernel_for", lambda mlp, step: None))
    return stack


def as_before() -> ExitStack:
    """The decoder as PyTorch operations with the filters as a convolution, until the context exits."""
    stack = without_kernel()
    stack.enter_context(mock.patch.object(known_future.KnownFutureDecoder, "filtered", lambda self, f: self.filters(f)))
    return stack


def training_step(dataset: str, horizon: int, covariates: int, context=nullcontext):
    """One Adam step of the preset's network at ``horizon`` with ``covariates`` known inputs, on a
    random batch of the preset's size (the decoder's parameters past their zero start)."""
    torch.manual_seed(0)
    preset = get_preset(dataset)
    channels = preset.n_channels + covariates
    config = preset.config(out_len=horizon).replace(
        n_channels=channels, n_future_channels=covariates, future_len=horizon if covariates else 0
    )
    net = XCTFormerNet(config).train()
    if covariates:
        for parameter in net.known_future.parameters():
            torch.nn.init.normal_(parameter, std=0.1)
    optimizer = torch.optim.Adam(net.parameters(), lr=preset.learning_rate)
    x = torch.randn(preset.batch_size, config.seq_len, channels)
    future = torch.randn(preset.batch_size, horizon, covariates) if covariates else None
    target = torch.randn(preset.batch_size, horizon, preset.n_channels)

    def step():
        with context():
            loss = (net(x, future=future) - target).square().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    return step


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ETTm1")
    parser.add_argument("--horizon", type=int, default=720)
    parser.add_argument("--covariates", type=int, default=2, help="known future inputs (a calendar has 2)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if crab_kernel.load() is None:
        raise SystemExit(f"The C++ kernels are not built here ({crab_kernel.unavailable_reason()}): no comparison.")
    steps = {
        "kernel": training_step(args.dataset, args.horizon, args.covariates),
        "no kernel": training_step(args.dataset, args.horizon, args.covariates, without_kernel),
        "neither": training_step(args.dataset, args.horizon, args.covariates, as_before),
        "no covariates": training_step(args.dataset, args.horizon, 0),
    }
    ms = interleaved_ms(steps, args.repeats)
    slower = ms["no kernel"] / ms["kernel"]
    print(f"{args.dataset}, horizon {args.horizon}, {args.covariates} known inputs, {args.threads} thread(s), "
          f"median of {args.repeats}, ms per training step:")  # fmt: skip
    for name, value in ms.items():
        print(f"  {name:14s} {value:8.1f}")
    print(f"  without the kernel {slower:.2f}x slower, as before {ms['neither'] / ms['kernel']:.2f}x; with it, "
          f"covariates cost {ms['kernel'] / ms['no covariates']:.2f}x")  # fmt: skip
    settings = {k: getattr(args, k) for k in ("dataset", "horizon", "covariates", "threads", "repeats")}
    result = {
        # other work on the machine moves the milliseconds more than the ratios
        "settings": {**settings, "torch": torch.__version__, "load_average": _load()},
        "train_ms": ms,
        **provenance(None if argv is None else ["python", "-m", "benchmarks.decoder_step", *argv]),
    }
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=1)
    return result


def _load():
    """The machine's one-minute load average (None where the OS has none)."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


if __name__ == "__main__":
    main()
