"""The paper's forecasting protocol, run through Darts.

Split (see :func:`~xct_estimators.bench.datasets.split_borders`), standardise with a scaler
fitted on the training rows, train on every stride-1 window of the training split (the
validation split picks the best epoch), then forecast every stride-1 window of the test split
with ``historical_forecasts(retrain=False, last_points_only=False)`` and score with
``darts.metrics`` through ``backtest``: MSE/MAE averaged over windows x horizon x channels.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
from darts import TimeSeries
from darts.dataprocessing.transformers import Scaler
from darts.metrics import mae, mse
from sklearn.preprocessing import StandardScaler

from . import paper
from .datasets import ForecastDataset
from .results import run_key
from .runs import QUICK_EPOCHS, parse_devices, plain_settings

FEATURES = ("M", "MS")


@dataclass
class PreparedSeries:
    """Standardised splits: targets and (MS setting only) past covariates."""

    dataset: str
    features: str
    seq_len: int
    train: TimeSeries
    val: TimeSeries
    test: TimeSeries
    train_covariates: Optional[TimeSeries]
    val_covariates: Optional[TimeSeries]
    test_covariates: Optional[TimeSeries]

    def joint(self) -> PreparedSeries:
        """MS data for a model without past covariates: every column becomes a target (covariates
        first, the target last, as in the Time-Series-Library files); only the target is scored."""
        if self.test_covariates is None:
            return self
        stack = [cov.stack(target) for cov, target in ((self.train_covariates, self.train),
                                                        (self.val_covariates, self.val),
                                                        (self.test_covariates, self.test))]  # fmt: skip
        return PreparedSeries(self.dataset, "M", self.seq_len, *stack, None, None, None)


def prepare(data: ForecastDataset, seq_len: int = 96, features: str = "M") -> PreparedSeries:
    """Split and standardise ``data``. ``features``: "M" (every column a target) or "MS" (one target,
    the other columns past covariates)."""
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {features!r}.")
    splits = data.splits(seq_len)
    scaler = Scaler(StandardScaler())
    scaler.fit(data.series[splits.train[0] : splits.train[1]])
    scaled = scaler.transform(data.series).astype(np.float32)
    parts = [scaled[start:stop] for start, stop in (splits.train, splits.val, splits.test)]
    if features == "M":
        return PreparedSeries(data.name, features, seq_len, *parts, None, None, None)
    others = [c for c in scaled.components if c != data.target]
    targets = [part[data.target] for part in parts]
    covariates = [part[others] for part in parts]
    return PreparedSeries(data.name, features, seq_len, *targets, *covariates)


def fit_model(model, data: PreparedSeries) -> float:
    """Fit on the training split with the validation split; returns the wall time in seconds."""
    start = time.perf_counter()
    kwargs = {}
    if data.train_covariates is not None:
        kwargs = {"past_covariates": data.train_covariates, "val_past_covariates": data.val_covariates}
    model.fit(data.train, val_series=data.val, verbose=None, **kwargs)
    return time.perf_counter() - start


def forecast_test_split(model, data: PreparedSeries, horizon: int) -> list[TimeSeries]:
    """One forecast of ``horizon`` steps for every stride-1 window of the test split."""
    kwargs = {} if data.test_covariates is None else {"past_covariates": data.test_covariates}
    return model.historical_forecasts(
        data.test,
        start=data.seq_len,
        start_format="position",
        forecast_horizon=horizon,
        stride=1,
        retrain=False,
        overlap_end=False,
        last_points_only=False,
        verbose=False,
        **kwargs,
    )


def score(model, data: PreparedSeries, forecasts: list[TimeSeries]) -> dict[str, float]:
    """MSE and MAE of ``forecasts`` through ``backtest`` and ``darts.metrics``."""
    values = model.backtest(
        data.test, historical_forecasts=forecasts, metric=[mse, mae], reduction=np.mean, last_points_only=False
    )
    return {"mse": float(values[0]), "mae": float(values[1])}


def numpy_scores(actual: np.ndarray, forecasts: np.ndarray, seq_len: int) -> dict[str, float]:
    """The same metrics computed directly: ``forecasts[i]`` predicts ``actual[seq_len + i : seq_len + i + H]``."""
    n_windows, horizon = forecasts.shape[:2]
    rows = seq_len + np.arange(n_windows)[:, None] + np.arange(horizon)[None, :]
    errors = forecasts - actual[rows]
    return {"mse": float(np.mean(errors**2)), "mae": float(np.mean(np.abs(errors)))}


def expected_windows(test_len: int, seq_len: int, horizon: int) -> int:
    """Number of stride-1 test windows (the Time-Series-Library count, no dropped last batch)."""
    return test_len - seq_len - horizon + 1


def run_forecast(model, data: PreparedSeries, horizon: int) -> tuple[dict, dict]:
    """Fit, forecast the test split, score. Returns the result fields and one example window.

    In the MS setting a model that takes no past covariates is trained on all columns as targets
    and scored on the target column only (the field ``ms_mode`` says which way was used).
    """
    for split, series in (("training", data.train), ("test", data.test)):
        if expected_windows(len(series), data.seq_len, horizon) < 1:
            raise ValueError(
                f"{data.dataset}: the {split} split has {len(series)} rows, fewer than look-back {data.seq_len} + "
                f"horizon {horizon}. Use shorter --horizons or --seq-len."
            )
    extra = {}
    trained_on = data
    if data.test_covariates is not None and not model.supports_past_covariates:
        trained_on, extra = data.joint(), {"ms_mode": "all columns as targets, target scored"}
    fit_seconds = fit_model(model, trained_on)
    start = time.perf_counter()
    forecasts = forecast_test_split(model, trained_on, horizon)
    if trained_on is not data:
        target = data.test.components[0]
        forecasts = [forecast[target] for forecast in forecasts]
    scores = score(model, data, forecasts)
    eval_seconds = time.perf_counter() - start
    n_windows = expected_windows(len(data.test), data.seq_len, horizon)
    if len(forecasts) != n_windows:
        raise RuntimeError(f"Expected {n_windows} test windows, Darts produced {len(forecasts)}.")
    example = _example(data, forecasts[0])
    fields = {**scores, "n_windows": n_windows, "fit_seconds": fit_seconds, "eval_seconds": eval_seconds, **extra}
    return fields, example


def _example(data: PreparedSeries, forecast: TimeSeries) -> dict:
    """The first test window's last target channel: input, truth and forecast, for the plot."""
    channel = -1
    history = data.test[: data.seq_len].values(copy=False)[:, channel]
    truth = data.test[data.seq_len : data.seq_len + len(forecast)].values(copy=False)[:, channel]
    return {
        "channel": str(data.test.components[channel]),
        "history": history.tolist(),
        "truth": truth.tolist(),
        "forecast": forecast.values(copy=False)[:, channel].tolist(),
    }


#: Darts model arguments that do not change a run's numbers (or are its seed, recorded apart).
_NOT_SETTINGS = ("pl_trainer_kwargs", "model_name", "work_dir", "random_state", "log_tensorboard", "force_reset")


def model_settings(model) -> dict:
    """The Darts model's constructor arguments that decide its numbers, JSON-stable."""
    return plain_settings(model.model_params, skip=_NOT_SETTINGS)


def _forecast_work(build: dict, data: PreparedSeries, horizon: int, record: dict, accelerator: str):
    """One run, wherever it executes: build the model, fit, forecast the test split, score."""
    from .models import build_model

    model = build_model(**build)
    fields, example = run_forecast(model, data, horizon)
    record = {**record, **fields, "accelerator": accelerator, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    return [(record, example)]


def _summary(record: dict) -> str:
    return (
        f"{record['dataset']} H={record['horizon']} {record['model']}: MSE {record['mse']:.4f} "
        f"MAE {record['mae']:.4f} (fit {record['fit_seconds']:.0f} s)"
    )


def forecast_jobs(args, finished: set, progress: bool = True) -> list:
    """``xct-bench forecast``'s runs for ``args.seed`` that are not in ``finished``, as jobs."""
    from functools import partial

    from .backends import Job
    from .datasets import load_forecast_dataset
    from .models import build_model

    horizons = args.horizons or (list(paper.HORIZONS) if args.full else [96])
    output = Path(args.output)
    datasets = {}
    for dataset in args.dataset:  # every dataset is read (and checked) before anything trains
        data = load_forecast_dataset(dataset, args.data_dir, seed=args.seed)
        features = args.features or ("MS" if dataset == "synthetic" else "M")
        datasets[dataset] = prepare(data, args.seq_len, features)
    jobs = []
    for dataset, horizon, model_name in ((d, h, m) for d in args.dataset for h in horizons for m in args.models):
        data = datasets[dataset]
        build = dict(
            name=model_name, dataset=dataset, horizon=horizon, seq_len=args.seq_len,
            epochs=args.epochs or (None if args.full else QUICK_EPOCHS), seed=args.seed,
            accelerator=args.accelerator, devices=parse_devices(args.devices), progress=progress,
            work_dir=output / "darts_logs",
        )  # fmt: skip
        model = build_model(**build)  # not trained here: it names the run's settings
        run = {
            "task": "forecast", "dataset": dataset, "horizon": horizon, "model": model_name, "seed": args.seed,
            "features": data.features, "seq_len": args.seq_len, "epochs": model.n_epochs,
            "settings": model_settings(model),
        }  # fmt: skip
        record = {**run, "run": run}
        if run_key(record) in finished:
            print(f"skip (already in results): {dataset} horizon {horizon} {model_name} seed {args.seed}")
            continue
        label = f"{dataset} H={horizon} {model_name} seed {args.seed}"
        work = partial(_forecast_work, build, data, horizon, record, args.accelerator)
        jobs.append(Job(label, work, _summary, run))
    return jobs

