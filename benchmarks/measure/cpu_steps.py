"""Training and inference steps of the presets' networks on the CPU, fused CRAB against the plain
path, timed interleaved (so machine noise hits both alike), and peak memory in a fresh process."""

from __future__ import annotations

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
    dataset, task, horizon, _ = NETWORKS[name]
    if horizon is not None:  # a forecasting network
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


def products_only(q, k, v, mask, scale=1.0, activation="absact", p=0.0, seed=None):
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
    from xct_estimators.nn import ops

    return with_attribute(step, ops, "fused_crab", products_only)


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
        "from benchmarks.measure import cpu_steps as s; "
        f"print(s.memory_probe({name!r}, {fused}, {threads}, {steps}, {adam!r}))"
    )
    # A fixed mmap threshold makes glibc return every freed large block at once, so the resident
    # set follows the live tensors (its default, adaptive threshold keeps freed blocks resident).
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(done.stdout.strip().splitlines()[-1])


def fused_adam() -> bool:
    return bool(adam_kwargs("library", 1e-3, [torch.zeros(1, requires_grad=True)]).get("fused"))
