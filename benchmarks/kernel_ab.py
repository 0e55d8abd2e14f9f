"""CRAB's Triton kernels against another version of them, in one process on one GPU: time per
forward and backward, split by kernel, and the largest difference of the gradients.

Two GPU calls land on different machines whose timings differ by more than a kernel change does,
so a change is measured against its baseline here, interleaved on the same card:

    git show REV:xct_estimators/nn/triton_crab.py > OLD.py
    python -m benchmarks.kernel_ab --baseline OLD.py > ab.txt

(the copy is loaded beside the package's modules, so its relative imports resolve there).

Shapes: the layers of the Weather and ETTh1 imputation and MSL networks (bf16, masked, their dropout).
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import torch

from benchmarks.measure.kernel import kernel_ms
from xct_estimators.nn import triton_crab

#: (batch, heads, tokens, head width), attention dropout: the networks' CRAB layers.
SHAPES = (((32, 1, 2688, 192), 0.8), ((32, 1, 896, 64), 0.5), ((128, 4, 660, 64), 0.7))
SMOKE_SHAPES = (((2, 1, 40, 24), 0.5),)


def _step(module, q, k, v, mask, p, upstream, seed):
    outputs = module.forward(q, k, v, mask, 1.0, False, p, seed)  # a baseline's may lack the minimum's place
    return module.backward(upstream, q, k, v, mask, *outputs, 1.0, False, p, seed, [True] * 4)


def compare(baseline, shape, p: float, device: str, repeats: int) -> None:
    batch, heads, n, d = shape
    generator = torch.Generator().manual_seed(0)
    half = torch.bfloat16 if device == "cuda" else torch.float32  # the interpreter multiplies bf16 as raw bits
    q, k, v = (torch.randn(batch, heads, n, d, generator=generator).to(device, half) for _ in range(3))
    mask = (torch.randn(heads, n, n, generator=generator) * 0.5).to(device)
    upstream = torch.randn(batch, heads, n, d, generator=generator).to(device, half)
    seed = torch.tensor([7])
    reference = None
    for name, module in (("baseline", baseline), ("tree", triton_crab)):
        run = lambda module=module: _step(module, q, k, v, mask, p, upstream, seed)  # noqa: E731
        for _ in range(3):  # the autotuner's timed runs, then warm
            grads = run()
        if reference is None:
            reference = grads
        else:
            pairs = zip(grads, reference, strict=True)
            errors = [float((a.float() - r.float()).abs().max() / r.float().abs().max()) for a, r in pairs]
            print("  tree against baseline, largest relative difference of dQ dK dV dM:", [f"{e:.1e}" for e in errors])
        times = []
        for _ in range(repeats):
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            run()
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        ms = sorted(times)[len(times) // 2] * 1e3
        split = ", ".join(f"{kernel} {t:.2f}" for kernel, t in kernel_ms(run, device).items())
        print(f"{shape} p={p} {name}: {ms:.2f} ms, {12 * batch * heads * n * n * d / ms / 1e9:.1f} TFLOP/s; {split}")
        for kernel, tuner in module._TUNED.items():
            picks = [str(config) for key, config in getattr(tuner, "cache", {}).items() if key[0] == n]
            print(f"    {kernel}: {picks[-1] if picks else '-'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="a copy of triton_crab.py from the commit to compare with")
    parser.add_argument("--smoke", action="store_true", help="one tiny shape (on CPU: under TRITON_INTERPRET=1)")
    args = parser.parse_args(argv)
    spec = importlib.util.spec_from_file_location("xct_estimators.nn._baseline_crab", args.baseline)
    baseline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(baseline)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        print(torch.cuda.get_device_name(), torch.__version__)
    for shape, p in SMOKE_SHAPES if args.smoke else SHAPES:
        compare(baseline, shape, p, device, repeats=1 if args.smoke else 20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
