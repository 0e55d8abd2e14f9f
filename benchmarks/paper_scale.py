"""The paper-scale runs this project still lacks, in order, with an estimate each: run as many as a
GPU budget allows.

    python -m benchmarks.paper_scale --dry-run                        # the plan, minutes per entry
    python -m benchmarks.paper_scale --budget-s 780 --data-dir DATA   # on a GPU: what fits in 13 min
    python -m benchmarks.paper_scale --baselines --seeds 2021,2022,2023 --data-dir DATA  # on the CPU
    python -m benchmarks.paper_scale --smoke --output /tmp/queue      # every entry, tiny, on the CPU

(from the repository root: ``python -m`` finds the checkout's package there.)

Entries, in the order they decide things: (a) the converged fp32-vs-bf16 comparison
(``gpu_check.py``'s section 5), which decides whether the rest may train in bf16 with
``torch.compile``; (b) MSL and (c) SMAP anomaly detection with the presets, both protocols and
the baselines; imputation at the paper's rates with the baselines: (d) ETTh1, (e) ETTh2 at 50 %,
(f) ETTm1, (g) ETTm2, (h) Weather; (i) Weather forecasting at the paper's four horizons with the
Darts baselines (its preset takes hours per horizon on a CPU). Every run is an ``xct-bench`` run:
records go to
``OUTPUT/<task>/results.jsonl`` with their provenance, and a run whose identity is already there
is done (rerun the same command to go on). A run starts only when its estimate fits in what is
left of ``--budget-s``; none is cut in the middle, and one that does not fit gives its turn to
the next entries' shorter runs. Only XCTFormer trains on the GPU: the baselines of the same entries
run on the CPU (``--baselines``) into the same records, and ``--dry-run`` lists only the runs
not yet recorded (where the data is at hand to know their identities).

Estimates: a network's training step bounded by those measured on a GPU (the check that
``estimates.STEP_RECORDS`` names) for the networks around it in work per step
(:func:`~benchmarks.measure.estimates.step_seconds`), times the windows each epoch and evaluation
see, then fitted to what the XCTFormer runs already recorded on
a GPU took against their own estimate: training by a factor (the FLOPs leave out the loader and
the loop), evaluation by a fixed part (compiling the inference graphs) plus a factor; a training
the queue already recorded for that entry on the same GPU and mode stands for its own. They are
upper bounds where early stopping ends training sooner. The device image lacks Darts: install the
two wheels that ``gpu_check.py``'s docstring names (and PyOD's for ``darts_iforest``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from benchmarks.measure.estimates import QUEUE_RECORDS, RECORDS, calibration, step_record
from benchmarks.measure.queue import (
    UNIT_MINUTES,
    QueueOptions,
    Runs,
    bf16_safe,
    converged_record,
    plan,
    run_queue,
    trains_fast,
)
from xct_estimators.bench.catalog import DATA_DIR_ENV
from xct_estimators.bench.option_types import csv_positive_ints

DEFAULT_OUTPUT = RECORDS / QUEUE_RECORDS


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="records folder (default: %(default)s)")
    parser.add_argument("--data-dir", help=f"folder with the datasets (default: ${DATA_DIR_ENV})")
    parser.add_argument("--budget-s", type=float, help="stop before a run that would not finish within S seconds")
    parser.add_argument("--accelerator", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the estimate per entry, run nothing")
    parser.add_argument("--smoke", action="store_true", help="every entry on tiny settings and synthetic data (CPU)")
    parser.add_argument("--baselines", action="store_true", help="the entries' baselines instead, on the CPU")
    parser.add_argument("--seeds", type=csv_positive_ints, default=[], help="comma-separated (default: 2021)")
    args = parser.parse_args(argv)
    options = QueueOptions(
        output=args.output,
        data_dir=args.data_dir,
        accelerator="cpu" if args.smoke or args.baselines else args.accelerator,
        smoke=args.smoke,
        argv=["python", "-m", "benchmarks.paper_scale", *(sys.argv[1:] if argv is None else argv)],
        baselines=args.baselines,
        seeds=tuple(args.seeds),
    )
    steps = step_record()
    source = steps["source"]
    safe = bf16_safe(converged_record(options.output, committed=not options.smoke))
    mode = "bf16+compile" if safe and not options.smoke else "fp32"
    print(
        f"estimates from {source['path']} ({source['gpu']}, commit {source['git commit'][:7]}); bf16 safe: "
        f"{'not yet known' if safe is None else safe}; the runs train in {mode}"
    )
    factors = calibration(steps)
    measured = ", ".join(f"{task} {part} {fit}" for (task, part), fit in factors.items())
    print(f"scaled by what the runs recorded on a GPU took against the estimate: {measured}")
    where = "CPU" if options.baselines else "GPU"
    entries = plan(mode, steps, factors, options.baselines)
    if args.dry_run:
        entries = [(entry, _print_pending(entry, options, mode, steps, factors, where)) for entry, _ in entries]
    else:
        for entry, minutes in entries:
            print(f"({entry.key}) {entry.title}: about {minutes:.0f} {where} min", flush=True)
    print(f"all: about {sum(m for _, m in entries):.0f} {where} min{' not yet recorded' if args.dry_run else ''}")
    if not args.dry_run:
        run_queue(options, entries, args.budget_s)
    return 0


def _print_pending(entry, options: QueueOptions, mode: str, steps: dict, factors: dict, where: str) -> float:
    """Print an entry's units not yet recorded with their estimates; returns their minutes."""
    if not isinstance(entry, Runs):
        minutes = entry.minutes(mode, steps, factors)
        done = converged_record(options.output, committed=not options.smoke) is not None
        minutes = 0.0 if done else minutes
        print(f"({entry.key}) {entry.title}: about {minutes:.0f} {where} min{' (done: record found)' if done else ''}")
        return minutes
    units = entry.units(mode, steps, factors, options.baselines)
    costs = dict(units)
    left = [(unit, 1, minutes) for unit, minutes in units]  # (unit, runs, minutes per run)
    count = f"{len(units)} unit(s) (give --data-dir or ${DATA_DIR_ENV} to leave out those recorded)"
    if options.data_dir or os.environ.get(DATA_DIR_ENV):  # the runs' identities name their data's content
        try:
            pending = entry.pending_units(options, trains_fast(options))
        except (OSError, ValueError) as error:
            count = f"{len(units)} unit(s) ({error})"
        else:  # in the plan's order, one run per seed; --smoke's stand-in values: the longest unit's estimate
            names = [unit for unit in costs if unit in pending] + sorted(set(pending) - set(costs))
            longest = max(costs.values(), default=0.0)
            left = [(unit, pending[unit], costs.get(unit, longest)) for unit in names]
            count = f"{len(names)} unit(s) left, {len(set(costs) - set(pending))} recorded"
    total = sum(runs * minutes for _, runs, minutes in left)
    print(f"({entry.key}) {entry.title}: about {total:.0f} {where} min, {count}")
    for unit, runs, minutes in left:
        over = f" (over {UNIT_MINUTES} min: one run is not cut)" if minutes > UNIT_MINUTES else ""
        seeds = f" each, {runs} seeds" if runs > 1 else ""
        print(f"    {unit}: about {minutes:.1f} {where} min{seeds}{over}")
    return total


if __name__ == "__main__":
    sys.exit(main())
