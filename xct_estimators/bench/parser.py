"""The ``xct-bench`` command line: its subcommands and options, parsed into typed settings.

The options of a command that trains are the fields of its settings class (:mod:`.settings`);
the three task commands come from the task registry (:mod:`.tasks`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import paper
from .catalog import DATA_DIR_ENV
from .option_types import csv_of, markdown_page
from .settings import DEFAULT_OUTPUT, ExplainSettings, TuneSettings, default, options
from .tasks import TASKS

EPILOG = f"""\
examples:
  xct-bench                                   main job: synthetic data, horizon 96, XCTFormer vs Darts baselines
  xct-bench forecast --full                   the paper's setting: horizons 96-720, the presets' epochs
  xct-bench forecast --dataset ETTh1,ETTh2 --full --models xctformer
  xct-bench impute --dataset ETTh1
  xct-bench impute --dataset ETTh1 --epochs 6 --train-stride 8 --batch-size 8 --learning-rate 1e-3   (a CPU run)
  xct-bench detect --dataset MSL --data-dir DATA
  xct-bench detect --dataset MSL --models xctformer,window_mean,darts_kmeans --protocol tslib,point \\
      --arch d_model=64,d_ff=128,e_layers=1,n_heads=1 --train-stride 20 --epochs 5   (a CPU run)
  xct-bench explain --dataset ETTm1 --horizons 96 --epochs 10   dependency map of a trained model
  xct-bench tune --task forecast --dataset ETTh1 --trials 50   the paper's Optuna search (journal file in --output)
  xct-bench profile
  xct-bench report --output xct-bench-results

Results go to --output (default ./{DEFAULT_OUTPUT}): results.jsonl (one line per finished run,
written at once), report.md and PNG plots. Rerun with --resume to skip finished runs.
Data: --data-dir or ${DATA_DIR_ENV}; ETT files are otherwise downloaded by Darts.
"""


def _shown(spec) -> str:
    """An option's default as its help states it."""
    if spec.metadata["shown"] is not None:
        return spec.metadata["shown"]
    value = default(spec)
    if isinstance(value, bool):
        return "on" if value else "off"
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _add_settings_options(parser: argparse.ArgumentParser, settings_cls, choices: dict) -> None:
    """One option per option field of ``settings_cls``; the parsed values are its fields.
    ``choices``: field name -> the choices the command line knows and the settings do not."""
    for spec in options(settings_cls):
        meta = spec.metadata
        flag = "--" + spec.name.replace("_", "-")
        text = f"{meta['help']} (default: {_shown(spec)})".replace("%", "%%")
        if spec.type in (bool, "bool"):
            parser.add_argument(flag, action="store_true", help=text)
            continue
        allowed = choices.get(spec.name, meta["choices"])
        parser.add_argument(flag, type=meta["type"], choices=allowed, default=default(spec), help=text)
    parser.set_defaults(settings_cls=settings_cls)


def _add_command(sub, name: str, settings_cls, help: str, description: str, models=None, choices=None) -> None:
    extra = {}
    if models is not None:
        extra = dict(
            epilog="models:\n" + "\n".join(f"  {model:17} {text}" for model, text in models.items()),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    parser = sub.add_parser(name, help=help, description=description, **extra)
    _add_settings_options(parser, settings_cls, choices or {})


def _add_explain_and_tune(sub) -> None:
    _add_command(
        sub,
        "explain",
        ExplainSettings,
        "train (or load from OUTPUT/models) a forecasting model and draw its dependency map",
        "The learned CRAB mask as a token x token grid and a channel x channel heatmap "
        "(dependency_<dataset>_<horizon>.png), with the channel-pair and patch-lag summaries as CSV.",
    )
    _add_command(
        sub,
        "tune",
        TuneSettings,
        "the paper's Optuna hyperparameter search on a dataset's validation split",
        "Search the paper's space (App. B) with Optuna: each trial trains on the training split, its "
        "value is the lowest validation MSE of its epochs, bad trials are pruned. Several processes (or machines) "
        "given the same --storage and study name share one study. Needs: pip install 'xct-estimators[tune]'.",
        choices={"task": tuple(TASKS)},
    )


def _add_profile(sub) -> None:
    parser = sub.add_parser("profile", help="trainable parameters and FLOPs per preset vs the paper's Tables 14-15")
    parser.add_argument(
        "--dataset",
        type=csv_of(tuple(paper.PROFILE)),
        help=f"comma-separated presets: {', '.join(paper.PROFILE)} (default: all)",
    )


def _add_report(sub) -> None:
    parser = sub.add_parser(
        "report",
        help="print the table and redraw the plots of a results folder, or write a results page",
        description="Without --markdown: the tables of --output again (report.md and the plots). With --markdown "
        "PAGE FOLDER...: one Markdown page from the records of every FOLDER (docs/results.md is made so).",
    )
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="results folder (default: %(default)s)")
    parser.add_argument(
        "--markdown",
        type=markdown_page,
        metavar="PAGE",
        help="write the results page of FOLDER... here (default: none, the tables of --output)",
    )
    parser.add_argument("folders", nargs="*", type=Path, metavar="FOLDER", help="with --markdown: record folders")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xct-bench",
        description="Run the XCTFormer paper's benchmarks through Darts and compare with Darts baselines "
        "and with the paper's published numbers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command")
    for task in TASKS.values():
        _add_command(sub, task.name, task.settings, task.command_help, task.description, task.models)
    for add in (_add_explain_and_tune, _add_profile, _add_report):
        add(sub)
    return parser


def settings_from(args: argparse.Namespace):
    """The typed settings of a parsed training command: nothing below the command line sees ``args``."""
    cls = args.settings_cls
    return cls(**{name: getattr(args, name) for name in cls.__dataclass_fields__ if hasattr(args, name)})
