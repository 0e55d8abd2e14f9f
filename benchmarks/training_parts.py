"""What Adam's fused implementation and the hashed activation dropout save per training step.

Four variants of each network's training step, interleaved in one run (so machine noise hits
them alike): the plain or the fused CRAB attention, each with the library's training parts
(fused Adam, hashed dropout: ``xct_estimators/_optim.py``, ``xct_estimators/nn/dropout.py``) or
with torch's defaults (for-loop Adam, torch's Bernoulli dropout), the library before it took
them. Medians in ms, and the fused/plain ratio under each. A benchmark that prints numbers.

    python benchmarks/training_parts.py [--networks ETTh1-impute,ETTh1] [--repeats 12] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import step_time  # noqa: E402

from xct_estimators.nn import dropout as hashed  # noqa: E402


def with_torch_dropout(step):
    """``step`` with every activation dropout on torch's kernel."""

    def run():
        original = hashed.hashed_dropout_applies
        hashed.hashed_dropout_applies = lambda x: False
        try:
            step()
        finally:
            hashed.hashed_dropout_applies = original

    return run


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="ETTh1-impute,ETTh1")
    parser.add_argument("--repeats", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.repeats}, variants interleaved")
    print(f"{'network':<13} {'attention':<9} {'library parts':>13} {'torch parts':>11} {'saved':>6}")
    rows = []
    for name in args.networks.split(","):
        steps = {}
        for attention in ("plain", "fused"):
            fused = attention == "fused"
            steps[(attention, "library")] = step_time.build(name, fused, adam="library")[2]
            steps[(attention, "torch")] = with_torch_dropout(step_time.build(name, fused, adam="for-loop")[2])
        ms = step_time.interleaved_ms(steps, args.repeats)
        for attention in ("plain", "fused"):
            library, torch_parts = ms[(attention, "library")], ms[(attention, "torch")]
            print(f"{name:<13} {attention:<9} {library:>13.1f} {torch_parts:>11.1f} {torch_parts - library:>6.1f}")
        ratios = {parts: ms[("fused", parts)] / ms[("plain", parts)] for parts in ("library", "torch")}
        print(f"{'':<13} fused / plain: {ratios['library']:.3f} (library's parts), {ratios['torch']:.3f} (torch's)")
        rows.append({"network": name, "ms": {f"{a} {p}": v for (a, p), v in ms.items()}, "ratio": ratios})
    return rows


if __name__ == "__main__":
    main()
