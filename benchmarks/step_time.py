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

    python benchmarks/step_time.py [--threads 2] [--repeats 10] [--networks ETTh1,MSL-anomaly,...] [--floor]
        [--compile]

``--compile`` adds the fused network compiled with ``torch.compile`` (inductor; what the
estimators' ``compile=True`` does), timed after its compilation in the warm-up steps.

Every printout and ``--json`` file names its settings: torch version, threads, repeats, and which
fused path ran (the C++ kernel, or PyTorch operations and why).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from xct_estimators._optim import optimizer_kwargs_with_fused
from xct_estimators.nn import XCTFormerNet, get_preset

#: name -> (preset dataset, task, horizon, batch size; None = the preset's).
NETWORKS = {
    "ETTh1": ("ETTh1", "forecast", 96, None),
    "ETTm1": ("ETTm1", "forecast", 96, None),
    "ETTh1-impute": ("ETTh1", "impute", None, 8),
    "MSL-anomaly": ("MSL", "anomaly", None, 8),
    "ECL-decop": ("ECL", "forecast", 96, 8),
    "Traffic-decop": ("Traffic", "forecast", 96, 2),
}


def predict_batch(name: str) -> int:
    """The batch the library predicts with: the reconstruction engine's sliding-window batch
    (up to 4x the preset's training batch, bounded by the plain path's attention memory), or
    the Darts model's batch size (the preset's) for forecasting."""
    dataset, task, _, _ = NETWORKS[name]
    if task == "forecast":
        return get_preset(dataset, task).batch_size
    from xct_estimators.nn.memory import inference_batch_size

    preset = get_preset(dataset, task)
    return inference_batch_size(preset.config(), preset.batch_size)


def adam_kwargs(adam: str, lr: float, parameters) -> dict:
    """``library``: the Adam the library trains with (fused where torch has it); ``for-loop``:
    torch's per-tensor implementation (the library's optimizer before it took the fused one)."""
    if adam == "for-loop":
        return {"lr": lr, "foreach": False}
    return optimizer_kwargs_with_fused(torch.optim.Adam, {"lr": lr}, parameters)


def build(name: str, fused: bool, batch: int | None = None, adam: str = "library", compiled: bool = False):
    dataset, task, horizon, default_batch = NETWORKS[name]
    batch = batch or default_batch
    preset = get_preset(dataset, task)
    config = preset.config(out_len=horizon) if horizon else preset.config()
    config = config.replace(fused_attention=fused)
    torch.manual_seed(0)
    net = XCTFormerNet(config)
    if compiled:
        net.compile()
    optimizer = torch.optim.Adam(net.parameters(), **adam_kwargs(adam, preset.learning_rate, net.parameters()))
    batch = batch or preset.batch_size
    x = torch.randn(batch, config.seq_len, config.n_channels)
    y = torch.randn(batch, config.out_len, config.n_channels)

    def train_step():
        net.train()
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(net(x), y).backward()
        optimizer.step()

    def infer_step():
        net.eval()
        with torch.inference_mode():
            net(x)

    return config, batch, train_step, infer_step


def _products_only(q, k, v, mask, scale=1.0, activation="absact", p=0.0, seed=None):
    return (q @ k.transpose(-2, -1)) @ v


def with_attribute(step, owner, name: str, value):
    """``step`` run with ``owner.name`` set to ``value`` (restored afterwards)."""

    def run():
        original = getattr(owner, name)
        setattr(owner, name, value)
        try:
            step()
        finally:
            setattr(owner, name, original)

    return run


def without_chain(step):
    """``step`` with CRAB's elementwise chain removed (scores straight into the product with V):
    what the network costs with attention reduced to its two matrix products, the floor that no
    fusion of the chain can go below."""
    from xct_estimators.nn import fused

    return with_attribute(step, fused, "fused_crab", _products_only)


def interleaved_ms(steps: dict, repeats: int, warmup: int = 2) -> dict:
    for fn in steps.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in steps}
    for _ in range(repeats):
        for name, fn in steps.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status (Linux only)")


def memory_probe(name: str, fused: bool, threads: int, steps: int, adam: str = "library") -> float:
    """In this process: peak resident-set growth (MiB) over ``steps`` training steps after one
    warm-up step, from the kernel's high-water mark (reset through /proc/self/clear_refs), plus
    the fused path's chunk buffers, which it keeps between steps (allocated in the warm-up)."""
    from xct_estimators.nn import fused as fused_attention

    torch.set_num_threads(threads)
    _, _, train, _ = build(name, fused, adam=adam)
    train()
    before = _status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    for _ in range(steps):
        train()
    return (_status_kib("VmHWM") - before) / 1024 + fused_attention.workspace_bytes() / 2**20


def peak_mib(name: str, fused: bool, threads: int, steps: int = 3, adam: str = "library") -> float:
    """:func:`memory_probe` in a fresh process (no allocator state from the other variant)."""
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import step_time as s; "
        f"print(s.memory_probe({name!r}, {fused}, {threads}, {steps}, {adam!r}))"
    )
    # A fixed mmap threshold makes glibc return every freed large block at once, so the resident
    # set follows the live tensors (its default, adaptive threshold keeps freed blocks resident).
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(done.stdout.strip().splitlines()[-1])


def _fused_adam() -> bool:
    return bool(adam_kwargs("library", 1e-3, [torch.zeros(1, requires_grad=True)]).get("fused"))


def main() -> None:
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
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from xct_estimators.nn import crab_kernel

    kernel = "C++ kernel"
    if crab_kernel.load() is None:
        kernel = f"PyTorch operations ({crab_kernel.unavailable_reason()})"
    adam = f"{args.adam} ({'fused' if args.adam == 'library' and _fused_adam() else 'for-loop'} Adam)"
    settings = {
        "torch": torch.__version__,
        "threads": args.threads,
        "repeats": args.repeats,
        "fused_path": kernel,
        "adam": adam,
    }
    print(
        f"torch {torch.__version__}, {args.threads} threads, median of {args.repeats} (fused and plain interleaved), "
        f"fused path: {kernel}, optimizer: {adam}"
    )
    header = f"{'network':<13} {'batch':>5} {'tokens':>6} {'train plain':>11} {'train fused':>11} {'ratio':>6} "
    header += f"{'infer plain':>11} {'infer fused':>11} {'speed-up':>8} {'peak MiB plain':>14} {'fused':>6} "
    header += f"{'ratio':>6} {'predict batch':>13} {'plain':>8} {'fused':>8} {'speed-up':>8}"
    print(header)
    rows = []
    for name in args.networks.split(","):
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
        row = {
            "network": name,
            "batch": batch,
            "tokens": config.n_tokens,
            "train_ms": train,
            "infer_ms": infer,
            "predict_batch": library_batch,
            "predict_ms": library_infer,
            "peak_mib": memory,
        }
        rows.append(row)
        print(
            f"{name:<13} {batch:>5} {config.n_tokens:>6} {train['plain']:>11.1f} {train['fused']:>11.1f} "
            f"{train['fused'] / train['plain']:>6.2f} {infer['plain']:>11.1f} {infer['fused']:>11.1f} "
            f"{infer['plain'] / infer['fused']:>7.2f}x {memory['plain']:>14.0f} {memory['fused']:>6.0f} "
            f"{memory['fused'] / memory['plain']:>6.2f} {library_batch:>13} {library_infer['plain']:>8.1f} "
            f"{library_infer['fused']:>8.1f} {library_infer['plain'] / library_infer['fused']:>7.2f}x",
            flush=True,
        )
        if args.floor:
            print(
                f"{'':<13} floor (no elementwise chain): train {train['floor']:.1f} ms "
                f"({train['floor'] / train['plain']:.2f} of plain), infer {infer['floor']:.1f} ms "
                f"({infer['plain'] / infer['floor']:.2f}x faster than plain)",
                flush=True,
            )
        if args.compile:
            print(
                f"{'':<13} compiled (fused + torch.compile): train {train['compiled']:.1f} ms "
                f"({train['compiled'] / train['fused']:.2f} of fused), infer {infer['compiled']:.1f} ms "
                f"({infer['compiled'] / infer['fused']:.2f} of fused)",
                flush=True,
            )
    if args.json:
        from xct_estimators.bench.provenance import provenance

        with open(args.json, "w") as handle:
            json.dump({**settings, "provenance": provenance(), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
