"""The CRAB kernel on its own (the fused operator against the plain formula: errors, speed, share
of the GPU's peak) and the environment a measurement ran in."""

from __future__ import annotations

import itertools
import time
import traceback

import numpy as np
import torch

from benchmarks.measure.networks import build, peak_memory_mb, reset_peak_memory, synchronize
from xct_estimators.bench.provenance import git_commit, versions
from xct_estimators.nn import crab_gpu, crab_kernel, memory, tf32

#: Dense bf16 peak, TFLOP/s, by a part of the GPU's name (vendor datasheets; SXM parts).
BF16_PEAK_TFLOPS = {"H100 80GB HBM3": 989.0, "H100 SXM": 989.0, "H200": 989.0, "H100 PCIe": 756.0, "A100": 312.0}


#: The CRAB layer measured on its own: the Weather imputation preset's attention.
KERNEL_PRESET = ("Weather imputation", "Weather", "impute", None)


def _bf16_peak(device: str):
    name = torch.cuda.get_device_name(0) if device == "cuda" else ""
    return next((peak for part, peak in BF16_PEAK_TFLOPS.items() if part in name), None)


def _crab_inputs(batch, heads, n, cols, d, device, dtype, tie=False, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, rows, d, generator=generator) for rows in (n, cols, cols))
    if tie:  # the smallest score four times per (sample, head)
        k[:, :, 0] = -3.0 * q[:, :, 0]
        k[:, :, 1], q[:, :, 1] = k[:, :, 0], q[:, :, 0]
    mask = torch.randn(heads, n, n, generator=generator) * 0.5 if n == cols else None
    return [None if t is None else t.to(device, dtype).requires_grad_() for t in (q, k, v, mask)]


def _plain_crab(q, k, v, mask, p, seed):
    """The formula, its minimum's gradient at the minimum's first place (where the Triton kernels
    route it; torch.min's choice, where amin would split it among exact ties)."""
    from xct_estimators.nn.attention import normalise
    from xct_estimators.nn.fused import keep_masks

    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = mask * (scores - scores.flatten(-2).min(dim=-1).values[..., None, None])
    weights = normalise(scores, "absact")
    if p > 0:
        weights = weights * keep_masks(weights.detach(), p, seed) / (1 - p)
    return weights @ v


def _plain_layer(q, k, v, mask, p, seed):
    """The plain path as the network runs it: torch's dropout, which the compiler fuses (the
    hashed keep mask is for the correctness check, where the two paths must drop the same
    weights)."""
    from xct_estimators.nn.attention import weights_in_float32

    del seed
    weights = weights_in_float32(q @ k.transpose(-2, -1), mask, "absact")
    return torch.nn.functional.dropout(weights, p).to(v.dtype) @ v


def _fused_crab(q, k, v, mask, p, seed):
    from xct_estimators.nn import ops

    return ops.crab(q, k, v, mask, 1.0, False, p, torch.tensor([seed]))


#: (precision, input dtype, TF32 for float32 products, tolerance: the largest error relative to
#: the float64 reference's largest entry): bf16 and TF32 round products' inputs to 8 and 11 bits.
PRECISIONS = (
    ("bf16", torch.bfloat16, False, 3e-2),
    ("float32, TF32", torch.float32, True, 5e-3),
    ("float32", torch.float32, False, 1e-4),
)


def _triton_step(kernels, inputs, upstream, p, seed, needs):
    q, k, v, mask = inputs
    seed_tensor = torch.full((1,), seed, dtype=torch.int64, device=q.device)
    outputs = kernels.forward(q, k, v, mask, 1.0, False, p, seed_tensor)
    grads = kernels.backward(upstream, q, k, v, mask, *outputs, 1.0, False, p, seed_tensor, needs)
    return outputs[0], grads


def call_patterns(smoke: bool) -> list[tuple[str, bool, float, tuple]]:
    """Every way the operator is called: with and without a mask, dropout on and off, and each
    combination of wanted gradients (Q, K, V and, with a mask, M); ``smoke``: three of them."""
    patterns = []
    for masked, p in itertools.product((True, False), (0.3, 0.0)):
        names = "qkvm" if masked else "qkv"
        wanted = [w for r in range(1, len(names) + 1) for w in itertools.combinations(names, r)]
        if smoke:
            wanted = [tuple(names), ("v",), ("q", "k")]
        for grads in wanted:
            needs = tuple(name in grads for name in "qkvm")
            label = f"{'masked, ties' if masked else 'DeCoP N x k'}, dropout {p}, gradients {''.join(grads)}"
            patterns.append((label, masked, p, needs))
    return patterns


def kernel_correctness(device: str, smoke: bool) -> list[dict]:
    """CRAB's Triton kernels, called themselves (so the check fails unless Triton ran), against the
    plain formula in float64 on the same rounded inputs, in every call pattern (:func:`call_patterns`)
    and each of :data:`PRECISIONS`: the largest error of the output and each wanted gradient,
    relative to the reference's largest entry; a gradient not wanted must come back as None."""
    kernels = crab_gpu.module()
    if kernels is None:
        return [{"case": "Triton", "shape": (), "errors": {}, "ok": False,
                 "error": f"the Triton kernels did not load: {crab_gpu.unavailable_reason()}"}]  # fmt: skip
    n = 40 if smoke else 300
    rows, tf32_before = [], tf32.allowed()
    try:
        for (name, masked, p, needs), (precision, dtype, on, tolerance) in itertools.product(
            call_patterns(smoke), PRECISIONS
        ):
            if dtype == torch.bfloat16 and device == "cpu":  # Triton's interpreter multiplies bf16 as raw bits
                continue
            tf32.allow(on)
            shape = (2, 2, n, n if masked else 24, 32)
            inputs = [
                None if t is None else t.detach().to(dtype) for t in _crab_inputs(*shape, device, dtype, tie=masked)
            ]
            inputs[3] = None if inputs[3] is None else inputs[3].float()  # the mask is a float32 parameter
            upstream = torch.randn(*shape[:3], shape[4], device=device).to(dtype)
            out, grads = _triton_step(kernels, inputs, upstream, p, 7, needs)
            leaves = [t.double().requires_grad_() for t in inputs if t is not None]
            reference_out = _plain_crab(*leaves[:3], leaves[3] if len(leaves) == 4 else None, p, 7)
            reference = torch.autograd.grad(reference_out, leaves, upstream.double())
            errors = {"output": float((out.double() - reference_out.detach()).abs().max() / reference_out.abs().max())}
            for what, grad, ref, wanted in zip(("dQ", "dK", "dV", "dM"), grads, reference, needs, strict=False):
                if wanted:
                    errors[what] = float((grad.double() - ref).abs().max() / ref.abs().max())
            extra = [what for what, grad, wanted in zip(("dQ", "dK", "dV", "dM"), grads, needs, strict=True)
                     if grad is not None and not wanted]  # fmt: skip
            case = {"case": f"{name}, {precision}", "shape": shape, "errors": errors, "tolerance": tolerance}
            rows.append({**case, "ok": max(errors.values()) <= tolerance and not extra})
    finally:
        tf32.allow(tf32_before)
    return rows


def kernel_speed(device: str, smoke: bool, repeats: int, warmup: int) -> list[dict]:
    """One CRAB layer's forward and backward in bf16 at the Weather imputation shape: the fused
    operator against the plain path compiled, with the plain formula's FLOPs."""
    config, batch, _ = build(*KERNEL_PRESET[1:], smoke)
    heads, n, d = config.n_heads, config.n_tokens, config.head_dim
    flops = 12 * batch * heads * n * n * d  # Q K^T and W V forward; dV, G V^T, dQ, dK backward
    peak = _bf16_peak(device)
    rows = []
    plain = ("plain", _plain_layer) if smoke else ("plain+compile", torch.compile(_plain_layer))
    for name, fn in (("fused", _fused_crab), plain):
        q, k, v, mask = _crab_inputs(batch, heads, n, n, d, device, torch.bfloat16)
        mask = mask.detach().float().requires_grad_()
        upstream = torch.randn(batch, heads, n, d, device=device, dtype=torch.bfloat16)
        reset_peak_memory(device)
        try:
            seconds = _median_step(fn, (q, k, v, mask, config.attn_dropout, 7), upstream, device, repeats, warmup)
        except Exception:  # a path that fails to build is a finding; the other still runs
            rows.append({"path": name, "shape": (batch, heads, n, d), "error": traceback.format_exc()[-2000:]})
            print(f"CRAB layer {name}: failed\n{rows[-1]['error']}", flush=True)
            continue
        rows.append(
            {
                "path": name,
                "shape": (batch, heads, n, d),
                "ms": seconds * 1e3,
                "tflops": flops / seconds / 1e12,
                "peak_tflops": peak,
                "percent_of_peak": None if peak is None else 100 * flops / seconds / 1e12 / peak,
                "peak_mb": peak_memory_mb(device),
            }
        )
        if name == "fused":
            args = (q, k, v, mask, config.attn_dropout, 7)
            rows[-1]["kernel_ms"] = kernel_ms(
                lambda f=fn, a=args, u=upstream: torch.autograd.backward(f(*a), u), device
            )
        print(f"CRAB layer {name}: {rows[-1]}", flush=True)
    return rows


def _median_step(fn, args, upstream, device: str, repeats: int, warmup: int) -> float:
    times = []
    for step in range(warmup + repeats):
        start = time.perf_counter()
        torch.autograd.backward(fn(*args), upstream)
        synchronize(device)
        if step >= warmup:
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def kernel_ms(step, device: str, steps: int = 5) -> dict[str, float]:
    """Milliseconds per call of ``step`` by kernel (CRAB's Triton kernels by name, the rest summed
    as ``other``), from the profiler: where a step's time goes."""
    from torch.profiler import ProfilerActivity, profile

    on_gpu = device == "cuda"
    with profile(activities=[ProfilerActivity.CUDA if on_gpu else ProfilerActivity.CPU]) as profiler:
        for _ in range(steps):
            step()
        synchronize(device)
    times: dict[str, float] = {}
    for event in profiler.key_averages():
        name = event.key if event.key.startswith("_") and event.key.endswith("_kernel") else "other"
        self_us = event.self_device_time_total if on_gpu else event.self_cpu_time_total
        times[name] = times.get(name, 0.0) + self_us / 1e3 / steps
    return dict(sorted(times.items(), key=lambda item: -item[1]))


def environment() -> dict:
    return {
        **versions(),
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_threads": torch.get_num_threads(),
        "fused CRAB on CPU": "C++ kernel"
        if crab_kernel.load() is not None
        else f"PyTorch operations ({crab_kernel.unavailable_reason()})",
        "fused CRAB on the device": _device_path(),
        "TF32 matrix products": tf32.allowed(),
        "fused chunk scores (CPU, device)": (memory.chunk_scores("cpu"), memory.chunk_scores("cuda")),
        "git commit": git_commit(),
    }


def _device_path() -> str:
    if not torch.cuda.is_available():
        return "no GPU"
    dtypes = _triton_dtypes()
    if not dtypes:  # the reason crab_gpu.usable said no, not a guess
        major, minor = torch.cuda.get_device_capability(0)
        reason = crab_gpu.unavailable_reason() or (
            "deterministic algorithms on"
            if torch.are_deterministic_algorithms_enabled()
            else f"compute capability {major}.{minor}; the kernels need 8.0"
        )
        return f"PyTorch operations ({reason})"
    rest = "" if "float32" in dtypes else "; float32 without TF32: PyTorch operations"
    return f"Triton kernels in {', '.join(dtypes)}{rest}"


def _triton_dtypes() -> list[str]:
    """The dtypes whose CRAB inputs the Triton kernels take on this GPU (float32 only with TF32)."""
    dtypes = (torch.bfloat16, torch.float16, torch.float32)
    return [str(d).removeprefix("torch.") for d in dtypes if crab_gpu.usable(torch.empty(0, device="cuda", dtype=d))]
