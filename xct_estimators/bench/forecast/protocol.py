"""``xct-bench forecast``: the paper's forecasting protocol through Darts (docs/benchmarks.md,
Protocol), and the models it compares: XCTFormer with the dataset's preset, its ablations, Darts'
baselines (:data:`~.catalog.BASELINE_SETTINGS`) and neuralforecast's in Darts' ``NeuralForecastModel``."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from darts import TimeSeries
from darts.dataprocessing.transformers import Scaler
from darts.metrics import mae, mse
from sklearn.preprocessing import StandardScaler

from ... import training
from ..._devices import is_distributed, single_device
from ..._optional import optional_import
from ...nn.presets import TASK_SEQ_LEN, get_preset, searched_datasets, searched_horizon, searched_preset
from .. import paper
from ..catalog import BASELINE_SETTINGS, COVARIATE_SUITE, MODELS, NAIVE, NEURALFORECAST_SETTINGS, SEARCHED_MODEL
from ..covariate_suite import make_family, noise_floor
from ..datasets import ForecastDataset
from ..models import ABLATION_MODELS, ABLATIONS, preset_name, timed_fit, without_later_defaults
from ..provenance import run_fields, timestamp
from ..results import identity
from ..runs import plain_settings
from ..splits import split_borders
from .record import ForecastRecord
from .settings import ForecastSettings

TASK = ForecastRecord.TASK
FEATURES = ("M", "MS")

PAPER_BATCH_SIZE = 32


def trainer_kwargs(
    accelerator: str = "auto", devices="auto", progress: bool = True, callbacks=(), precision: str = "32"
) -> dict:
    more = {"precision": precision} if precision != "32" else {}
    where = dict(accelerator=accelerator, devices=devices, enable_progress_bar=progress, callbacks=list(callbacks))
    return training.trainer_kwargs(where, more)


def is_xctformer(name: str) -> bool:
    """Whether model ``name`` is XCTFormer (a recipe or an ablation of it): what ``--compile`` applies to."""
    return name in ("xctformer", SEARCHED_MODEL) or name in ABLATION_MODELS


def input_length(name: str, dataset: str, horizon: int, seq_len: int) -> int:
    """The look-back model ``name`` reads: the searched recipe's own, else ``--seq-len``."""
    return searched_preset(_searched_dataset(dataset), horizon).seq_len if name == SEARCHED_MODEL else seq_len


def _searched_dataset(dataset: str) -> str:
    """``dataset`` if it has a searched recipe of its own: one searched on other data would credit
    that data's search to this one (no preset stand-in as for the paper's recipe)."""
    have = searched_datasets()
    if dataset not in have:
        raise ValueError(
            f"--models {SEARCHED_MODEL}: {dataset} has no searched recipe of its own (recorded: "
            f"{', '.join(have) or 'none yet'}). Use --models xctformer, or search one with xct-bench tune --look-backs."
        )
    return dataset


def build_model(
    name: str,
    dataset: str,
    horizon: int,
    seq_len: int = 96,
    epochs: Optional[int] = None,
    seed: int = 0,
    accelerator: str = "auto",
    devices="auto",
    progress: bool = True,
    work_dir: Optional[Path] = None,
    compile: bool = False,
    precision: str = "32",
    fused_attention: bool = True,
):
    """A fresh, unfitted Darts model ``name`` for one (dataset, horizon) run; ``compile`` and
    ``fused_attention`` apply to XCTFormer, ``precision`` (Lightning's) to every model."""
    from ...forecasting import KeepBestValidationWeights, XCTFormerModel

    common: dict[str, Any] = {"random_state": seed, "model_name": f"{name}_{dataset}_{horizon}_{seed}"}
    if work_dir is not None:
        common["work_dir"] = str(work_dir)
    if is_xctformer(name):
        searched = name == SEARCHED_MODEL
        preset = (
            searched_preset(_searched_dataset(dataset), horizon) if searched else get_preset(preset_name(dataset), TASK)
        )
        switches = ABLATIONS[ABLATION_MODELS[name]] if name in ABLATION_MODELS else {}
        trainer = trainer_kwargs(accelerator, devices, progress, precision=precision)
        run = dict(output_chunk_length=horizon, input_chunk_length=seq_len, n_epochs=epochs or preset.epochs)
        run.update(compile=compile, fused_attention=fused_attention, recipe="searched" if searched else "paper")
        return XCTFormerModel.from_preset(preset.dataset, **run, pl_trainer_kwargs=trainer, **switches, **common)
    if name == NAIVE:
        from darts.models import GlobalNaiveSeasonal

        trainer = trainer_kwargs(accelerator, devices, progress, precision=precision)
        return GlobalNaiveSeasonal(
            input_chunk_length=1, output_chunk_length=horizon, pl_trainer_kwargs=trainer, **common
        )
    shared = dict(input_chunk_length=seq_len, output_chunk_length=horizon, batch_size=PAPER_BATCH_SIZE, **common)
    shared.update(n_epochs=epochs or 10, loss_fn=torch.nn.MSELoss())
    best = [KeepBestValidationWeights()]
    shared["pl_trainer_kwargs"] = trainer_kwargs(accelerator, devices, progress, best, precision=precision)
    if name in BASELINE_SETTINGS:
        import darts.models as darts_models

        class_name, settings = BASELINE_SETTINGS[name]
        settings = dict(settings)
        lr = settings.pop("lr")
        return getattr(darts_models, class_name)(**shared, **settings, optimizer_kwargs={"lr": lr})
    if name in NEURALFORECAST_SETTINGS:
        optional_import("neuralforecast", extra="baselines", purpose=f"Model {name!r}")
        from darts.models import NeuralForecastModel

        nf_class, model_kwargs, lr = NEURALFORECAST_SETTINGS[name]
        return NeuralForecastModel(
            model=nf_class, model_kwargs=dict(model_kwargs), **shared, optimizer_kwargs={"lr": lr}
        )
    raise ValueError(f"Unknown model {name!r}; choose from {', '.join(MODELS)}.")


@dataclass
class PreparedSeries:
    """Standardised splits: targets, (MS setting only) past covariates, and (``--covariates``)
    future covariates over the same rows; for a panel, each a list with one series per member."""

    dataset: str
    features: str
    seq_len: int
    train: TimeSeries
    val: TimeSeries
    test: TimeSeries
    train_covariates: Optional[TimeSeries]
    val_covariates: Optional[TimeSeries]
    test_covariates: Optional[TimeSeries]
    future: tuple[Optional[TimeSeries], ...] = (None, None, None)  # train, val, test

    def joint(self) -> PreparedSeries:
        """MS data for a model without past covariates: every column becomes a target (covariates
        first, the target last, as in the Time-Series-Library files); only the target is scored."""
        if self.test_covariates is None:
            return self
        covariates = (self.train_covariates, self.val_covariates, self.test_covariates)
        stack = [c.stack(target) for c, target in zip(covariates, (self.train, self.val, self.test), strict=True)]
        return PreparedSeries(self.dataset, "M", self.seq_len, *stack, None, None, None, self.future)

    @property
    def test_members(self) -> list[TimeSeries]:
        return self.test if isinstance(self.test, list) else [self.test]

    @staticmethod
    def panel(members: list[PreparedSeries]) -> PreparedSeries:
        """One prepared panel from its members' (each prepared on its own, as Darts fits a list)."""
        if len(members) == 1:
            return members[0]
        first = members[0]
        fields = ("train", "val", "test", "train_covariates", "val_covariates", "test_covariates")
        parts = [None if getattr(first, f) is None else [getattr(m, f) for m in members] for f in fields]
        future = tuple(None if part is None else [m.future[i] for m in members] for i, part in enumerate(first.future))
        return PreparedSeries(first.dataset, first.features, first.seq_len, *parts, future)


def calendar(series: TimeSeries) -> TimeSeries:
    """Hour of day and day of week of ``series``' timestamps, each scaled to [-0.5, 0.5]."""
    if not series.has_datetime_index:
        raise ValueError("--covariates calendar needs timestamps: the dataset has a plain range index.")
    index = series.time_index
    values = np.stack([index.hour / 23.0 - 0.5, index.dayofweek / 6.0 - 0.5], axis=1).astype(np.float32)
    return TimeSeries.from_times_and_values(index, values, columns=["hour", "dayofweek"])


def future_covariates(data: ForecastDataset, prepared: PreparedSeries, mode: str, scaled: TimeSeries) -> tuple:
    """The (train, val, test) future covariates of ``mode`` over the prepared splits' rows."""
    if mode in ("none", "static") or (mode == "all" and not data.future_columns):
        return (None, None, None)
    if mode in ("future", "all"):
        if not data.future_columns:
            raise ValueError(
                f"--covariates future: {data.name} has no known-future columns (control has: plan). Use "
                "--covariates none or calendar."
            )
        known = scaled[list(data.future_columns)]
    else:
        known = calendar(scaled)
    return tuple(known.slice_intersect(part) for part in (prepared.train, prepared.val, prepared.test))


def prepare(data: ForecastDataset, seq_len: int = 96, features: str = "M", covariates: str = "none") -> PreparedSeries:
    """Split and standardise ``data``. ``features``: "M" (every column a target) or "MS" (one target,
    the other columns past covariates); a dataset's known-future columns are never targets, and
    ``covariates`` (:data:`~.catalog.COVARIATE_MODES`) says which covariates go with it. A panel's
    series are split and standardised each on its own."""
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {features!r}.")
    if covariates == "static" and data.members[0].static_covariates is None:
        raise ValueError(
            f"--covariates static: {data.name} has no static covariates (sites has: size). Use --covariates none."
        )
    if covariates == "all" and not data.future_columns and data.members[0].static_covariates is None:
        raise ValueError(
            f"--covariates all: {data.name} has neither known-future columns nor static covariates. Use "
            "--covariates none or calendar."
        )
    if features == "MS" and len(data.members) > 1:
        raise ValueError(f"--features MS: {data.name} is a panel of one-target series; use --features M.")
    members = [_prepare_series(data, series, seq_len, features, covariates) for series in data.members]
    return PreparedSeries.panel(members)


def _prepare_series(data: ForecastDataset, series: TimeSeries, seq_len: int, features: str, covariates: str):
    if covariates not in ("static", "all"):  # the models that read static covariates would, unasked
        series = series.with_static_covariates(None)
    if features == "MS" and data.target not in series.components:
        raise ValueError(
            f"--features MS: {data.name} has no column {data.target!r}, the target MS forecasts from the other "
            f"columns. Name the target column {data.target!r} (the Time-Series-Library convention) or use --features M."
        )
    splits = split_borders(len(series), data.split_kind, seq_len)
    scaler = Scaler(StandardScaler())
    scaler.fit(series[splits.train[0] : splits.train[1]])
    scaled = scaler.transform(series).astype(np.float32)
    observed = [c for c in scaled.components if c not in data.future_columns]
    parts = [scaled[observed][start:stop] for start, stop in (splits.train, splits.val, splits.test)]
    if features == "M":
        prepared = PreparedSeries(data.name, features, seq_len, *parts, None, None, None)
    else:
        others = [c for c in observed if c != data.target]
        targets = [part[data.target] for part in parts]
        prepared = PreparedSeries(data.name, features, seq_len, *targets, *[part[others] for part in parts])
    return dataclasses.replace(prepared, future=future_covariates(data, prepared, covariates, scaled))


def fit_model(model, data: PreparedSeries) -> float:
    """Fit on the training split with the validation split; returns the wall time in seconds (the
    one-time kernel build excluded, :func:`~xct_estimators.bench.models.timed_fit`)."""
    kwargs = {}
    if data.train_covariates is not None:
        kwargs = {"past_covariates": data.train_covariates, "val_past_covariates": data.val_covariates}
    if data.future[0] is not None:
        kwargs.update(future_covariates=data.future[0], val_future_covariates=data.future[1])
    from ...forecasting import XCTFormerModel

    fit = lambda: model.fit(data.train, val_series=data.val, verbose=None, **kwargs)  # noqa: E731
    return timed_fit(fit, isinstance(model, XCTFormerModel))


def forecast_test_split(model, data: PreparedSeries, horizon: int) -> list[TimeSeries]:
    """One forecast of ``horizon`` steps for every stride-1 window of the test split."""
    kwargs = {} if data.test_covariates is None else {"past_covariates": data.test_covariates}
    if data.future[2] is not None:
        kwargs["future_covariates"] = data.future[2]
    windows = dict(start=data.seq_len, start_format="position", forecast_horizon=horizon, stride=1, overlap_end=False)
    return model.historical_forecasts(
        data.test, **windows, retrain=False, last_points_only=False, verbose=False, **kwargs
    )


def score(model, data: PreparedSeries, forecasts: list[TimeSeries]) -> dict[str, float]:
    """MSE and MAE of ``forecasts`` through ``backtest`` and ``darts.metrics``."""
    values = model.backtest(
        data.test, historical_forecasts=forecasts, metric=[mse, mae], reduction=np.mean, last_points_only=False
    )
    if isinstance(data.test, list):  # per member; every member has as many test windows
        values = np.mean(values, axis=0)
    return {"mse": float(values[0]), "mae": float(values[1])}


def expected_windows(test_len: int, seq_len: int, horizon: int) -> int:
    """Number of stride-1 test windows (the Time-Series-Library count, no dropped last batch)."""
    return test_len - seq_len - horizon + 1


def check_split_lengths(data: PreparedSeries, horizon: int, where: str = "") -> None:
    """Every split must hold one window of look-back + horizon: each model trains, validates and is
    tested on such windows."""
    for split, parts in (("training", data.train), ("validation", data.val), ("test", data.test)):
        series = min(parts, key=len) if isinstance(parts, list) else parts
        if expected_windows(len(series), data.seq_len, horizon) < 1:
            raise ValueError(
                f"{where or data.dataset}: the {split} split has {len(series)} rows, fewer than look-back "
                f"{data.seq_len} + horizon {horizon}. Use shorter --horizons or --seq-len, or a longer series."
            )


def run_forecast(model, data: PreparedSeries, horizon: int) -> tuple[dict, dict]:
    """Fit, forecast the test split, score. Returns the result fields and one example window.

    In the MS setting a model that takes no past covariates is trained on all columns as targets
    and scored on the target column only (the field ``ms_mode`` says which way was used).
    """
    check_split_lengths(data, horizon)
    extra = {}
    trained_on = data
    if data.test_covariates is not None and not model.supports_past_covariates:
        trained_on, extra = data.joint(), {"ms_mode": "all columns as targets, target scored"}
    fit_seconds = fit_model(model, trained_on)
    if is_distributed(getattr(model, "trainer_params", {})):  # a data-parallel predict scores one rank's share
        model.trainer_params = single_device(model.trainer_params)
    start = time.perf_counter()
    forecasts = forecast_test_split(model, trained_on, horizon)
    if trained_on is not data:
        target = data.test.components[0]
        forecasts = [forecast[target] for forecast in forecasts]
    scores = score(model, data, forecasts)
    eval_seconds = time.perf_counter() - start
    members = data.test_members
    n_windows = sum(expected_windows(len(test), data.seq_len, horizon) for test in members)
    produced = sum(map(len, forecasts)) if len(members) > 1 else len(forecasts)
    if produced != n_windows:
        raise RuntimeError(f"Expected {n_windows} test windows, Darts produced {produced}.")
    example = _example(members[0], data.seq_len, forecasts[0][0] if len(members) > 1 else forecasts[0])
    fields = {**scores, "n_windows": n_windows, "fit_seconds": fit_seconds, "eval_seconds": eval_seconds, **extra}
    return fields, example


def _example(test: TimeSeries, seq_len: int, forecast: TimeSeries) -> dict:
    """The first test window's last target channel: input, truth and forecast, for the plot."""
    channel = -1
    history = test[:seq_len].values(copy=False)[:, channel]
    truth = test[seq_len : seq_len + len(forecast)].values(copy=False)[:, channel]
    predicted = forecast.values(copy=False)[:, channel].tolist()
    return {
        "channel": str(test.components[channel]),
        "history": history.tolist(),
        "truth": truth.tolist(),
        "forecast": predicted,
    }


#: Darts model arguments that do not change a run's numbers, or are recorded apart (the seed; the
#: precision and compile switches, which :meth:`ComputeSettings.identity` adds).
_NOT_SETTINGS = (
    "pl_trainer_kwargs",
    "model_name",
    "work_dir",
    "random_state",
    "log_tensorboard",
    "force_reset",
    "compile",
)


def model_settings(model) -> dict:
    """The Darts model's constructor arguments that decide its numbers, JSON-stable."""
    from ...forecasting import XCTFormerModel

    # XCTFormer's use_static_covariates came later than its records; the benchmark's series carry
    # no static covariates, so it decides nothing and stays out of the runs' identity.
    extra = ("use_static_covariates",) if isinstance(model, XCTFormerModel) else ()
    return plain_settings(without_later_defaults(model.model_params), skip=(*_NOT_SETTINGS, *extra))


def _forecast_work(build: dict, data: PreparedSeries, horizon: int, record: dict, accelerator: str):
    """One run, wherever it executes: build the model, fit, forecast the test split, score."""
    model = build_model(**build)
    fields, example = run_forecast(model, data, horizon)
    record = {**record, **fields, "accelerator": accelerator, "finished_at": timestamp()}
    record.update(run_fields(accelerator))
    return [(ForecastRecord.from_json(record), example)]


def _summary(record: ForecastRecord) -> str:
    floor = "" if record.noise_floor is None else f", noise floor {record.noise_floor:.4f}"
    return (
        f"{record.dataset} H={record.horizon} {record.model}: MSE {record.mse:.4f} MAE {record.mae:.4f} "
        f"(fit {record.fit_seconds:.0f} s{floor})"
    )


def _statics(train) -> bool:
    """Whether the training series (a panel's first) carry static covariates."""
    return (train[0] if isinstance(train, list) else train).static_covariates is not None


def forecast_jobs(settings: ForecastSettings, finished: set, progress: bool = True) -> list:
    """``xct-bench forecast``'s runs for ``settings.seed`` that are not in ``finished``, as jobs."""
    from functools import partial

    from ..backends import Job
    from ..datasets import dataset_fingerprint, load_forecast_dataset
    from ..forecast_plots import save_example
    from ..splits import check_rows

    horizons = settings.horizons or (list(paper.HORIZONS) if settings.full else [96])
    output = Path(settings.output)
    datasets, fingerprints = {}, {}
    for dataset in settings.dataset:  # every dataset is read (and checked) before anything trains
        fingerprints[dataset] = dataset_fingerprint(dataset, settings.data_dir)
        data = load_forecast_dataset(dataset, settings.data_dir, seed=settings.seed)
        lengths = {(h, input_length(m, dataset, h, settings.seq_len)) for h in horizons for m in settings.models}
        for horizon, length in sorted(lengths):  # every split holds a window, before anything trains
            check_rows(data.n_rows, data.split_kind, length, horizon, dataset)
        features = settings.features or ("MS" if dataset == "synthetic" else "M")
        for mode in settings.covariates:
            for length in sorted({length for _, length in lengths}):
                datasets[dataset, mode, length] = prepare(data, length, features, mode)
    jobs = []
    for dataset, horizon, mode, model_name in (
        (d, h, c, m) for d in settings.dataset for h in horizons for c in settings.covariates for m in settings.models
    ):
        seq_len = input_length(model_name, dataset, horizon, settings.seq_len)
        data = datasets[dataset, mode, seq_len]
        epochs = settings.epochs  # None: the preset's for XCTFormer, the baselines' own
        build = dict(name=model_name, dataset=dataset, horizon=horizon, seq_len=seq_len, epochs=epochs)
        build.update(seed=settings.seed, accelerator=settings.accelerator, devices=settings.devices, progress=progress)
        build.update(work_dir=output / "darts_logs", compile=settings.compile, precision=settings.precision)
        build["fused_attention"] = not settings.plain_attention
        model = build_model(**build)  # not trained here: it names the run's settings
        kinds = [kind for kind, given in (("future", data.future[0]), ("static", _statics(data.train))) if given]
        missing = [kind for kind in kinds if not getattr(model, f"supports_{kind}_covariates")]
        if missing:
            where = f"({dataset} horizon {horizon}, --covariates {mode})"
            print(f"skip: {model_name} takes no {' or '.join(missing)} covariates {where}")
            continue
        run = {"task": TASK, "dataset": dataset, "horizon": horizon, "model": model_name, "seed": settings.seed}
        if mode != "none":  # absent at its default, so earlier runs keep their identity
            run["covariates"] = mode
        if fingerprints[dataset]:  # the file's content, so a changed file is a new run
            run["data_sha256"] = fingerprints[dataset]
        run.update(features=data.features, seq_len=seq_len, epochs=None if model_name == NAIVE else model.n_epochs)
        run["settings"] = model_settings(model)
        run.update(settings.identity(compiles=is_xctformer(model_name), mixed=True))
        record = {**run, "run": run, **settings.record_fields(compiles=is_xctformer(model_name), mixed=True)}
        record["command"] = settings.command_line
        if model_name == SEARCHED_MODEL:  # which search the recipe came from
            record["recipe"] = {"searched_at": searched_horizon(dataset, horizon)}
        if dataset in COVARIATE_SUITE:
            record["noise_floor"] = noise_floor(make_family(dataset, settings.seed), seq_len, horizon)
        if identity(run) in finished:
            print(f"skip (already in results): {dataset} horizon {horizon} {model_name} seed {settings.seed}")
            continue
        label = f"{dataset} H={horizon} {model_name}{'' if mode == 'none' else f' +{mode}'} seed {settings.seed}"
        work = partial(_forecast_work, build, data, horizon, record, settings.accelerator)
        jobs.append(Job(label, work, _summary, run, keep=save_example))
    return jobs


def tune_data(settings) -> tuple:
    """(dataset name, series, val_series) a tuning study trains and validates on: the paper's splits,
    validation starting the longest searched look-back before its first target."""
    from ..datasets import load_forecast_dataset

    look_back = max(settings.look_backs or [TASK_SEQ_LEN["forecast"]])
    data = load_forecast_dataset(settings.dataset, settings.data_dir, seed=settings.seed)
    data = prepare(data, seq_len=look_back, features="M")
    return data.dataset, data.train, data.val
