"""Benchmark datasets and the paper's train/validation/test splits.

Forecasting data comes as one :class:`~darts.TimeSeries` per dataset: the ETT files through
``darts.datasets`` (or from a ``--data-dir`` holding the same files, md5-checked, so nothing is
downloaded), Time-Series-Library CSVs by name under the data directory or by path, and the
paper's synthetic dataset generated in-package; ``sites``, generated too, is a panel (a list of
series with static covariates). Anomaly data (MSL, SMAP) comes as numpy arrays.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
from darts import TimeSeries

from .._darts_private import download_folder, expected_md5
from . import covariate_suite
from .catalog import ANOMALY_DATASETS, DATA_DIR_ENV, ETT_KINDS, FORECAST_DATASETS, TSLIB_CSVS
from .control import FUTURE_COLUMNS as CONTROL_FUTURE
from .control import make_control
from .csv_files import read_csv
from .sites import STATIC_COLUMNS, make_sites
from .splits import Splits, split_borders
from .synthetic import make_synthetic


@dataclass
class ForecastDataset:
    """A forecasting dataset: the whole series (a list of them for a panel, each split on its own),
    its split kind and its target column(s)."""

    name: str
    series: TimeSeries | list[TimeSeries]
    split_kind: str
    target: str  # the column used as target in the MS setting
    future_columns: tuple[str, ...] = ()  # known in advance: future covariates, never targets

    @property
    def members(self) -> list[TimeSeries]:
        """The series: one, or a panel's."""
        return self.series if isinstance(self.series, list) else [self.series]

    def single(self, purpose: str) -> TimeSeries:
        """The one series; a panel is refused, naming ``purpose``."""
        if isinstance(self.series, list):
            raise ValueError(
                f"{self.name} is a panel of {len(self.series)} series and {purpose} takes one series: use "
                f"{self.name} with xct-bench forecast, or choose another dataset."
            )
        return self.series

    @property
    def n_rows(self) -> int:
        """Rows of the shortest series (what :func:`check_rows` checks)."""
        return min(len(series) for series in self.members)

    def splits(self, seq_len: int) -> Splits:
        """The split borders of the shortest series."""
        return split_borders(self.n_rows, self.split_kind, seq_len)


def resolve_data_dir(data_dir: Optional[str | Path] = None) -> Optional[Path]:
    """``data_dir`` if given, else ``$XCT_DATA_DIR``, else ``None`` (download through Darts)."""
    value = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV)
    if value in (None, ""):
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"Data directory {path} does not exist; pass --data-dir or set {DATA_DIR_ENV}.")
    return path


def load_forecast_dataset(name: str, data_dir: Optional[str | Path] = None, seed: int = 0) -> ForecastDataset:
    """Load a forecasting dataset by name (see :data:`FORECAST_DATASETS`) or by CSV path."""
    if name == "synthetic":
        frame = make_synthetic(seed=seed)
        return ForecastDataset(name, TimeSeries.from_dataframe(frame), "ratio", "target")
    if name == "control":
        frame = make_control(seed=seed).astype(np.float32)
        return ForecastDataset(name, TimeSeries.from_dataframe(frame), "ratio", "load", CONTROL_FUTURE)
    if name == "sites":
        panel = [
            TimeSeries.from_dataframe(
                f.astype(np.float32), static_covariates=pd.DataFrame([{c: f.attrs[c] for c in STATIC_COLUMNS}])
            )
            for f in make_sites(seed)
        ]
        return ForecastDataset(name, panel, "ratio", "load")
    if name in covariate_suite.DATASETS:
        members = covariate_suite.make_family(name, seed)
        panel = [
            TimeSeries.from_dataframe(
                m.frame.astype(np.float32), static_covariates=None if m.static is None else pd.DataFrame([m.static])
            )
            for m in members
        ]
        return ForecastDataset(name, panel if len(panel) > 1 else panel[0], "ratio", "y1", members[0].future_columns)
    if name in ETT_KINDS:
        return ForecastDataset(name, _load_ett(name, resolve_data_dir(data_dir)), ETT_KINDS[name], "OT")
    if name in TSLIB_CSVS or name.endswith(".csv"):
        if name.endswith(".csv"):
            return ForecastDataset(Path(name).stem, read_csv(Path(name)), "ratio", "OT")
        return ForecastDataset(name, read_csv(_tslib_path(name, data_dir), as_published=True), "ratio", "OT")
    raise ValueError(
        f"Unknown dataset {name!r}. Choose one of {', '.join(FORECAST_DATASETS)}, or give the path of a "
        "CSV in the Time-Series-Library layout (a 'date' column, then one column per channel)."
    )


def dataset_fingerprint(name: str, data_dir: Optional[str | Path] = None) -> Optional[str]:
    """The content hash (sha256, 16 hex digits) of a dataset read from a CSV of the user's, so
    a run on a changed or another file of the same name is another run; ``None`` for the
    synthetic data and for Darts' ETT files (Darts checks their md5)."""
    if name in TSLIB_CSVS or name.endswith(".csv"):
        path = Path(name) if name.endswith(".csv") else _tslib_path(name, data_dir)
        if not path.is_file():
            raise FileNotFoundError(f"CSV file {path} not found.")
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return None


def _load_ett(name: str, data_dir: Optional[Path]) -> TimeSeries:
    """ETT from ``data_dir`` when given (the file Darts would download, checked by its md5),
    else through Darts' own loader, which downloads it once into Darts' cache."""
    import darts.datasets as darts_datasets

    loader = getattr(darts_datasets, f"{name}Dataset")()
    if data_dir is None:
        return _download(name, loader)
    candidates = [data_dir / "ETT-small" / f"{name}.csv", data_dir / f"{name}.csv"]
    source = next((path for path in candidates if path.is_file()), None)
    if source is None:
        raise FileNotFoundError(
            f"{name}.csv is not in {data_dir} (looked for {', '.join(map(str, candidates))}). Pass the folder "
            "holding ETT-small/, or leave out --data-dir to let Darts download it."
        )
    digest, expected = _md5(source), expected_md5(loader)
    if digest != expected:
        raise ValueError(f"{source} has md5 {digest}, but Darts expects {expected}: a different file.")
    return TimeSeries.from_csv(source, time_col="date").astype(np.float32)


def _download(name: str, loader) -> TimeSeries:
    """The dataset through Darts' loader; a failed download (offline, say) is one line naming the
    way round it, and leaves no folder the download made."""
    from darts.datasets.dataset_loaders import DatasetLoadingException

    folder = Path(download_folder(loader))
    made = [p for p in (folder, *folder.parents) if not p.exists()]  # deepest first
    try:
        return loader.load().astype(np.float32)
    except DatasetLoadingException as error:  # a BaseException in Darts
        for path in made:
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(
            f"{name} could not be loaded through Darts ({reason}). Without a network, pass --data-dir DATA (or set "
            f"{DATA_DIR_ENV}) with DATA/ETT-small/{name}.csv; a damaged file in Darts' cache ({folder}) can be deleted "
            "to download it again."
        ) from None


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _tslib_path(name: str, data_dir) -> Path:
    root = resolve_data_dir(data_dir)
    if root is None:
        raise ValueError(f"Dataset {name!r} is read from a CSV: pass --data-dir (or set {DATA_DIR_ENV}).")
    path = root / TSLIB_CSVS[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; {name!r} is expected at <data-dir>/{TSLIB_CSVS[name]}.")
    return path


@dataclass
class AnomalyDataset:
    name: str
    train: np.ndarray
    test: np.ndarray
    labels: np.ndarray


def load_anomaly_dataset(name: str, data_dir: Optional[str | Path] = None) -> AnomalyDataset:
    """MSL or SMAP in the Time-Series-Library layout (``<name>/<name>_train.npy[.gz]`` etc.)."""
    if name not in ANOMALY_DATASETS:
        raise ValueError(f"Unknown anomaly dataset {name!r}; choose one of {', '.join(ANOMALY_DATASETS)}.")
    root = resolve_data_dir(data_dir)
    if root is None:
        raise ValueError(f"{name} is read from .npy files: pass --data-dir (or set {DATA_DIR_ENV}).")
    arrays = [_load_npy(root / name / f"{name}_{part}.npy") for part in ("train", "test", "test_label")]
    train, test, labels = arrays
    for part, array in (("train", train), ("test", test)):
        bad = ~np.isfinite(array.astype(np.float64))
        if bad.any():
            row, col = (int(i[0]) for i in np.nonzero(bad))
            raise ValueError(
                f"{root / name / f'{name}_{part}.npy'} has {int(bad.sum())} NaN or infinite value(s) (first at row "
                f"{row}, channel {col}): benchmark data must be complete; restore the file."
            )
    if len(test) != len(labels):
        raise ValueError(f"{name}: {len(test)} test rows but {len(labels)} labels.")
    if not np.asarray(labels, dtype=bool).any():
        raise ValueError(
            f"{root / name / f'{name}_test_label.npy'} marks no step as an anomaly: F1, AUC-PR and AUC-ROC are "
            "undefined without one. Restore the label file (see docs/benchmarks.md, Datasets)."
        )
    return AnomalyDataset(name, train.astype(np.float32), test.astype(np.float32), labels.astype(bool))


def _load_npy(path: Path) -> np.ndarray:
    if path.is_file():
        return np.load(path)
    gz = path.with_name(path.name + ".gz")
    if gz.is_file():
        with gzip.open(gz, "rb") as f:
            return np.load(f)
    raise FileNotFoundError(f"Neither {path} nor {gz} exists.")
