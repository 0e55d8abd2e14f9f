"""The presets' networks measured on one device: CPU/device parity, training-step and inference
time with peak memory, FLOPs, and a short fp32-against-bf16 training."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from xct_estimators.nn import XCTFormerNet, get_preset, memory, tf32

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


def _inputs(config, batch: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, config.seq_len, config.n_channels, generator=generator)
    y = torch.randn(batch, config.out_len, config.n_channels, generator=generator)
    return x, y


def parity(cases, device: str) -> list[dict]:
    """Same weights and inputs on CPU and ``device`` (eval mode: no dropout), fp32 with TF32 off."""
    tf32.allow(False)
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


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _variant(config, mode: str):
    """The network config a mode runs: the plain path for "... plain", else the fused one (forced: the
    default would take the plain path in a compiled GPU run, and the modes time both)."""
    return config.replace(fused_attention=not mode.endswith("plain"))


def _chunk_size(mode: str):
    """Within the block, the fused path's chunks on the device (and on CPU, for --smoke) hold the mode's scores."""
    scores = CHUNK_MODES.get(mode)
    return memory.using_chunk_scores(cpu=scores, accelerator=scores)


def reset_peak_memory(device: str) -> None:
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_memory_mb(device: str):
    return torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None


def mixed_precision(mode: str) -> bool:
    """Whether ``mode`` trains under bf16 autocast: the bf16 modes only, never an fp32 variant."""
    return mode.startswith("bf16")


def train_step(net, optimizer, x, y, mode: str, device: str):
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
        reset_peak_memory(device)
        start = time.perf_counter()
        for _ in range(warmup):
            train_step(model, optimizer, x, y, mode, device)
        synchronize(device)
        setup = time.perf_counter() - start
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            train_step(model, optimizer, x, y, mode, device)
            synchronize(device)
            times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times)), peak_memory_mb(device), setup


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
            synchronize(device)
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
        train_step(net, optimizer, x, y, mode, device)
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
    train_step(net, optimizer, x, y, "bf16", device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(3):
            train_step(net, optimizer, x, y, "bf16", device)
        synchronize(device)
    key = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=15)


@dataclass(frozen=True)
class StepPlan:
    """How one measurement run times the networks' steps."""

    device: str
    smoke: bool
    repeats: int
    warmup: int
    compile_ok: bool
    compile_all: bool = False
    budget_s: float = float("inf")
    start: float = field(default_factory=time.perf_counter)

    def compile_wanted(self, name: str) -> bool:
        return self.compile_ok and (self.compile_all or name in PAPER_SCALE)

    def past_half_budget(self) -> bool:
        return time.perf_counter() - self.start > self.budget_s / 2


def network_row(name: str, config, batch: int, device: str) -> dict:
    row = {"preset": name, "batch": batch, "tokens": config.n_tokens, "ms": {}, "peak_mb": {}, "infer_ms": {}}
    row["flops"] = count_flops(config, batch, device)
    return row


def measure_network(name: str, config, batch: int, lr: float, plan: StepPlan, report: dict) -> dict:
    """Every mode's training step (and the fp32 variants' inference) of one network; for the
    paper-scale networks also the short fp32/bf16 training and, where bf16 is not 2x faster, a
    profile. A failing mode is recorded and the others still run."""
    row = network_row(name, config, batch, plan.device)
    modes = MODES + (tuple(CHUNK_MODES) if name in PAPER_SCALE else ())
    for mode in modes:
        if "compile" in mode:
            if plan.compile_wanted(name) and plan.past_half_budget():  # about a minute per network
                report.setdefault("notes", []).append(f"{name}: compile skipped, past half the time budget")
            if not plan.compile_wanted(name) or plan.past_half_budget():
                continue
        try:
            row["ms"][mode], row["peak_mb"][mode], _ = step_time(
                config, batch, lr, plan.device, mode, plan.repeats, plan.warmup
            )
            if mode in INFERENCE_MODES:
                row["infer_ms"][mode] = inference_time(config, batch, plan.device, mode, plan.repeats, plan.warmup)
        except Exception:  # one failing mode (e.g. the compiler) is a finding; the others still run
            row.setdefault("errors", {})[mode] = traceback.format_exc()[-2000:]
            print(f"{name} {mode} failed:\n{row['errors'][mode]}", flush=True)
    row["tflops_fp32"] = row["flops"] / (row["ms"]["fp32"] / 1e3) / 1e12
    if name in PAPER_SCALE:
        steps = 3 if plan.smoke else 60
        losses = {run: short_training_loss(config, batch, lr, plan.device, run, steps) for run in SHORT_RUNS}
        protocol = "Adam, one-cycle (pct_start 0.4), held-out mean of 4 batches"
        report["short_training"].append(
            {"preset": name, "steps": steps, "batch": batch, "peak_lr": lr, "protocol": protocol, **losses}
        )
        best = min(v for k, v in row["ms"].items() if k.startswith("bf16"))
        if row["ms"]["fp32"] / best < 2.0:
            report["profiles"][name] = profile_table(config, batch, lr, plan.device)
    return row


#: The networks and modes of ``--kernel-only``: the default fused path against the plain one, and
#: the paper-scale networks that ``paper_scale.py`` estimates from (``compile_modes.jsonl``).
KERNEL_NETWORKS = (*PAPER_SCALE, "Weather imputation")  # the queue's estimates first
KERNEL_MODES = ("fp32", "fp32 plain", "bf16", "bf16+compile", "bf16+compile plain")


def kernel_network_steps(name: str, config, batch: int, lr: float, plan: StepPlan) -> tuple[dict, list[dict]]:
    """One network's step in each of the kernel modes: the report's row, and the lines of
    ``compile_modes.jsonl`` (with the warm-up's seconds, compiling included)."""
    row, lines = network_row(name, config, batch, plan.device), []
    for mode in KERNEL_MODES:
        if "compile" in mode and not plan.compile_ok:
            continue
        try:
            ms, peak, setup = step_time(config, batch, lr, plan.device, mode, plan.repeats, plan.warmup)
            row["ms"][mode], row["peak_mb"][mode] = ms, peak
            lines.append(
                {"preset": name, "batch": batch, "mode": mode, "ms": ms, "peak_mb": peak, "seconds_with_compile": setup}
            )
        except Exception:  # one failing mode is a finding; the others still run
            row.setdefault("errors", {})[mode] = traceback.format_exc()[-2000:]
    row["tflops_fp32"] = row["flops"] / (row["ms"]["fp32"] / 1e3) / 1e12
    return row, lines
