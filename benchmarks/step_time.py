"""Milliseconds per training step (forward, backward, Adam), per inference batch, and peak memory,
with CRAB's fused attention and the plain path side by side.

Networks: the paper's ETTh1 and ETTm1 forecasting presets (84 tokens), the paper-scale
reconstruction networks, ETTh1 imputation (1024 steps, 896 tokens) and MSL anomaly detection
(100 steps, 660 tokens), and the DeCoP forecasting presets of ECL (3852 tokens, k = 64) and
Traffic (10344 tokens, k = 192, 4 heads), at a batch size given per network. Fixed thread
count, the median of repeats with fused and plain steps interleaved (so machine noise hits both
alike); peak memory is the resident-set growth of a fresh process over a few training steps. Inference is timed at the
training batch and at the batch the library predicts with (the reconstruction engine's sliding
windows, the Darts model's batch size). A benchmark that prints numbers, not a test.

    python -m benchmarks.step_time [--threads 2] [--repeats 10] [--networks ETTh1,MSL-anomaly,...] [--floor]
        [--compile]

``--compile`` adds the fused network compiled with ``torch.compile`` (inductor; what the
estimators' ``compile=True`` does), timed after its compilation in the warm-up steps.

Every printout and ``--json`` file names its settings: torch version, threads, repeats, and which
fused path ran (the C++ kernel, or PyTorch operations and why).
"""

from __future__ import annotations

import argparse
import json

import torch

from benchmarks.measure.cpu_steps import (
    NETWORKS,
    build,
    fused_adam,
    interleaved_ms,
    peak_mib,
    predict_batch,
    without_chain,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--networks", default=",".join(NETWORKS))
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    parser.add_argument(
        "--adam",
        choices=("library", "for-loop"),
        default="library",
        help="the library's Adam (fused where torch has it) or torch's for-loop one (the earlier numbers')",
    )
    parser.add_argument(
        "--floor", action="store_true", help="also time the network without CRAB's elementwise chain (the floor)"
    )
    parser.add_argument(
        "--compile", action="store_true", help="also time the fused network compiled with torch.compile (inductor)"
    )
    return parser


def _settings(args) -> dict:
    from xct_estimators.nn import crab_kernel

    kernel = "C++ kernel"
    if crab_kernel.load() is None:
        kernel = f"PyTorch operations ({crab_kernel.unavailable_reason()})"
    adam = f"{args.adam} ({'fused' if args.adam == 'library' and fused_adam() else 'for-loop'} Adam)"
    return {
        "torch": torch.__version__,
        "threads": args.threads,
        "repeats": args.repeats,
        "fused_path": kernel,
        "adam": adam,
    }


def _measure(name: str, args) -> dict:
    """One network's row: training and inference steps interleaved, the library's predict batch, peak memory."""
    config, batch, plain_train, plain_infer = build(name, fused=False, adam=args.adam)
    _, _, fused_train, fused_infer = build(name, fused=True, adam=args.adam)
    train_steps = {"plain": plain_train, "fused": fused_train}
    infer_steps = {"plain": plain_infer, "fused": fused_infer}
    if args.floor:
        _, _, floor_train, floor_infer = build(name, fused=True, adam=args.adam)
        train_steps["floor"], infer_steps["floor"] = without_chain(floor_train), without_chain(floor_infer)
    if args.compile:
        _, _, compiled_train, compiled_infer = build(name, fused=True, adam=args.adam, compiled=True)
        train_steps["compiled"], infer_steps["compiled"] = compiled_train, compiled_infer
    train = interleaved_ms(train_steps, args.repeats)
    infer = interleaved_ms(infer_steps, args.repeats)
    library_batch = predict_batch(name)
    if library_batch == batch:
        library_infer = infer
    else:
        _, _, _, plain_infer = build(name, fused=False, batch=library_batch, adam=args.adam)
        _, _, _, fused_infer = build(name, fused=True, batch=library_batch, adam=args.adam)
        library_infer = interleaved_ms({"plain": plain_infer, "fused": fused_infer}, args.repeats)
    memory = {v: peak_mib(name, v == "fused", args.threads, adam=args.adam) for v in ("plain", "fused")}
    return {
        "network": name,
        "batch": batch,
        "tokens": config.n_tokens,
        "train_ms": train,
        "infer_ms": infer,
        "predict_batch": library_batch,
        "predict_ms": library_infer,
        "peak_mib": memory,
    }


def _print_row(row: dict) -> None:
    train, infer, memory, library_infer = row["train_ms"], row["infer_ms"], row["peak_mib"], row["predict_ms"]
    print(
        f"{row['network']:<13} {row['batch']:>5} {row['tokens']:>6} {train['plain']:>11.1f} {train['fused']:>11.1f} "
        f"{train['fused'] / train['plain']:>6.2f} {infer['plain']:>11.1f} {infer['fused']:>11.1f} "
        f"{infer['plain'] / infer['fused']:>7.2f}x {memory['plain']:>14.0f} {memory['fused']:>6.0f} "
        f"{memory['fused'] / memory['plain']:>6.2f} {row['predict_batch']:>13} {library_infer['plain']:>8.1f} "
        f"{library_infer['fused']:>8.1f} {library_infer['plain'] / library_infer['fused']:>7.2f}x",
        flush=True,
    )
    if "floor" in train:
        print(
            f"{'':<13} floor (no elementwise chain): train {train['floor']:.1f} ms "
            f"({train['floor'] / train['plain']:.2f} of plain), infer {infer['floor']:.1f} ms "
            f"({infer['plain'] / infer['floor']:.2f}x faster than plain)",
            flush=True,
        )
    if "compiled" in train:
        print(
            f"{'':<13} compiled (fused + torch.compile): train {train['compiled']:.1f} ms "
            f"({train['compiled'] / train['fused']:.2f} of fused), infer {infer['compiled']:.1f} ms "
            f"({infer['compiled'] / infer['fused']:.2f} of fused)",
            flush=True,
        )


def main() -> None:
    args = _parser().parse_args()
    torch.set_num_threads(args.threads)
    settings = _settings(args)
    print(
        f"torch {torch.__version__}, {args.threads} threads, median of {args.repeats} (fused and plain interleaved), "
        f"fused path: {settings['fused_path']}, optimizer: {settings['adam']}"
    )
    header = f"{'network':<13} {'batch':>5} {'tokens':>6} {'train plain':>11} {'train fused':>11} {'ratio':>6} "
    header += f"{'infer plain':>11} {'infer fused':>11} {'speed-up':>8} {'peak MiB plain':>14} {'fused':>6} "
    header += f"{'ratio':>6} {'predict batch':>13} {'plain':>8} {'fused':>8} {'speed-up':>8}"
    print(header)
    rows = []
    for name in args.networks.split(","):
        rows.append(_measure(name, args))
        _print_row(rows[-1])
    if args.json:
        from xct_estimators.bench.provenance import provenance

        with open(args.json, "w") as handle:
            json.dump({**settings, "provenance": provenance(), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
