"""``xct-bench tune``: the paper's Optuna search on a benchmark dataset's splits.

Several ``xct-bench tune`` processes with the same ``--output`` (or ``--storage``) and study name
work on one study; Optuna's storage keeps them apart, so this command takes no lock of its own.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..nn.presets import PAPER_PATIENCE
from .forecast_plots import file_name
from .provenance import run_fields, timestamp
from .runs import write_atomically
from .settings import TuneSettings
from .tasks import TASKS

#: The default storage: an Optuna journal file in the output folder (no server needed).
JOURNAL_NAME = "optuna.journal"


def fixed_settings(args: TuneSettings) -> dict:
    """Settings the command line fixes for every trial (they leave the search space)."""
    fixed = dict(args.arch or {})
    if args.epochs:
        fixed["n_epochs"] = args.epochs
    if args.batch_size:
        fixed["batch_size"] = args.batch_size
    if args.learning_rate:
        fixed["learning_rate"] = args.learning_rate
    if TASKS[args.task].strided:
        fixed["train_stride"] = args.train_stride
    return fixed


def _read_space(path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except OSError as error:
        raise ValueError(f"--space {path}: {error.strerror or error}; give a JSON file of the search space.") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"--space {path}: not valid JSON ({error}); see docs/benchmarks.md for the format.") from None


def check_tune_options(args: TuneSettings) -> None:
    """What the options alone refuse, before torch loads."""
    if not TASKS[args.task].strided and args.train_stride != 1:
        raise ValueError(
            f"--train-stride {args.train_stride}: forecasting trials train on every window (Darts' samples); the "
            "stride applies to --task impute and detect. Leave it out, or shorten training with --epochs."
        )
    if args.look_backs and args.task != "forecast":
        raise ValueError(
            f"--look-backs: a look-back search is for forecasting; --task {args.task} windows have the "
            "paper's length. Leave --look-backs out."
        )
    if args.patience and args.task != "forecast":
        raise ValueError(
            f"--patience: --task {args.task} trials already stop after the paper's {PAPER_PATIENCE} epochs without "
            "a lower validation loss. Leave --patience out."
        )
    if args.space and "input_chunk_length" in _read_space(args.space):
        raise ValueError(
            f"--space {args.space} searches input_chunk_length: give the input lengths with --look-backs instead "
            "(validation then starts the longest one before its first target, as every trial needs)."
        )


def run_tune(args: TuneSettings) -> int:
    from .. import tune

    space = _read_space(args.space) if args.space else None  # None: the paper's
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    dataset, series, val_series = TASKS[args.task].tune_data(args)
    storage = args.storage or str(output / JOURNAL_NAME)
    name = args.study_name or tune.default_study_name(args.task, dataset, args.horizon, args.mask_rate)
    print(f"study {name!r} in {storage} ({args.trials} trials in all workers)", flush=True)
    start = time.perf_counter()
    what = dict(val_series=val_series, dataset=args.dataset, space=space, fixed=fixed_settings(args))
    what.update(
        output_chunk_length=args.horizon, look_backs=args.look_backs, mask_rate=args.mask_rate, random_state=args.seed
    )
    what["patience"] = args.patience
    how = dict(n_trials=args.trials, timeout=args.timeout, storage=storage, study_name=name)
    how.update(accelerator=args.accelerator, devices=args.devices, show_progress_bar=not args.no_progress)
    study = tune.search(series, args.task, **what, **how)
    result = {
        **tune.summary(study),
        "storage": storage,
        "seconds_this_worker": round(time.perf_counter() - start, 1),
        "finished_at": timestamp(),
        "command": args.command_line,
        **run_fields(args.accelerator),
    }
    path = output / f"tune_{file_name(name)}.json"
    text = json.dumps(result, indent=2, default=str) + "\n"
    write_atomically(path, lambda partial: partial.write_text(text))
    states = ", ".join(f"{count} {state}" for state, count in result["trials"].items() if count)
    print(f"trials: {states}")
    if result["best_params"] is None:
        print(f"no completed trial yet; wrote {path}")
        return 1
    print(f"best validation MSE {result['best_value']:.5f} (trial {result['best_trial']}): {result['best_params']}")
    print(f"wrote {path}")
    return 0
