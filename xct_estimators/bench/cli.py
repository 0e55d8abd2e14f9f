"""The ``xct-bench`` command: the paper's benchmarks through Darts, against Darts baselines.

Run with no arguments for the main job (the synthetic dataset, a few minutes on a CPU).
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path
from typing import Optional

from .parser import build_parser, settings_from
from .provenance import command_line
from .runs import (
    BenchInterrupted,
    check_backend_options,
    check_compute,
    interrupted_message,
    interrupts_raise,
    locked_output,
    stop_children,
)
from .settings import DEFAULT_OUTPUT, ExplainSettings, TuneSettings
from .tasks import TASKS


def quiet_libraries() -> None:
    """Keep the terminal for progress bars and results: drop Lightning's banner lines and the
    warnings that do not apply to a benchmark run."""
    import pytorch_lightning  # noqa: F401  (it sets its loggers to INFO when imported)

    for name in ("lightning.pytorch", "pytorch_lightning", "lightning_fabric", "darts"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # Darts warns about every precision with "16" in it, bf16-mixed (which it recommends) too.
    darts_training = logging.getLogger("darts.models.forecasting.torch_forecasting_model")
    darts_training.addFilter(lambda record: "float16-like precision" not in record.getMessage())
    for message in (
        ".*pin_memory.*",
        ".*does not have many workers.*",
        ".*overridden `transfer_batch_to_device`.*",
        ".*LeafSpec.*",
        ".*litlogger.*",
        ".*Total length of .* across ranks is zero.*",
    ):
        warnings.filterwarnings("ignore", message=message)


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    command = command_line(["xct-bench", *argv])
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["forecast", *argv]  # the main job; its options may be given without the subcommand
    args = parser.parse_args(argv)
    output = Path(getattr(args, "output", DEFAULT_OUTPUT))
    try:
        if args.command == "profile":
            from .profile import print_profile

            return print_profile(args.dataset)
        if args.command == "report":
            if args.markdown is not None:
                from .results_page import write_results_page

                page = write_results_page(args.markdown, args.folders or [output])
                print(f"Wrote {page}")
                return 0
            if args.folders:
                parser.error("FOLDER arguments need --markdown PAGE (without it, report reads --output)")
            if not output.is_dir():
                what = "is a file, not a results folder" if output.exists() else "does not exist"
                parser.error(f"--output {output} {what}: give the folder an xct-bench run wrote (its --output)")
            return print_report(output)
        settings = settings_from(args).replace(command_line=command)
        check_backend_options(settings)  # what the options alone refuse answers in a second, before torch
        if args.command == "tune":
            from .tune import check_tune_options

            check_tune_options(settings)
        quiet_libraries()  # here, not before: --help, argument errors and reports answer without Lightning
        check_compute(settings)
        if args.command == "tune":  # Optuna's storage coordinates workers: no output lock
            return _tune(settings)
        with interrupts_raise(), locked_output(output):
            if args.command == "explain":
                return _explain(settings)
            return _run_jobs(args.command, settings)
    except (BenchInterrupted, KeyboardInterrupt) as stop:
        stop_children()
        print(interrupted_message(output), file=sys.stderr)
        return getattr(stop, "exit_code", 130)
    except (ValueError, FileNotFoundError, ImportError) as error:
        print(f"xct-bench: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a full disk, a folder without write permission: finished runs are kept
        print(f"xct-bench: error: {error}{interrupted_message(output)}", file=sys.stderr)
        return 1


def print_report(output) -> int:
    from .report import print_report as write_and_print  # numpy and the report only when a report is made

    return write_and_print(output)


def _run_jobs(command: str, settings) -> int:
    """Every seed's runs of ``forecast`` / ``impute`` / ``detect``, planned here, executed on the backend."""
    from .backends import execute, make_backend
    from .results import ResultStore

    backend = make_backend(settings)
    store = ResultStore(settings.output)
    finished = store.finished() if settings.resume else set()
    progress = not settings.no_progress
    inner_bars = progress and backend.name == "local"  # Ray workers' bars would interleave
    jobs = [job for one in settings.per_seed() for job in TASKS[command].plan(one, finished, inner_bars)]
    code = execute(jobs, store, backend, progress)
    print_report(settings.output)
    return code


def _explain(settings: ExplainSettings) -> int:
    from .explain import run_explain

    if not settings.seeds:
        return run_explain(settings)
    for one in settings.per_seed():
        run_explain(one)
    return print_report(settings.output)


def _tune(settings: TuneSettings) -> int:
    from .tune import run_tune

    try:
        with interrupts_raise():
            return run_tune(settings)
    except (BenchInterrupted, KeyboardInterrupt) as stop:
        stop_children()
        print(
            "Interrupted. Finished trials are kept in the study's storage; rerun the same command to continue it.",
            file=sys.stderr,
        )
        return getattr(stop, "exit_code", 130)


def entry_point() -> None:  # console script
    sys.exit(main())
