"""GPU check: environment, CPU/GPU parity, training step times with FLOPs, the Darts path end to end.

Writes ``report.md`` and ``report.json`` to ``--output``. Sections:

1. environment: torch, CUDA, GPU name, library versions, which CRAB path runs on the device;
   the CRAB kernel: the fused operator (Triton on a GPU) against the plain formula in float64,
   output and every gradient; one CRAB layer's bf16 forward and backward at the Weather imputation
   shape, fused against the plain path compiled, in TFLOP/s of the plain formula's FLOPs and as a
   share of the GPU's datasheet bf16 peak, with peak memory;
2. parity: the forecasting (ETTh1), imputation (ETTh1) and anomaly (MSL) presets with the same
   weights and inputs on CPU and GPU, float32 (TF32 off): outputs and gradients within 1e-4;
3. step time and peak device memory per preset at its batch size (ETTh1, ETTm1, Weather
   forecasting; ETTh1 imputation; MSL anomaly): fp32 eager (the fused CRAB path, the default),
   fp32 on the plain path (``fused_attention=False``), bf16 autocast, and, for the two
   paper-scale networks, bf16 autocast + ``torch.compile`` (``--compile-all``: every network) and
   the fused path at other chunk sizes; the inference (no-grad forward) time of the fp32
   variants; FLOPs from ``torch.utils.flop_counter`` and achieved TFLOP/s; for the two
   paper-scale networks, the held-out loss after the same 60 steps (one-cycle schedule) in fp32,
   bf16 and fp32 with another dropout stream, and a profiler table where bf16 is not 2x faster;
4. the Darts path: ``XCTFormerModel.from_preset("ETTh1", 96)`` for 2 epochs and
   ``historical_forecasts`` over the test split, on the GPU and on the CPU, MSE of each;
5. the same training to the end: both paper-scale networks trained through the engine on the
   real data (ETTh1 imputation 10 epochs over every 2nd window, MSL 6 over every 8th) in fp32,
   bf16-mixed and fp32 with a second seed, best validation losses side by side (the 2 % goal);
6. with ``--paper-run``: ``xct-bench impute --dataset ETTh1 --mask-rates 0.25 --accelerator gpu``
   (the paper's protocol) in the time left.

    python benchmarks/gpu_check.py --output gpu_check --data-dir DATA     # one GPU; minutes (the records say how many)
    python benchmarks/gpu_check.py --smoke --output /tmp/gpu_smoke        # CPU, tiny sizes, ~1 minute
    python benchmarks/gpu_check.py --kernel-only --output gpu_check       # one GPU: section 1, then the
        # Weather imputation and paper-scale networks' steps, fused vs plain; also writes
        # compile_modes.jsonl, from which paper_scale.py estimates

Needs torch, pytorch-lightning, numpy, pandas, scikit-learn, matplotlib (the device image has
them) and, for section 4, Darts. The smallest set of wheels that makes ``import darts`` and our
Darts path work on a machine that has the packages above (checked by blocking every other
Darts requirement at import time and running fit + historical_forecasts + darts.metrics):

    darts-0.48.1-py3-none-any.whl
    holidays-0.109-py3-none-any.whl    (needs python-dateutil, which pandas brings)
    pip install --no-deps darts-0.48.1-py3-none-any.whl holidays-0.109-py3-none-any.whl

Darts' other requirements (nfoursid, pyod, shap) are imported only by models this script does
not use; statsmodels, scipy, numba, xarray, narwhals, joblib, requests and tqdm are on the
device image. This repository goes on ``PYTHONPATH`` (or ``pip install --no-deps -e .``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xct_estimators.bench.catalog import DATA_DIR_ENV  # noqa: E402
from xct_estimators.nn import (  # noqa: E402
    XCTFormerNet,
    crab_gpu,
    crab_kernel,
    get_preset,
    memory,  # noqa: E402
)
from xct_estimators.nn.presets import PAPER_SEED, PAPER_SEEDS  # noqa: E402

#: (name, preset dataset, task, horizon) of every network measured; the paper-scale ones first,
#: so that their compiled runs start inside the time budget.
PRESETS = [
    ("Weather imputation", "Weather", "impute", None),
    ("ETTh1 imputation", "ETTh1", "impute", None),
    ("MSL anomaly", "MSL", "anomaly", None),
    ("ETTh1 forecast", "ETTh1", "forecast", 96),
    ("ETTm1 forecast", "ETTm1", "forecast", 96),
    ("Weather forecast", "Weather", "forecast", 96),
]
PARITY = ("ETTh1 forecast", "ETTh1 imputation", "MSL anomaly")
PAPER_SCALE = ("ETTh1 imputation", "MSL anomaly")
SMOKE_ARCH = dict(d_model=8, n_heads=1, d_ff=16, e_layers=1)
MODES = ("fp32", "fp32 plain", "fp32+compile", "bf16", "bf16+compile", "bf16+compile plain")
#: Fused-path chunk sizes (scores per chunk on the device) also measured for the paper-scale networks.
CHUNK_MODES = {"fp32 chunk 2^20": 2**20, "fp32 chunk 2^27": 2**27}
INFERENCE_MODES = ("fp32", "fp32 plain", *CHUNK_MODES)


def build(dataset: str, task: str, horizon, smoke: bool):
    preset = get_preset(dataset, task)
    overrides = dict(SMOKE_ARCH) if smoke else {}
    config = preset.config(out_len=horizon, **overrides) if horizon else preset.config(**overrides)
    if smoke:
        config = config.replace(seq_len=min(config.seq_len, 48), out_len=min(config.out_len, 48))
    batch = 4 if smoke else preset.batch_size
    return config, batch, preset.learning_rate


def _git_commit() -> str:
    from xct_estimators.bench.provenance import git_commit

    return git_commit()


def environment() -> dict:
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_threads": torch.get_num_threads(),
        "fused CRAB on CPU": "C++ kernel"
        if crab_kernel.load() is not None
        else f"PyTorch operations ({crab_kernel.unavailable_reason()})",
        "fused CRAB on the device": _device_path(),
        "TF32 matrix products": torch.backends.cuda.matmul.allow_tf32,
        "fused chunk scores (CPU, device)": (memory.chunk_scores("cpu"), memory.chunk_scores("cuda")),
        "git commit": _git_commit(),
    }
    for name in ("pytorch_lightning", "numpy", "pandas", "sklearn", "darts", "xct_estimators"):
        try:
            env[name] = importlib.import_module(name).__version__
        except Exception as error:  # a missing library is a finding, not a crash
            env[name] = f"not importable ({type(error).__name__})"
    return env


def _device_path() -> str:
    if not torch.cuda.is_available():
        return "no GPU"
    if crab_gpu.usable(torch.empty(0, device="cuda")):
        return "Triton kernels"
    return f"PyTorch operations ({crab_gpu.unavailable_reason() or 'GPU too old for Triton'})"


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
    from xct_estimators.nn.attention import weights_in_float32
    from xct_estimators.nn.fused import keep_masks

    weights = weights_in_float32(q @ k.transpose(-2, -1), mask, "absact")
    if p > 0:
        weights = weights * keep_masks(weights.detach(), p, seed) / (1 - p)
    return weights @ v


def _fused_crab(q, k, v, mask, p, seed):
    from xct_estimators.nn import ops

    return ops.crab(q, k, v, mask, 1.0, False, p, torch.tensor([seed]))


def kernel_correctness(device: str, smoke: bool) -> list[dict]:
    """The fused operator (Triton on a GPU) against the plain formula in float64, TF32 off:
    the largest error of the output and each gradient, relative to the reference's largest entry."""
    torch.backends.cuda.matmul.allow_tf32 = False
    n = 40 if smoke else 300
    rows = []
    cases = [("masked, ties, dropout", (2, 2, n, n, 32), 0.3, True), ("DeCoP N x k", (2, 2, n, 24, 32), 0.3, False)]
    for name, shape, p, tie in cases:
        inputs = [t for t in _crab_inputs(*shape, device, torch.float32, tie=tie) if t is not None]
        upstream = torch.randn(*shape[:3], shape[4], device=device)
        results = []
        for fn, dtype in ((_fused_crab, torch.float32), (_plain_crab, torch.float64)):
            leaves = [t.detach().to(dtype).requires_grad_() for t in inputs]
            out = fn(*leaves[:3], leaves[3] if len(leaves) == 4 else None, p, 7)
            results.append([out, *torch.autograd.grad(out, leaves, upstream.to(dtype))])
        errors = {
            what: float((a.detach().double() - b.detach()).abs().max() / b.detach().abs().max())
            for what, a, b in zip(("output", "dQ", "dK", "dV", "dM"), *results, strict=False)
        }
        rows.append({"case": name, "shape": shape, "errors": errors, "ok": max(errors.values()) < 1e-4})
    return rows


def kernel_speed(device: str, smoke: bool, repeats: int, warmup: int) -> list[dict]:
    """One CRAB layer's forward and backward in bf16 at the Weather imputation shape: the fused
    operator against the plain path compiled, with the plain formula's FLOPs."""
    config, batch, _ = build(*KERNEL_PRESET[1:], smoke)
    heads, n, d = config.n_heads, config.n_tokens, config.d_model // config.n_heads
    flops = 12 * batch * heads * n * n * d  # Q K^T and W V forward; dV, G V^T, dQ, dK backward
    peak = _bf16_peak(device)
    rows = []
    plain = ("plain", _plain_crab) if smoke else ("plain+compile", torch.compile(_plain_crab))
    for name, fn in (("fused", _fused_crab), plain):
        q, k, v, mask = _crab_inputs(batch, heads, n, n, d, device, torch.bfloat16)
        mask = mask.detach().float().requires_grad_()
        upstream = torch.randn(batch, heads, n, d, device=device, dtype=torch.bfloat16)
        _reset_peak(device)
        times = []
        for step in range(warmup + repeats):
            start = time.perf_counter()
            torch.autograd.backward(fn(q, k, v, mask, config.attn_dropout, 7), upstream)
            _sync(device)
            if step >= warmup:
                times.append(time.perf_counter() - start)
        seconds = float(np.median(times))
        rows.append(
            {
                "path": name,
                "shape": (batch, heads, n, d),
                "ms": seconds * 1e3,
                "tflops": flops / seconds / 1e12,
                "peak_tflops": peak,
                "percent_of_peak": None if peak is None else 100 * flops / seconds / 1e12 / peak,
                "peak_mb": _peak_mb(device),
            }
        )
        print(f"CRAB layer {name}: {rows[-1]}", flush=True)
    return rows


def _inputs(config, batch: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, config.seq_len, config.n_channels, generator=generator)
    y = torch.randn(batch, config.out_len, config.n_channels, generator=generator)
    return x, y


def parity(cases, device: str) -> list[dict]:
    """Same weights and inputs on CPU and ``device`` (eval mode: no dropout), fp32 with TF32 off."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for name, config, batch in cases:
        try:
            rows.append(_parity_row(name, config, batch, device))
        except Exception:  # reported as a failed row; the other presets still run
            nan = float("nan")
            rows.append(
                {
                    "preset": name,
                    "device": device,
                    "max_abs_output_diff": nan,
                    "max_abs_grad_diff": nan,
                    "ok": False,
                    "error": traceback.format_exc()[-2000:],
                }
            )
    return rows


def _parity_row(name: str, config, batch: int, device: str) -> dict:
    """One preset: outputs and gradients of the same network on CPU and ``device``."""
    torch.manual_seed(0)
    reference = XCTFormerNet(config).eval()
    other = XCTFormerNet(config).eval()
    other.load_state_dict(reference.state_dict())
    other.to(device)
    x, y = _inputs(config, batch)
    results = []
    for net, where in ((reference, "cpu"), (other, device)):
        out = net(x.to(where))
        torch.nn.functional.mse_loss(out, y.to(where)).backward()
        grads = {n: p.grad.detach().cpu() for n, p in net.named_parameters() if p.grad is not None}
        results.append((out.detach().cpu(), grads))
    (out_a, grads_a), (out_b, grads_b) = results
    grad_diff = max(float((grads_a[n] - grads_b[n]).abs().max()) for n in grads_a)
    out_diff = float((out_a - out_b).abs().max())
    return {
        "preset": name,
        "device": device,
        "max_abs_output_diff": out_diff,
        "max_abs_grad_diff": grad_diff,
        "ok": out_diff < 1e-4 and grad_diff < 1e-4,
    }


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _variant(config, mode: str):
    """The network config a mode runs (the plain path for "fp32 plain")."""
    return config.replace(fused_attention=False) if mode.endswith("plain") else config


def _chunk_size(mode: str):
    """Within the block, the fused path's chunks on the device (and on CPU, for --smoke) hold the mode's scores."""
    scores = CHUNK_MODES.get(mode)
    return memory.using_chunk_scores(cpu=scores, accelerator=scores)


def _reset_peak(device: str) -> None:
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _peak_mb(device: str):
    return torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None


def mixed_precision(mode: str) -> bool:
    """Whether ``mode`` trains under bf16 autocast: the bf16 modes only, never an fp32 variant."""
    return mode.startswith("bf16")


def _train_step(net, optimizer, x, y, mode: str, device: str):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=mixed_precision(mode)):
        loss = torch.nn.functional.mse_loss(net(x).float(), y)
    loss.backward()
    optimizer.step()
    return loss


def count_flops(config, batch: int, device: str) -> int:
    """FLOPs of one fp32 training step (forward and backward)."""
    net = XCTFormerNet(config).to(device).train()
    x, y = (t.to(device) for t in _inputs(config, batch))
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.mse_loss(net(x), y).backward()
    return int(counter.get_total_flops())


def step_time(config, batch: int, lr: float, device: str, mode: str, repeats: int, warmup: int):
    """Median milliseconds of a training step (forward, backward, Adam) in ``mode``, the peak
    device memory (MiB; None on CPU) over those steps, and the seconds the warm-up steps took
    (compiling, where the mode compiles)."""
    torch.manual_seed(0)
    net = XCTFormerNet(_variant(config, mode)).to(device).train()
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    model = torch.compile(net) if "compile" in mode else net
    x, y = (t.to(device) for t in _inputs(config, batch))
    with _chunk_size(mode):
        _reset_peak(device)
        start = time.perf_counter()
        for _ in range(warmup):
            _train_step(model, optimizer, x, y, mode, device)
        _sync(device)
        setup = time.perf_counter() - start
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            _train_step(model, optimizer, x, y, mode, device)
            _sync(device)
            times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times)), _peak_mb(device), setup


def inference_time(config, batch: int, device: str, mode: str, repeats: int, warmup: int) -> float:
    """Median milliseconds of a no-grad forward pass (eval mode) in an fp32 ``mode``."""
    torch.manual_seed(0)
    net = XCTFormerNet(_variant(config, mode)).to(device).eval()
    x, _ = (t.to(device) for t in _inputs(config, batch))
    times = []
    with _chunk_size(mode), torch.inference_mode():
        for step in range(warmup + repeats):
            start = time.perf_counter()
            net(x)
            _sync(device)
            if step >= warmup:
                times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


#: The short training's runs: fp32, bf16, and fp32 again with another dropout stream (the
#: spread two fp32 runs show, against which the bf16 gap is read).
SHORT_RUNS = {"fp32": ("fp32", 0), "bf16": ("bf16", 0), "fp32, other dropout": ("fp32", 1)}


def short_training_loss(config, batch: int, lr: float, device: str, run: str, steps: int) -> float:
    """Held-out loss (fp32 evaluation, mean over 4 batches) after ``steps`` steps from one
    initialisation on one fixed stream of batches, with the recipe's one-cycle schedule (peak
    ``lr`` at 40 % of the steps): fp32 and bf16 training compared on equal terms."""
    mode, dropout_seed = SHORT_RUNS[run]
    torch.manual_seed(0)
    net = XCTFormerNet(config).to(device).train()
    torch.manual_seed(dropout_seed)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.4)
    for step in range(steps):
        x, y = (t.to(device) for t in _smooth_batch(config, batch, seed=step))
        _train_step(net, optimizer, x, y, mode, device)
        schedule.step()
    net.eval()
    losses = []
    with torch.no_grad():
        for seed in range(10_000, 10_004):
            x, y = (t.to(device) for t in _smooth_batch(config, batch, seed=seed))
            losses.append(float(torch.nn.functional.mse_loss(net(x), y)))
    return float(np.mean(losses))


def _smooth_batch(config, batch: int, seed: int):
    """Learnable windows: sums of random sines; the target continues (or repeats) the input."""
    rng = np.random.default_rng(seed)
    length = config.seq_len + (0 if config.out_len == config.seq_len else config.out_len)
    t = np.arange(length)[None, :, None]
    freq = rng.uniform(0.01, 0.2, (batch, 1, config.n_channels))
    phase = rng.uniform(0, 2 * np.pi, (batch, 1, config.n_channels))
    series = np.sin(freq * t + phase).astype(np.float32)
    x = torch.from_numpy(series[:, : config.seq_len])
    y = torch.from_numpy(series[:, -config.out_len :])
    return x, y


def profile_table(config, batch: int, lr: float, device: str) -> str:
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    net = XCTFormerNet(config).to(device).train()
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    x, y = (t.to(device) for t in _inputs(config, batch))
    _train_step(net, optimizer, x, y, "bf16", device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(3):
            _train_step(net, optimizer, x, y, "bf16", device)
        _sync(device)
    key = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=15)


def darts_path(device: str, data_dir, smoke: bool) -> dict:
    """from_preset("ETTh1", 96), 2 epochs, historical forecasts over the test split, on ``device`` and CPU."""
    try:
        from xct_estimators.bench.datasets import load_forecast_dataset
        from xct_estimators.bench.forecast import prepare
    except ImportError as error:
        return {"skipped": f"Darts is not importable ({error}); carry the wheels named in this script's docstring"}
    except Exception:  # e.g. Darts against a newer numpy or pandas than it knows
        return {"failed": "importing Darts: " + traceback.format_exc()[-3000:]}
    try:
        data = prepare(load_forecast_dataset("synthetic" if smoke else "ETTh1", data_dir, seed=PAPER_SEED))
    except (FileNotFoundError, ValueError, OSError) as error:
        return {"skipped": f"no ETTh1 data ({error}); pass --data-dir"}
    try:
        return _darts_runs(device, data, smoke)
    except Exception:  # a finding to report; the sections before it are kept
        return {"failed": traceback.format_exc()[-3000:]}


def _darts_runs(device: str, data, smoke: bool) -> dict:
    from xct_estimators import XCTFormerModel
    from xct_estimators.bench.forecast import forecast_test_split, score

    if smoke:
        data.train, data.val, data.test = data.train[:400], data.val[:250], data.test[:250]
    result = {}
    for where in dict.fromkeys((device, "cpu")):
        extra = dict(SMOKE_ARCH) if smoke else {}
        model = XCTFormerModel.from_preset(
            "ETTh1",
            96,
            n_epochs=2,
            random_state=PAPER_SEED,
            **extra,
            pl_trainer_kwargs={
                "accelerator": "gpu" if where == "cuda" else "cpu",
                "devices": 1,
                "enable_progress_bar": False,
                "enable_model_summary": False,
                "logger": False,
            },
        )
        start = time.perf_counter()
        model.fit(data.train, val_series=data.val, verbose=False)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        forecasts = forecast_test_split(model, data, 96)
        result[where] = {
            **score(model, data, forecasts),
            "fit_seconds": fit_s,
            "forecast_seconds": time.perf_counter() - start,
            "windows": len(forecasts),
        }
    return result


#: The converged comparison: (name, preset dataset, task, epochs, train stride), trained through
#: the ReconstructionEngine on the real data with the recipe (one-cycle schedule, best epoch kept).
CONVERGED = [("ETTh1 imputation", "ETTh1", "impute", 10, 2), ("MSL anomaly", "MSL", "anomaly", 6, 8)]
#: fp32 and bf16 from one seed; fp32 from another seed: the spread the bf16 gap is read against.
CONVERGED_RUNS = {
    "fp32": ({}, PAPER_SEEDS[0]),
    "bf16-mixed": ({"precision": "bf16-mixed"}, PAPER_SEEDS[0]),
    f"fp32, seed {PAPER_SEEDS[1]}": ({}, PAPER_SEEDS[1]),
}


def _converged_arrays(dataset: str, task: str, data_dir, smoke: bool):
    if smoke:  # learnable channels: the reconstruction of smooth sines
        t = np.arange(600)[:, None]
        values = np.sin(t * np.array([0.05, 0.11, 0.23]) + np.array([0.0, 1.0, 2.0])).astype(np.float32)
        return values[:500], values[500:] if task == "impute" else None
    from xct_estimators.bench.detect import detection_arrays
    from xct_estimators.bench.impute import imputation_splits

    if task == "impute":
        train, val, _ = imputation_splits(dataset, data_dir, PAPER_SEED)
        return train, val
    return detection_arrays(dataset, data_dir)[0], None  # the engine holds out the last 10 %


def converged_training(device: str, data_dir, smoke: bool) -> list[dict]:
    """Best validation loss after the same training in fp32 and bf16-mixed (the 2 % criterion),
    with a second fp32 seed for the spread; the validation loss is the engine's (masked MSE for
    imputation, reconstruction MSE for anomaly detection), evaluated under each run's precision."""
    from xct_estimators.reconstruction import ReconstructionEngine, preset_params

    rows = []
    for name, dataset, task, epochs, stride in CONVERGED:
        row = {"preset": name, "epochs": epochs, "train_stride": stride, "runs": {}}
        rows.append(row)
        try:
            train, val = _converged_arrays(dataset, task, data_dir, smoke)
        except (FileNotFoundError, ValueError, OSError) as error:
            row["skipped"] = f"no {dataset} data ({error}); pass --data-dir"
            continue
        params = preset_params(dataset, task)
        params.update(n_epochs=epochs, patience=None, train_stride=stride, fill="zero")
        if task == "impute":
            params["mask_rate"] = 0.25
        if smoke:
            params.update(SMOKE_ARCH, window_length=48, n_epochs=2, batch_size=8, patch_len=8, stride=4)
        row["epochs"] = params["n_epochs"]
        row["settings"] = {k: params.get(k) for k in ("window_length", "batch_size", "learning_rate", "mask_rate")}
        for run, (trainer_kwargs, seed) in CONVERGED_RUNS.items():
            try:
                accelerator = "gpu" if device == "cuda" else "cpu"
                engine = ReconstructionEngine(
                    **params,
                    random_state=seed,
                    accelerator=accelerator,
                    devices=1,
                    pl_trainer_kwargs=dict(trainer_kwargs),
                )
                start = time.perf_counter()
                engine.fit(train, val_values=val)
                row["runs"][run] = {
                    "best_val_loss": engine.best_val_loss,
                    "best_epoch": engine.best_epoch,
                    "val_losses": [round(v, 5) for v in engine.val_losses],
                    "seconds": time.perf_counter() - start,
                }
            except Exception:  # a finding to report; the other runs still go
                row["runs"][run] = {"error": traceback.format_exc()[-2000:]}
            print(f"{name} {run}: {row['runs'][run]}", flush=True)
    return rows


def paper_run(output: Path, data_dir, timeout_s: float) -> dict:
    command = [
        sys.executable,
        "-m",
        "xct_estimators.bench",
        "impute",
        "--dataset",
        "ETTh1",
        "--mask-rates",
        "0.25",
        "--models",
        "xctformer,linear",
        "--accelerator",
        "gpu",
        "--output",
        str(output / "impute"),
        "--no-progress",
    ] + (["--data-dir", str(data_dir)] if data_dir else [])
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {
            "command": " ".join(command),
            "timed_out_after_s": timeout_s,
            "note": "finished runs are in impute/results.jsonl; rerun with --resume",
        }
    return {
        "command": " ".join(command),
        "returncode": done.returncode,
        "seconds": time.perf_counter() - start,
        "tail": done.stdout[-3000:] + done.stderr[-2000:],
    }


def markdown(report: dict) -> str:
    mode = "smoke (tiny sizes)" if report["smoke"] else "full"
    lines = ["# GPU check", "", f"mode: {mode}, device: {report['device']}", "", "## Environment", ""]
    lines += [f"- {k}: {v}" for k, v in report["environment"].items()]
    lines += ["", "## CRAB kernel against the plain formula (float64 reference, TF32 off)", ""]
    lines += ["| case | shape (B, H, N, M, d) | largest relative errors | within 1e-4 |", "|---|---|---|---|"]
    for r in report.get("kernel_correctness", []):
        errors = ", ".join(f"{k} {v:.1e}" for k, v in r["errors"].items())
        lines.append(f"| {r['case']} | {tuple(r['shape'])} | {errors} | {r['ok']} |")
    lines += ["", "## One CRAB layer, forward and backward in bf16 (Weather imputation shape)", ""]
    lines += ["| path | shape (B, H, N, d) | ms | TFLOP/s | peak used | % of peak | peak MiB |", "|---" * 7 + "|"]
    for r in report.get("kernel_speed", []):
        percent = "-" if r["percent_of_peak"] is None else f"{r['percent_of_peak']:.1f}"
        memory_mb = "-" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        lines.append(
            f"| {r['path']} | {tuple(r['shape'])} | {r['ms']:.2f} | {r['tflops']:.1f} | "
            f"{r['peak_tflops'] or 'unknown'} | {percent} | {memory_mb} |"
        )
    lines += [
        "",
        "## CPU vs device parity (fp32, TF32 off, eval mode)",
        "",
        "| preset | max |output diff| | max |grad diff| | within 1e-4 |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['preset']} | {r['max_abs_output_diff']:.2e} | {r['max_abs_grad_diff']:.2e} | {r['ok']} |"
        for r in report.get("parity", [])
    ]
    modes = [m for m in (*MODES, *CHUNK_MODES) if any(m in row["ms"] for row in report.get("steps", []))]
    lines += [
        "",
        "## Training step (forward, backward, Adam) at the preset's batch size",
        "",
        "fp32 and bf16 are the default (fused CRAB); plain: `fused_attention=False`; chunk: the fused "
        "path with that many scores per chunk. Milliseconds, median; peak device memory in MiB in brackets.",
        "",
        "| preset | batch | tokens | GFLOP/step | "
        + " | ".join(modes)
        + " | fp32 TFLOP/s | "
        + " | ".join(f"{m} speed-up" for m in modes[1:])
        + " |",
        "|---" * (5 + 2 * len(modes)) + "|",
    ]
    for row in report.get("steps", []):
        ms, mem = [row["ms"].get(m) for m in modes], [row["peak_mb"].get(m) for m in modes]
        cells = " | ".join(
            "-" if v is None else (f"{v:.1f}" + ("" if b is None else f" [{b:.0f}]"))
            for v, b in zip(ms, mem, strict=True)
        )
        speed = " | ".join(f"{ms[0] / v:.2f}x" if v else "-" for v in ms[1:])
        lines.append(
            f"| {row['preset']} | {row['batch']} | {row['tokens']} | {row['flops'] / 1e9:.1f} | {cells} | "
            f"{row['tflops_fp32']:.2f} | {speed} |"
        )
    if any(row.get("infer_ms") for row in report.get("steps", [])):
        lines += [
            "",
            "## Inference (no-grad forward, eval mode) at the preset's batch size, ms",
            "",
            "| preset | " + " | ".join(INFERENCE_MODES) + " |",
            "|---" * (1 + len(INFERENCE_MODES)) + "|",
        ]
        for row in report["steps"]:
            cells = " | ".join(
                "-" if row["infer_ms"].get(m) is None else f"{row['infer_ms'][m]:.2f}" for m in INFERENCE_MODES
            )
            lines.append(f"| {row['preset']} | {cells} |")
    failures = [(r["preset"], "parity", r["error"]) for r in report.get("parity", []) if r.get("error")]
    failures += [(r["preset"], m, e) for r in report.get("steps", []) for m, e in r.get("errors", {}).items()]
    for preset, what, error in failures:
        lines += ["", f"## Failed: {preset}, {what}", "", "```", error, "```"]
    if report.get("short_training"):
        lines += [
            "",
            "## Same short training, fp32 vs bf16 (held-out loss; one-cycle schedule)",
            "",
            "| preset | steps | fp32 | bf16 | fp32, other dropout | bf16 gap | fp32 spread |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in report["short_training"]:
            gap, spread = row["bf16"] / row["fp32"] - 1, row["fp32, other dropout"] / row["fp32"] - 1
            lines.append(
                f"| {row['preset']} | {row['steps']} | {row['fp32']:.5f} | {row['bf16']:.5f} | "
                f"{row['fp32, other dropout']:.5f} | {gap:+.1%} | {spread:+.1%} |"
            )
    if report.get("converged"):
        header = "| preset | epochs | train stride | " + " | ".join(CONVERGED_RUNS) + " | bf16 gap | fp32 seed spread |"
        lines += [
            "",
            "## The same training to the end, fp32 vs bf16-mixed (engine, real data; best validation loss)",
            "",
            header,
            "|---" * (5 + len(CONVERGED_RUNS)) + "|",
        ]
        for row in report["converged"]:
            loss = {run: row["runs"].get(run, {}).get("best_val_loss") for run in CONVERGED_RUNS}
            cells = " | ".join("-" if v is None else f"{v:.5f}" for v in loss.values())
            fp32, bf16, other = loss.values()
            gap = f"{bf16 / fp32 - 1:+.1%}" if fp32 and bf16 else "-"
            spread = f"{other / fp32 - 1:+.1%}" if fp32 and other else "-"
            note = f" ({row['skipped']})" if row.get("skipped") else ""
            settings = f"{row['epochs']} | {row['train_stride']}"
            lines.append(f"| {row['preset']}{note} | {settings} | {cells} | {gap} | {spread} |")
    for name, table in report.get("profiles", {}).items():
        lines += ["", f"## Where the bf16 step's time goes: {name}", "", "```", table, "```"]
    if "darts" in report:
        lines += [
            "",
            "## Darts path (from_preset ETTh1 96, 2 epochs, historical_forecasts on the test split)",
            "",
            "```",
            json.dumps(report["darts"], indent=2),
            "```",
        ]
    if report.get("paper_run"):
        lines += ["", "## Paper-scale run", "", "```", json.dumps(report["paper_run"], indent=2), "```"]
    lines += [f"- note: {note}" for note in report.get("notes", [])]
    lines += ["", f"total: {report.get('seconds', 0):.0f} s" + ("" if report.get("finished") else " (unfinished)")]
    return "\n".join(lines) + "\n"


def save(report: dict, output: Path, start: float) -> None:
    """Write both reports now: a run cut short keeps every finished section."""
    report["seconds"] = time.perf_counter() - start
    (output / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (output / "report.md").write_text(markdown(report))


def short_training_only(args) -> int:
    """Print the short training's held-out losses for the paper-scale networks (a minute or two
    a run on 2 CPU cores at batch 16-32, three times that under CPU bf16 autocast)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for name, dataset, task, horizon in PRESETS:
        if name not in PAPER_SCALE or args.preset not in (None, name):
            continue
        config, batch, lr = build(dataset, task, horizon, args.smoke)
        batch = args.batch or batch
        for run in SHORT_RUNS:
            loss = short_training_loss(config, batch, lr, device, run, args.steps)
            print(f"{name}, batch {batch}, {args.steps} steps, {run}: held-out loss {loss:.5f}", flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="gpu_check", help="folder for report.md and report.json")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on CPU (a minute): catches breakage")
    parser.add_argument("--data-dir", default=os.environ.get(DATA_DIR_ENV), help="datasets (ETTh1 for section 4)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile column")
    parser.add_argument("--compile-all", action="store_true", help="compile every network, not only the paper-scale")
    parser.add_argument("--paper-run", action="store_true", help="also run xct-bench impute on ETTh1 (GPU)")
    parser.add_argument("--budget-s", type=float, default=450, help="stop optional work after this (default 450)")
    parser.add_argument(
        "--short-training-only",
        action="store_true",
        help="only the short fp32/bf16 training of the paper-scale networks, printed (on CPU: "
        "CPU autocast, the same code)",
    )
    parser.add_argument("--batch", type=int, default=None, help="with --short-training-only: batch size")
    parser.add_argument(
        "--preset", choices=PAPER_SCALE, default=None, help="with --short-training-only: one network (default: both)"
    )
    parser.add_argument("--steps", type=int, default=60, help="with --short-training-only: training steps")
    parser.add_argument(
        "--kernel-only",
        action="store_true",
        help="only the CRAB kernel's correctness and speed, and the training steps of the Weather and ETTh1 "
        "imputation networks (a few minutes on one GPU)",
    )
    args = parser.parse_args(argv)
    if args.short_training_only:
        return short_training_only(args)
    start = time.perf_counter()
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    repeats, warmup = (2, 1) if args.smoke else (20, 5)
    compile_ok = not args.no_compile and not args.smoke  # inductor's CPU build takes minutes
    cases = {name: (name, *build(ds, task, h, args.smoke)) for name, ds, task, h in PRESETS}
    report = {"smoke": args.smoke, "device": device, "environment": environment()}
    report["environment"]["command"] = " ".join(["benchmarks/gpu_check.py", *(sys.argv[1:] if argv is None else argv)])
    report["kernel_correctness"] = kernel_correctness(device, args.smoke)
    print(f"kernel correctness: {report['kernel_correctness']}", flush=True)
    report["kernel_speed"] = kernel_speed(device, args.smoke, repeats, warmup)
    report["steps"], report["short_training"], report["profiles"] = [], [], {}
    save(report, output, start)
    if args.kernel_only:
        return kernel_only(report, cases, device, compile_ok, repeats, warmup, output, start)
    report["parity"] = parity([(n, c, b) for n, c, b, _ in (cases[p] for p in PARITY)], device)
    print(f"parity: {report['parity']}", flush=True)
    save(report, output, start)
    for name, config, batch, lr in cases.values():
        flops = count_flops(config, batch, device)
        row = {
            "preset": name,
            "batch": batch,
            "tokens": config.n_tokens,
            "flops": flops,
            "ms": {},
            "peak_mb": {},
            "infer_ms": {},
        }
        report["steps"].append(row)
        modes = MODES + (tuple(CHUNK_MODES) if name in PAPER_SCALE else ())
        for mode in modes:
            if "compile" in mode:
                wanted = compile_ok and (args.compile_all or name in PAPER_SCALE)
                if wanted and time.perf_counter() - start > args.budget_s / 2:  # ~a minute per network
                    report.setdefault("notes", []).append(f"{name}: compile skipped, past half the time budget")
                if not wanted or time.perf_counter() - start > args.budget_s / 2:
                    continue
            try:
                row["ms"][mode], row["peak_mb"][mode], _ = step_time(config, batch, lr, device, mode, repeats, warmup)
                if mode in INFERENCE_MODES:
                    row["infer_ms"][mode] = inference_time(config, batch, device, mode, repeats, warmup)
            except Exception:  # one failing mode (e.g. the compiler) is a finding; the others still run
                row.setdefault("errors", {})[mode] = traceback.format_exc()[-2000:]
                print(f"{name} {mode} failed:\n{row['errors'][mode]}", flush=True)
        row["tflops_fp32"] = flops / (row["ms"]["fp32"] / 1e3) / 1e12
        if name in PAPER_SCALE:
            steps = 3 if args.smoke else 60
            losses = {run: short_training_loss(config, batch, lr, device, run, steps) for run in SHORT_RUNS}
            report["short_training"].append(
                {
                    "preset": name,
                    "steps": steps,
                    "batch": batch,
                    "peak_lr": lr,
                    "protocol": "Adam, one-cycle (pct_start 0.4), held-out mean of 4 batches",
                    **losses,
                }
            )
            best = min(v for k, v in row["ms"].items() if k.startswith("bf16"))
            if row["ms"]["fp32"] / best < 2.0:
                report["profiles"][name] = profile_table(config, batch, lr, device)
        print(f"{name}: train {row['ms']} peak MiB {row['peak_mb']} infer {row['infer_ms']}", flush=True)
        save(report, output, start)
    report["darts"] = darts_path(device, args.data_dir, args.smoke)
    print(f"darts: {report['darts']}", flush=True)
    save(report, output, start)
    report["converged"] = converged_training(device, args.data_dir, args.smoke)
    save(report, output, start)
    if args.paper_run and not args.smoke:
        left = args.budget_s - (time.perf_counter() - start)
        report["paper_run"] = paper_run(output, args.data_dir, max(left, 30))
    report["finished"] = True
    save(report, output, start)
    print(f"wrote {output / 'report.md'} and {output / 'report.json'} ({report['seconds']:.0f} s)")
    return 0 if all(row["ok"] for row in report["parity"] + report["kernel_correctness"]) else 1


#: The networks and modes of ``--kernel-only``: the default fused path against the plain one, and
#: the paper-scale networks that ``paper_scale.py`` estimates from (``compile_modes.jsonl``).
KERNEL_NETWORKS = ("Weather imputation", *PAPER_SCALE)
KERNEL_MODES = ("fp32", "fp32 plain", "bf16", "bf16+compile", "bf16+compile plain")


def kernel_only(report, cases, device, compile_ok, repeats, warmup, output, start) -> int:
    modes_record = [{"environment": report["environment"]}]
    for name in KERNEL_NETWORKS:
        _, config, batch, lr = cases[name]
        row = {"preset": name, "batch": batch, "tokens": config.n_tokens, "ms": {}, "peak_mb": {}, "infer_ms": {}}
        row["flops"] = count_flops(config, batch, device)
        report["steps"].append(row)
        for mode in KERNEL_MODES:
            if "compile" in mode and not compile_ok:
                continue
            try:
                ms, peak, setup = step_time(config, batch, lr, device, mode, repeats, warmup)
                row["ms"][mode], row["peak_mb"][mode] = ms, peak
                line = {"preset": name, "batch": batch, "mode": mode, "ms": ms, "peak_mb": peak}
                modes_record.append({**line, "seconds_with_compile": setup})
            except Exception:  # one failing mode is a finding; the others still run
                row.setdefault("errors", {})[mode] = traceback.format_exc()[-2000:]
        row["tflops_fp32"] = row["flops"] / (row["ms"]["fp32"] / 1e3) / 1e12
        print(f"{name}: train {row['ms']} peak MiB {row['peak_mb']}", flush=True)
        save(report, output, start)
        (output / "compile_modes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in modes_record))
    report["finished"] = True
    save(report, output, start)
    print(f"wrote {output / 'report.md'} and {output / 'report.json'} ({report['seconds']:.0f} s)")
    return 0 if all(row["ok"] for row in report["kernel_correctness"]) else 1


if __name__ == "__main__":
    sys.exit(main())
