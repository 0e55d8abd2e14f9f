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

    python -m benchmarks.gpu_check --output gpu_check --data-dir DATA     # one GPU; minutes (the records say how many)
    python -m benchmarks.gpu_check --smoke --output /tmp/gpu_smoke        # CPU, tiny sizes, ~1 minute
    python -m benchmarks.gpu_check --kernel-only --output gpu_check       # one GPU: section 1, then the
        # Weather imputation and paper-scale networks' steps, fused vs plain; also writes
        # compile_modes.jsonl, from which paper_scale.py estimates

Run from the repository root (``python -m`` finds the checkout's package there).

Needs torch, pytorch-lightning, numpy, pandas, scikit-learn, matplotlib (the device image has
them) and, for section 4, Darts. The smallest set of wheels that makes ``import darts`` and our
Darts path work on a machine that has the packages above (checked by blocking every other
Darts requirement at import time and running fit + historical_forecasts + darts.metrics):

    darts-0.48.1-py3-none-any.whl
    holidays-0.109-py3-none-any.whl    (needs python-dateutil, which pandas brings)
    pip install --no-deps darts-0.48.1-py3-none-any.whl holidays-0.109-py3-none-any.whl

Darts' other requirements (nfoursid, pyod, shap) are imported only by models this script does
not use; statsmodels, scipy, numba, xarray, narwhals, joblib, requests and tqdm are on the
device image.
The measurements live in :mod:`benchmarks.measure`; this script runs them in order.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from benchmarks.measure import converged, kernel, networks
from benchmarks.measure.gpu_report import save
from benchmarks.measure.networks import PAPER_SCALE, PARITY, PRESETS, SHORT_RUNS, StepPlan
from xct_estimators.bench.catalog import DATA_DIR_ENV


def short_training_only(args) -> int:
    """Print the short training's held-out losses for the paper-scale networks."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for name, dataset, task, horizon in PRESETS:
        if name not in PAPER_SCALE or args.preset not in (None, name):
            continue
        config, batch, lr = networks.build(dataset, task, horizon, args.smoke)
        batch = args.batch or batch
        for run in SHORT_RUNS:
            loss = networks.short_training_loss(config, batch, lr, device, run, args.steps)
            print(f"{name}, batch {batch}, {args.steps} steps, {run}: held-out loss {loss:.5f}", flush=True)
    return 0


def parse(argv=None) -> argparse.Namespace:
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
        help="only the CRAB kernel's correctness and speed, and the training steps of "
        f"{', '.join(networks.KERNEL_NETWORKS)} (a few minutes on one GPU)",
    )
    parser.add_argument(
        "--networks",
        type=lambda text: [name.strip() for name in text.split(",")],
        default=None,
        help="with --kernel-only: only these networks' steps, comma-separated, and no CRAB layer timing "
        f"(default: {', '.join(networks.KERNEL_NETWORKS)})",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if args.short_training_only:
        return short_training_only(args)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    plan = StepPlan(
        device=device,
        smoke=args.smoke,
        repeats=2 if args.smoke else 20,
        warmup=1 if args.smoke else 5,
        compile_ok=not args.no_compile and not args.smoke,  # inductor's CPU build takes minutes
        compile_all=args.compile_all,
        budget_s=args.budget_s,
    )
    cases = {name: networks.build(ds, task, h, args.smoke) for name, ds, task, h in PRESETS}
    report = {"smoke": args.smoke, "device": device, "environment": kernel.environment()}
    report["environment"]["command"] = " ".join(["-m benchmarks.gpu_check", *(sys.argv[1:] if argv is None else argv)])
    report["kernel_correctness"] = kernel.kernel_correctness(device, args.smoke)
    print(f"kernel correctness: {report['kernel_correctness']}", flush=True)
    if args.networks is None:
        report["kernel_speed"] = kernel.kernel_speed(device, args.smoke, plan.repeats, plan.warmup)
    report["steps"], report["short_training"], report["profiles"] = [], [], {}
    save(report, output, plan.start)
    if args.kernel_only:
        return kernel_only(report, cases, plan, output, args.networks or networks.KERNEL_NETWORKS)
    report["parity"] = networks.parity([(name, *cases[name][:2]) for name in PARITY], device)
    print(f"parity: {report['parity']}", flush=True)
    save(report, output, plan.start)
    for name, (config, batch, lr) in cases.items():
        row = networks.measure_network(name, config, batch, lr, plan, report)
        report["steps"].append(row)
        print(f"{name}: train {row['ms']} peak MiB {row['peak_mb']} infer {row['infer_ms']}", flush=True)
        save(report, output, plan.start)
    report["darts"] = converged.darts_path(device, args.data_dir, args.smoke)
    print(f"darts: {report['darts']}", flush=True)
    save(report, output, plan.start)
    report["converged"] = converged.converged_training(device, args.data_dir, args.smoke)
    save(report, output, plan.start)
    if args.paper_run and not args.smoke:
        left = args.budget_s - (time.perf_counter() - plan.start)
        report["paper_run"] = converged.paper_run(output, args.data_dir, max(left, 30))
    return finish(report, output, plan, report["parity"] + report["kernel_correctness"])


def kernel_only(report: dict, cases: dict, plan: StepPlan, output: Path, names) -> int:
    """The kernel's sections, then the kernel networks' steps; also ``compile_modes.jsonl``."""
    modes_record = [{"environment": report["environment"]}]
    for name in names:
        row, lines = networks.kernel_network_steps(name, *cases[name], plan)
        report["steps"].append(row)
        modes_record += lines
        print(f"{name}: train {row['ms']} peak MiB {row['peak_mb']}", flush=True)
        save(report, output, plan.start)
        (output / "compile_modes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in modes_record))
    return finish(report, output, plan, report["kernel_correctness"])


def finish(report: dict, output: Path, plan: StepPlan, checks: list[dict]) -> int:
    report["finished"] = True
    save(report, output, plan.start)
    print(f"wrote {output / 'report.md'} and {output / 'report.json'} ({report['seconds']:.0f} s)")
    return 0 if all(row["ok"] for row in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
