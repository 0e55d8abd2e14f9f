"""``xct-bench impute``: the imputation benchmark's split, models and protocols (``tslib``, the
paper's table, and ``series``; docs/benchmarks.md, Imputation). Every model has ``fit(train, val)``,
``impute_windows(x, visible)``, ``impute_series(masked)`` and ``settings`` (stored in each record)."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, Optional

import numpy as np
import torch
from sklearn.preprocessing import StandardScaler
from tqdm.auto import tqdm

from ..._optional import optional_import
from ...nn.fill import linear_fill
from ...nn.hyperparameters import ABLATIONS
from ...nn.presets import PAPER_PATIENCE, TASK_SEQ_LEN, get_preset
from ...windows import covering_starts
from ..catalog import IMPUTATION_MODELS
from ..datasets import dataset_fingerprint, load_forecast_dataset
from ..models import (
    ABLATION_MODELS,
    compiled_graphs,
    finished,
    preset_name,
    reconstruction_engine,
    timed_fit,
    without_later_defaults,
)
from ..option_types import arch_text
from ..provenance import run_fields
from ..results import identity
from ..runs import plain_settings
from .record import ImputeRecord
from .settings import ImputeSettings

TASK = ImputeRecord.TASK


def random_mask(shape: tuple[int, ...], rate: float, seed: int) -> np.ndarray:
    """Boolean mask, True where a point is hidden, each point with probability ``rate``."""
    return np.random.default_rng(seed).random(shape) < rate


#: Windows whose masks are drawn and imputed together (a memory bound, not a result setting).
_CHUNK = 64

#: (windows, L, C) values and visible mask -> (windows, L, C) reconstruction.
WindowImputer = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: (T, C) values with NaN at hidden points -> (T, C) values with those points filled.
SeriesImputer = Callable[[np.ndarray], np.ndarray]


def window_starts(n_rows: int, window_length: int, eval_stride: int = 1) -> np.ndarray:
    """Start rows of the evaluated windows: 0, S, 2S, ... up to ``n_rows - window_length``."""
    if n_rows < window_length:
        raise ValueError(f"The test split has {n_rows} rows, fewer than the window length {window_length}.")
    return np.arange(0, n_rows - window_length + 1, eval_stride)


def evaluate_windows(
    impute: WindowImputer,
    values: np.ndarray,
    window_length: int,
    mask_rate: float,
    seed: int,
    eval_stride: int = 1,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """The ``tslib`` protocol: score ``impute`` on every ``eval_stride``-th window of ``values``."""
    values = np.asarray(values, dtype=np.float32)
    starts = window_starts(len(values), window_length, eval_stride)
    windows = np.lib.stride_tricks.sliding_window_view(values, window_length, axis=0)  # (T-L+1, C, L)
    rng = np.random.default_rng(seed)
    squared = absolute = 0.0
    n_hidden = 0
    for i in range(0, len(starts), _CHUNK):
        x = np.ascontiguousarray(windows[starts[i : i + _CHUNK]].transpose(0, 2, 1))
        hidden = (rng.random(x.shape) <= mask_rate) & ~np.isnan(x)
        visible = ~hidden & ~np.isnan(x)
        out = impute(np.where(visible, x, 0.0).astype(np.float32), visible)
        errors = (out - x)[hidden].astype(np.float64)
        squared += float(np.square(errors).sum())
        absolute += float(np.abs(errors).sum())
        n_hidden += int(hidden.sum())
        if progress is not None:
            progress(len(x))
    return {"mse": squared / n_hidden, "mae": absolute / n_hidden, "n_windows": int(len(starts)), "n_hidden": n_hidden}


def evaluate_series(impute: SeriesImputer, values: np.ndarray, mask_rate: float, seed: int) -> dict:
    """The ``series`` protocol: hide ``mask_rate`` of ``values`` once, impute, score each point once."""
    values = np.asarray(values, dtype=np.float32)
    hidden = random_mask(values.shape, mask_rate, seed) & ~np.isnan(values)
    errors = (impute(np.where(hidden, np.nan, values)) - values)[hidden].astype(np.float64)
    mse, mae = float(np.mean(errors**2)), float(np.mean(np.abs(errors)))
    return {"mse": mse, "mae": mae, "n_windows": None, "n_hidden": int(hidden.sum())}


def series_by_windows(impute: WindowImputer, values: np.ndarray, window_length: int, stride: int) -> np.ndarray:
    """Impute a whole series with a window imputer: windows every ``stride`` rows (the last one
    ending at the end), overlapping outputs averaged, observed values kept."""
    values = np.asarray(values, dtype=np.float32)
    window_starts(len(values), window_length)  # refuses a split shorter than one window
    starts = covering_starts(len(values), window_length, stride)
    total = np.zeros(values.shape, dtype=np.float64)
    count = np.zeros((len(values), 1))
    visible_all = ~np.isnan(values)
    for i in range(0, len(starts), _CHUNK):
        index = starts[i : i + _CHUNK, None] + np.arange(window_length)
        visible = visible_all[index]
        out = impute(np.where(visible, values[index], 0.0).astype(np.float32), visible)
        np.add.at(total, index.reshape(-1), out.reshape(-1, values.shape[1]))
        np.add.at(count, index.reshape(-1), 1.0)
    return np.where(visible_all, values, total / count).astype(np.float32)


#: sktime Imputer method: the best of its cheap methods on ETTh1 (docs/dev/history.md).
SKTIME_METHOD = "nearest"


class LinearImputer:
    """Linear interpolation per window and channel; edges repeat the nearest observed value."""

    settings: dict[str, Any] = {}

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        pass

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return linear_fill(torch.from_numpy(x), torch.from_numpy(visible)).numpy()

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return self.impute_windows(masked[None], ~np.isnan(masked[None]))[0]


class SktimeWindowImputer:
    """sktime's ``Imputer`` on each window on its own (what the window shows, nothing else)."""

    def __init__(self, method: str = SKTIME_METHOD):
        self.method = method
        self.settings = {"method": method}

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        pass

    def _impute(self, values: np.ndarray) -> np.ndarray:
        import pandas as pd
        from sktime.transformations.series.impute import Imputer

        frame = pd.DataFrame(values.astype(np.float64))  # sktime drift cannot write float64 into float32
        return Imputer(method=self.method).fit_transform(frame).to_numpy(np.float32)

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return np.stack([self._impute(np.where(v, w, np.nan)) for w, v in zip(x, visible, strict=True)])

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return self._impute(masked)


class XCTFormerBenchImputer:
    """A :class:`~xct_estimators.reconstruction.ReconstructionEngine` in imputation mode."""

    def __init__(self, engine, rollback: bool = False):
        self.engine = engine
        training = {"window_length": engine.window_length, "epochs": engine.n_epochs, "fill": engine.fill}
        training.update(learning_rate=engine.learning_rate, batch_size=engine.batch_size, patience=engine.patience)
        self.guard = None
        if rollback:  # absent from the paper's recipe, so its earlier records keep their identity
            from ...callbacks import RollBackOnDivergence

            self.guard = RollBackOnDivergence()
            engine.pl_trainer_kwargs["callbacks"] = [*engine.pl_trainer_kwargs.get("callbacks", []), self.guard]
            training["rollback_on_divergence"] = {
                "threshold": self.guard.threshold,
                "rate_factor": self.guard.rate_factor,
            }
        architecture = {k: v for k, v in engine.architecture.items() if k != "max_attention_bytes"}
        self.settings = {**training, **without_later_defaults(architecture)}

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        self.engine.fit(train, val_values=val)
        self.settings.update(
            epochs_trained=self.engine.epochs_trained,
            best_epoch=self.engine.best_epoch,
            val_losses=[round(v, 5) for v in self.engine.val_losses],
        )
        if self.guard is not None:
            self.settings["rolled_back_at"] = self.guard.undone_epochs(self.engine.val_losses)

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return self.engine.reconstruct_windows(x, visible)

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(masked), self.engine.reconstruct(masked), masked)


class SAITSImputer:
    """PyPOTS' SAITS trained on the training windows (its own masked-imputation training),
    validated on the validation windows with the run's mask rate, best epoch kept."""

    def __init__(self, window_length: int, mask_rate: float, epochs: int, train_stride: int, seed: int, device):
        optional_import("pypots.imputation", extra="baselines", purpose="The 'saits' baseline")
        self.window_length, self.mask_rate, self.seed = window_length, mask_rate, seed
        self.train_stride, self.device = train_stride, device
        network = dict(n_layers=2, d_model=64, n_heads=4, d_k=16, d_v=16, d_ffn=128, dropout=0.1)
        patience = min(3, max(epochs - 1, 1)) if epochs > 1 else None
        self.settings = dict(network, epochs=epochs, patience=patience, batch_size=32)
        self.model = None

    def _windows(self, values: np.ndarray) -> np.ndarray:
        view = np.lib.stride_tricks.sliding_window_view(values, self.window_length, axis=0)
        return np.ascontiguousarray(view[:: self.train_stride].transpose(0, 2, 1)).astype(np.float32)

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        from pypots.imputation import SAITS
        from pypots.utils.random import set_random_seed

        set_random_seed(self.seed)
        shape = {"n_steps": self.window_length, "n_features": train.shape[1]}
        self.model = SAITS(**shape, device=self.device, verbose=False, saving_path=None, **self.settings)
        val_set = None
        if val is not None:
            x_val = self._windows(val)
            hidden = np.random.default_rng(self.seed).random(x_val.shape) <= self.mask_rate
            val_set = {"X": np.where(hidden, np.nan, x_val), "X_ori": x_val}
        self.model.fit({"X": self._windows(train)}, val_set)

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return self.model.predict({"X": np.where(visible, x, np.nan)})["imputation"].astype(np.float32)

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return series_by_windows(self.impute_windows, masked, self.window_length, self.window_length // 2)


def imputation_splits(name: str, data_dir, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardised train, validation and test arrays for imputation (validation and test moved
    back by the input length 1024, as for forecasting)."""
    data = load_forecast_dataset(name, data_dir, seed=seed)
    series = data.single("xct-bench impute")
    splits = data.splits(TASK_SEQ_LEN[TASK])
    values = series.values(copy=False).astype(np.float64)
    scaler = StandardScaler().fit(values[slice(*splits.train)])
    scaled = scaler.transform(values).astype(np.float32)
    return scaled[slice(*splits.train)], scaled[slice(*splits.val)], scaled[slice(*splits.test)]


def build_imputer(model: str, dataset: str, mask_rate: float, settings: ImputeSettings):
    """The bench imputer named ``model`` for one run (untrained)."""
    preset = get_preset(preset_name(dataset), TASK)
    if model in ("xctformer", "xctformer_linear") or model in ABLATION_MODELS:
        fill = "linear" if model == "xctformer_linear" else "zero"
        switches = ABLATIONS[ABLATION_MODELS[model]] if model in ABLATION_MODELS else {}
        training = dict(mask_rate=mask_rate, fill=fill, patience=PAPER_PATIENCE, train_stride=settings.train_stride)
        engine = reconstruction_engine(preset.dataset, TASK, settings, **training, **(settings.arch or {}), **switches)
        return XCTFormerBenchImputer(engine, rollback=not settings.paper_recipe)
    if model == "linear":
        return LinearImputer()
    if model == "sktime_imputer":
        return SktimeWindowImputer()
    if model == "saits":
        device = "cuda" if settings.accelerator == "gpu" else "cpu"
        epochs = settings.epochs or preset.epochs
        return SAITSImputer(preset.seq_len, mask_rate, epochs, settings.train_stride, settings.seed, device)
    raise ValueError(f"Unknown imputation model {model!r}; choose from {', '.join(IMPUTATION_MODELS)}.")


#: Models whose training reads ``--train-stride``.
_STRIDED = ("xctformer", "xctformer_linear", "saits", *ABLATION_MODELS)


def _impute_work(settings: ImputeSettings, dataset: str, rate: float, model: str, arrays, record: dict):
    """One imputation run, wherever it executes."""
    args = settings
    imputer = build_imputer(model, dataset, rate, settings)
    train, val, test = arrays
    window_length = TASK_SEQ_LEN[TASK]
    fit_seconds = timed_fit(lambda: imputer.fit(train, val), model.startswith("xctformer"))
    start, graphs = time.perf_counter(), compiled_graphs()
    if args.protocol == "tslib":
        n_windows = len(window_starts(len(test), window_length, args.eval_stride))
        with tqdm(total=n_windows, desc="windows", unit="win", leave=False, disable=args.no_progress) as wins:
            metrics = evaluate_windows(
                imputer.impute_windows, test, window_length, rate, args.seed, args.eval_stride, wins.update
            )
    else:
        metrics = evaluate_series(imputer.impute_series, test, rate, args.seed)
    trained = {"epochs": imputer.settings.get("epochs"), "settings": plain_settings(imputer.settings)}
    record = {**record, **metrics, **trained, **finished(fit_seconds, start), "command": args.command_line}
    record["eval_compilations"] = compiled_graphs() - graphs
    record.update(run_fields(args.accelerator))
    return [(ImputeRecord.from_json(record), None)]


def _impute_summary(record: ImputeRecord) -> str:
    return f"{record.dataset} mask {record.mask_rate} {record.model}: MSE {record.mse:.4f} MAE {record.mae:.4f}"


def impute_jobs(settings: ImputeSettings, finished: set, progress: bool = True) -> list:
    """``xct-bench impute``'s runs for ``settings.seed`` that are not in ``finished``, as jobs."""
    from ..backends import Job

    args = settings.replace(no_progress=settings.no_progress or not progress)
    window_length = TASK_SEQ_LEN[TASK]
    fingerprints = {d: dataset_fingerprint(d, args.data_dir) for d in args.dataset}
    splits = {d: imputation_splits(d, args.data_dir, args.seed) for d in args.dataset}  # all checked first
    rates, models = args.mask_rates, args.models
    jobs = []
    for dataset, rate, model in ((d, r, m) for d in args.dataset for r in rates for m in models):
        try:
            imputer = build_imputer(model, dataset, rate, args)  # not trained here: it names the run's settings
        except ValueError as error:
            if not args.arch or not model.startswith("xctformer"):
                raise
            raise ValueError(f"{model} on {dataset} with --arch {arch_text(args.arch)}: {error}") from None
        run = {"task": TASK, "dataset": dataset, "mask_rate": rate, "model": model, "seed": args.seed}
        if fingerprints[dataset]:  # the file's content, so a changed file is a new run
            run["data_sha256"] = fingerprints[dataset]
        run["protocol"], run["eval_stride"] = args.protocol, args.eval_stride if args.protocol == "tslib" else None
        run["train_stride"] = args.train_stride if model in _STRIDED else None
        run.update(window_length=window_length, settings=plain_settings(imputer.settings))
        ours = isinstance(imputer, XCTFormerBenchImputer)
        run.update(args.identity(compiles=ours, mixed=ours))
        record = {**run, "run": run, **args.record_fields(compiles=ours, mixed=ours)}
        if identity(run) in finished:
            print(f"skip (already in results): {dataset} mask rate {rate} {model} seed {args.seed}")
            continue
        work = partial(_impute_work, args, dataset, rate, model, splits[dataset], record)
        jobs.append(Job(f"{dataset} mask {rate} {model} seed {args.seed}", work, _impute_summary, run))
    return jobs


def tune_data(settings) -> tuple:
    """(dataset name, series, val_series) a tuning study trains and validates on: the paper's splits."""
    train, val, _ = imputation_splits(settings.dataset, settings.data_dir, settings.seed)
    return settings.dataset, train, val
