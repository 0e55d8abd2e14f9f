"""The ``xct-bench`` command line: its subcommands and options, parsed into typed settings."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..nn.presets import IMPUTATION_MASK_RATES, PAPER_SEEDS
from . import paper
from .catalog import (
    ANOMALY_DATASETS,
    BACKENDS,
    COVARIATE_MODES,
    DATA_DIR_ENV,
    DEFAULT_DETECTION_MODELS,
    DEFAULT_IMPUTATION_MODELS,
    DEFAULT_MODELS,
    DETECTION_MODELS,
    DETECTION_PROTOCOLS,
    FORECAST_DATASETS,
    IMPUTATION_MODELS,
    MODELS,
)
from .catalog import IMPUTATION_PROTOCOLS as PROTOCOLS
from .option_types import (
    arch,
    csv,
    csv_ints,
    csv_of,
    csv_positive_ints,
    devices,
    mask_rate,
    mask_rates,
    positive_float,
    positive_int,
)
from .settings import (
    DEFAULT_OUTPUT,
    EXPLAIN_EPOCHS,
    PRECISIONS,
    STABLE_PEAK_SHARE,
    BackendSettings,
    CommonSettings,
    ComputeSettings,
    DetectSettings,
    ExplainSettings,
    ForecastSettings,
    ImputeSettings,
    TrainingSettings,
    TuneSettings,
    default,
)
from .tasks import TASKS

EPILOG = f"""\
examples:
  xct-bench                                   main job: synthetic data, horizon 96, XCTFormer vs Darts baselines
  xct-bench forecast --full                   the paper's setting: horizons 96-720, the presets' epochs
  xct-bench forecast --dataset ETTh1,ETTh2 --full --models xctformer
  xct-bench impute --dataset ETTh1
  xct-bench impute --dataset ETTh1 --epochs 6 --train-stride 8 --batch-size 8 --learning-rate 1e-3   (CPU, ~22 min)
  xct-bench detect --dataset MSL --data-dir DATA
  xct-bench detect --dataset MSL --models xctformer,window_mean,darts_kmeans --protocol tslib,point \
      --arch d_model=64,d_ff=128,e_layers=1,n_heads=1 --train-stride 20 --epochs 5   (CPU, ~22 min)
  xct-bench explain --dataset ETTm1 --horizons 96 --epochs 10   dependency map of a trained model
  xct-bench tune --task forecast --dataset ETTh1 --trials 50   the paper's Optuna search (journal file in --output)
  xct-bench profile
  xct-bench report --output xct-bench-results

Results go to --output (default ./{DEFAULT_OUTPUT}): results.jsonl (one line per finished run,
written at once), report.md and PNG plots. Rerun with --resume to skip finished runs.
Data: --data-dir or ${DATA_DIR_ENV}; ETT files are otherwise downloaded by Darts.
"""


def _add_common(parser: argparse.ArgumentParser, settings_cls) -> None:
    """The options of the settings groups ``settings_cls`` has (training, then common)."""
    if issubclass(settings_cls, TrainingSettings):
        _add_training(parser)
    _add_run(parser, settings_cls)
    if issubclass(settings_cls, ComputeSettings):
        _add_compute(parser)
    if issubclass(settings_cls, BackendSettings):
        _add_backend(parser)
    # an option without a default of its own takes its setting's default
    defaults = {name: default(settings_cls, name) for name in settings_cls.__dataclass_fields__}
    parser.set_defaults(
        settings_cls=settings_cls, **{k: v for k, v in defaults.items() if parser.get_default(k) is None}
    )


def _add_training(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--train-stride",
        type=positive_int,
        help="step between training windows; >1 trains on fewer windows (default: 1, the paper)",
    )
    parser.add_argument("--batch-size", type=positive_int, help="training batch size (default: the preset's)")
    parser.add_argument(
        "--learning-rate",
        type=positive_float,
        help=f"peak learning rate (default: the preset's; impute: {STABLE_PEAK_SHARE:g} times it, "
        "see --paper-learning-rate)",
    )


def _add_run(parser: argparse.ArgumentParser, settings_cls) -> None:
    parser.add_argument("--data-dir", help=f"folder with the datasets (default: ${DATA_DIR_ENV})")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="results folder (default: %(default)s)")
    if settings_cls not in (TuneSettings, ExplainSettings):  # a study always continues; explain reuses its models
        parser.add_argument("--resume", action="store_true", help="skip runs already in OUTPUT/results.jsonl")
    parser.add_argument(
        "--seed", type=int, default=default(CommonSettings, "seed"), help="random seed (default: %(default)s)"
    )
    if settings_cls is not TuneSettings:  # a study has one seed
        parser.add_argument(
            "--seeds",
            type=csv_ints,
            help="comma-separated seeds, each a run of its own "
            f"(the paper: {','.join(map(str, PAPER_SEEDS))}); the report "
            "adds mean, standard deviation and coefficient of variation over them (default: one run, --seed)",
        )
    parser.add_argument(
        "--epochs",
        type=positive_int,
        help=f"training epochs (default: XCTFormer the preset's, the Darts baselines 10; explain: {EXPLAIN_EPOCHS})",
    )
    parser.add_argument(
        "--accelerator",
        choices=("auto", "cpu", "gpu"),
        help="Lightning accelerator for the models that train through Lightning (default: auto: a GPU if any)",
    )
    parser.add_argument(
        "--devices",
        type=devices,
        default="auto",
        help="Lightning devices: a count, -1 for all, or indices such as 0,1 (default: %(default)s)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the epoch progress bars")


def _add_compute(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--compile",
        action="store_true",
        help="compile XCTFormer's network with torch.compile (fast on a GPU with --precision bf16-mixed; "
        "part of each run's identity)",
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="Lightning's training precision for the models that train through Lightning (default: 32; "
        "part of each run's identity)",
    )
    parser.add_argument(
        "--exact-fp32",
        action="store_true",
        help="float32 matrix products in full float32 on the GPU (default: TF32 where the GPU has it; "
        "part of each run's identity)",
    )


def _add_backend(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help="local: runs one after another here (default); ray: every run a Ray task, in parallel "
        "(pip install 'xct-estimators[ray]')",
    )
    parser.add_argument(
        "--ray-address",
        help="with --backend ray: 'auto' or HOST:PORT joins a running cluster (default: start a local one)",
    )
    parser.add_argument(
        "--cpus-per-run",
        type=positive_float,
        help="with --backend ray: CPUs each run reserves (default: 1; with --accelerator gpu also one GPU)",
    )


def _add_forecast(sub) -> None:
    parser = sub.add_parser(
        "forecast",
        help="long-term forecasting (default command)",
        description="Train each model on the training split, forecast every test window with "
        "Darts' historical_forecasts, score with darts.metrics.",
    )
    parser.add_argument(
        "--dataset",
        type=csv(str),
        help=f"comma-separated: {', '.join(FORECAST_DATASETS)} or a CSV path "
        f"(default: {','.join(default(ForecastSettings, 'dataset'))})",
    )
    parser.add_argument(
        "--horizons",
        type=csv_positive_ints,
        help="comma-separated horizons (default: 96; with --full: 96,192,336,720)",
    )
    parser.add_argument(
        "--models",
        type=csv_of(tuple(MODELS)),
        default=list(DEFAULT_MODELS),
        help=f"comma-separated: {', '.join(MODELS)} (default: {','.join(DEFAULT_MODELS)})",
    )
    parser.add_argument(
        "--features",
        choices=("M", "MS"),
        help="M: every column a target; MS: last column the target, others past covariates "
        "(default: MS for synthetic, M otherwise)",
    )
    parser.add_argument(
        "--seq-len",
        type=positive_int,
        default=default(ForecastSettings, "seq_len"),
        help="look-back window (default: %(default)s)",
    )
    parser.add_argument("--full", action="store_true", help="the paper's four horizons, 96,192,336,720")
    parser.add_argument(
        "--covariates",
        type=csv_of(tuple(COVARIATE_MODES)),
        default=default(ForecastSettings, "covariates"),
        help="comma-separated, each a run of every model that takes future covariates: "
        + "; ".join(f"{name}: {text}" for name, text in COVARIATE_MODES.items())
        + " (default: none)",
    )
    _add_common(parser, ForecastSettings)


def _add_impute(sub) -> None:
    parser = sub.add_parser(
        "impute",
        help="imputation (input 1024, random point masks)",
        description="Train each model on the training split (validation split for early stopping), hide "
        "points of the test split at random, score MSE/MAE on the hidden points.",
        epilog="models:\n" + "\n".join(f"  {name:17} {text}" for name, text in IMPUTATION_MODELS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dataset",
        type=csv(str),
        help="comma-separated forecasting datasets or CSV paths "
        f"(default: {','.join(default(ImputeSettings, 'dataset'))})",
    )
    parser.add_argument(
        "--models",
        type=csv_of(tuple(IMPUTATION_MODELS)),
        default=list(DEFAULT_IMPUTATION_MODELS),
        help=f"comma-separated (default: {','.join(DEFAULT_IMPUTATION_MODELS)})",
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="tslib: every test window with a fresh mask, the paper's table (default); "
        "series: one mask over the test split, each point imputed once",
    )
    parser.add_argument(
        "--eval-stride",
        type=positive_int,
        help="tslib protocol: evaluate every S-th test window (default: 1, every window as the paper)",
    )
    parser.add_argument(
        "--mask-rates",
        type=mask_rates,
        default=list(IMPUTATION_MASK_RATES),
        help=f"comma-separated mask rates (default: {','.join(map(str, IMPUTATION_MASK_RATES))})",
    )
    parser.add_argument(
        "--paper-learning-rate",
        action="store_true",
        help="train XCTFormer at the preset's peak learning rate, the paper's recipe (default: "
        f"{STABLE_PEAK_SHARE:g} times it, which does not diverge at the one-cycle peak)",
    )
    _add_common(parser, ImputeSettings)


def _add_detect(sub) -> None:
    parser = sub.add_parser(
        "detect",
        help="anomaly detection (window length 100, the paper's threshold rule)",
        description="Train each model on the training array, score the test array, threshold at the "
        "(100 - anomaly ratio) percentile of train and test energies; F1 with and without point "
        "adjustment, AUC-PR, AUC-ROC.",
        epilog="models:\n" + "\n".join(f"  {name:14} {text}" for name, text in DETECTION_MODELS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dataset",
        type=csv_of(ANOMALY_DATASETS),
        help=f"comma-separated: {', '.join(ANOMALY_DATASETS)} "
        f"(default: {','.join(default(DetectSettings, 'dataset'))})",
    )
    parser.add_argument(
        "--models",
        type=csv_of(tuple(DETECTION_MODELS)),
        default=list(DEFAULT_DETECTION_MODELS),
        help=f"comma-separated (default: {','.join(DEFAULT_DETECTION_MODELS)})",
    )
    parser.add_argument(
        "--protocol",
        type=csv_of(DETECTION_PROTOCOLS),
        help="comma-separated; tslib: every stride-1 window's energies, the paper's table (default); "
        "point: one score per point from averaged windows, what the scorer and detector give",
    )
    parser.add_argument(
        "--arch",
        type=arch,
        help="override the preset's network, e.g. d_model=64,d_ff=128,e_layers=1,n_heads=1 (CPU runs; default: "
        "the preset's)",
    )
    _add_common(parser, DetectSettings)


def _add_explain(sub) -> None:
    parser = sub.add_parser(
        "explain",
        help="train (or load from OUTPUT/models) a forecasting model and draw its dependency map",
        description="The learned CRAB mask as a token x token grid and a channel x channel heatmap "
        "(dependency_<dataset>_<horizon>.png), with the channel-pair and patch-lag summaries as CSV.",
    )
    parser.add_argument(
        "--dataset",
        type=csv(str),
        help=f"comma-separated forecasting datasets (default: {','.join(default(ExplainSettings, 'dataset'))})",
    )
    parser.add_argument("--horizons", type=csv_positive_ints, help="comma-separated (default: 96)")
    parser.add_argument(
        "--features", choices=("M", "MS"), help="as for forecast (default: MS for synthetic, M otherwise)"
    )
    parser.add_argument(
        "--seq-len",
        type=positive_int,
        default=default(ExplainSettings, "seq_len"),
        help="look-back window (default: %(default)s)",
    )
    _add_common(parser, ExplainSettings)


def _add_tune(sub) -> None:
    parser = sub.add_parser(
        "tune",
        help="the paper's Optuna hyperparameter search on a dataset's validation split",
        description="Search the paper's space (App. B) with Optuna: each trial trains on the training split, its "
        "value is the lowest validation MSE of its epochs, bad trials are pruned. Several processes (or machines) "
        "given the same --storage and study name share one study. Needs: pip install 'xct-estimators[tune]'.",
    )
    parser.add_argument(
        "--task",
        choices=tuple(TASKS),
        help=f"whose search space and training to tune (default: {default(TuneSettings, 'task')})",
    )
    parser.add_argument(
        "--dataset", default=default(TuneSettings, "dataset"), help="one dataset (default: %(default)s)"
    )
    parser.add_argument(
        "--trials",
        type=positive_int,
        help=f"trials in the study, all workers together (default: {default(TuneSettings, 'trials')})",
    )
    parser.add_argument("--timeout", type=positive_float, help="stop this worker after S seconds (default: no limit)")
    parser.add_argument(
        "--horizon",
        type=positive_int,
        default=default(TuneSettings, "horizon"),
        help="forecast: horizon (default: %(default)s)",
    )
    parser.add_argument(
        "--mask-rate",
        type=mask_rate,
        default=default(TuneSettings, "mask_rate"),
        help="impute: mask rate (default: %(default)s)",
    )
    parser.add_argument(
        "--storage",
        help="Optuna RDB URL (sqlite:///..., postgresql://...) or journal file path (default: OUTPUT/optuna.journal)",
    )
    parser.add_argument("--study-name", help="study to create or join (default: task-dataset-horizon)")
    parser.add_argument("--space", help="JSON file with a search space (default: the paper's)")
    parser.add_argument(
        "--arch", type=arch, help="fix network settings for every trial, e.g. e_layers=1,n_heads=1 (default: searched)"
    )
    _add_common(parser, TuneSettings)


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
    parser.add_argument("--markdown", type=Path, metavar="PAGE", help="write the results page of FOLDER... here")
    parser.add_argument("folders", nargs="*", type=Path, metavar="FOLDER", help="with --markdown: record folders")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xct-bench",
        description="Run the XCTFormer paper's benchmarks through Darts and compare with Darts baselines "
        "and with the paper's published numbers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="{forecast,impute,detect,explain,tune,profile,report}")
    for add in (_add_forecast, _add_impute, _add_detect, _add_explain, _add_tune, _add_profile, _add_report):
        add(sub)
    return parser


def settings_from(args: argparse.Namespace):
    """The typed settings of a parsed training command: nothing below the command line sees ``args``."""
    cls = args.settings_cls
    return cls(**{name: getattr(args, name) for name in cls.__dataclass_fields__ if hasattr(args, name)})
