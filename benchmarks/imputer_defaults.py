"""How the imputer's default training settles, across window lengths and learning rates.

A user's check: 3,000 hourly points of 4 smooth, strongly correlated channels (mixtures of
three shared sines), 25 % of the points missing; ``XCTFormerImputer`` with only
``window_length`` (and the learning rate under test) given, against ``DataFrame.interpolate()``
on the hidden points. Two signal kinds: ``daily`` (periods 24, 12 and 8 hours: a daily cycle
and its harmonics) and ``slow`` (periods 24, 60 and 168 hours, where linear interpolation is
already close to the noise floor). Prints one row per run. A benchmark, not a test.

    python -m benchmarks.imputer_defaults [--windows 48,96,336,1024] [--lrs 1e-3,5e-3,1e-2] [--fill linear]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from xct_estimators import XCTFormerImputer
from xct_estimators.reconstruction import DEFAULT_FILL

PERIODS = {"daily": (24, 12, 8), "slow": (24, 168, 60)}


def correlated_channels(periods, n: int = 3000, channels: int = 4, noise: float = 0.01, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    latent = np.stack([np.sin(2 * np.pi * t / p + i) for i, p in enumerate(periods)], axis=1)
    return latent @ rng.normal(size=(len(periods), channels)) + noise * rng.normal(size=(n, channels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", default="48,96,336,1024")
    parser.add_argument("--lrs", default="1e-3,5e-3,1e-2")
    parser.add_argument("--signals", default="daily,slow")
    parser.add_argument("--fill", default=DEFAULT_FILL, help="default: the imputer's (%(default)s)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print("| signal | window | lr | fill | MSE | interpolate MSE | interpolate / ours | epochs (best) | fit s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for signal in args.signals.split(","):
        truth = pd.DataFrame(correlated_channels(PERIODS[signal]), columns=list("abcd"))
        missing = np.random.default_rng(1).random(truth.shape) < 0.25
        X = truth.mask(missing)
        linear = float(((X.interpolate(limit_direction="both") - truth).to_numpy()[missing] ** 2).mean())
        for window in map(int, args.windows.split(",")):
            for lr in map(float, args.lrs.split(",")):
                imputer = XCTFormerImputer(window_length=window, learning_rate=lr, fill=args.fill, random_state=0)
                start = time.perf_counter()
                Xt = imputer.fit_transform(X)
                seconds = time.perf_counter() - start
                mse = float(((Xt - truth).to_numpy()[missing] ** 2).mean())
                engine = imputer.engine_
                print(
                    f"| {signal} | {window} | {lr:g} | {args.fill} | {mse:.5f} | {linear:.5f} | {linear / mse:.2f} "
                    f"| {engine.epochs_trained} ({engine.best_epoch}) | {seconds:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
