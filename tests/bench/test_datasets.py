import os
from pathlib import Path

import numpy as np
import pytest

from xct_estimators.bench import datasets
from xct_estimators.bench.datasets import (
    load_anomaly_dataset,
    load_forecast_dataset,
    resolve_data_dir,
)
from xct_estimators.bench.forecast.protocol import expected_windows
from xct_estimators.bench.splits import split_borders

# The repository's sibling ../shared/data, or wherever XCT_DATA_DIR points.
SHARED_DATA = Path(os.environ.get("XCT_DATA_DIR") or Path(__file__).resolve().parents[3] / "shared" / "data")
needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"benchmark data not found at {SHARED_DATA}")


@pytest.mark.parametrize(
    "n_rows, kind, borders",
    [
        (17420, "ett_hour", ((0, 8640), (8544, 11520), (11424, 14400))),
        (69680, "ett_minute", ((0, 34560), (34464, 46080), (45984, 57600))),
        (10000, "ratio", ((0, 7000), (6904, 8000), (7904, 10000))),
        # weather: int(0.7 n) and int(0.2 n) as in Time-Series-Library's Dataset_Custom
        (52696, "ratio", ((0, 36887), (36791, 42157), (42061, 52696))),
    ],
)
def test_split_borders_follow_the_paper(n_rows, kind, borders):
    splits = split_borders(n_rows, kind, seq_len=96)
    assert (splits.train, splits.val, splits.test) == borders


@pytest.mark.parametrize(
    "kind, n_rows, horizon, n_windows",
    [("ett_hour", 17420, 96, 2785), ("ett_hour", 17420, 720, 2161), ("ett_minute", 69680, 96, 11425),
     ("ratio", 10000, 96, 1905), ("ratio", 10000, 720, 1281)],
)  # fmt: skip
def test_test_window_counts(kind, n_rows, horizon, n_windows):
    test = split_borders(n_rows, kind, seq_len=96).test
    assert expected_windows(test[1] - test[0], 96, horizon) == n_windows


@pytest.mark.parametrize("kind, n_rows", [("ett_hour", 17420), ("ett_minute", 69680), ("ratio", 52696)])
def test_every_look_back_scores_the_same_validation_and_test_windows(kind, n_rows):
    """A split starts its look-back early, so its first target, and with it every window scored, is
    the same at any input length: scores at different look-backs compare (as in Time-Series-Library)."""
    first_targets = {
        (splits.val[0] + length, splits.test[0] + length, splits.val[1], splits.test[1])
        for length in (96, 192, 336, 512, 720)
        for splits in [split_borders(n_rows, kind, seq_len=length)]
    }
    assert len(first_targets) == 1


def test_split_errors_name_the_problem():
    with pytest.raises(ValueError, match="at least 14400 rows"):
        split_borders(1000, "ett_hour", 96)
    with pytest.raises(ValueError, match="too short for an input length of 96"):
        split_borders(100, "ratio", 96)
    with pytest.raises(ValueError, match="Unknown split kind"):
        split_borders(1000, "daily", 96)


def test_unknown_dataset_lists_the_choices():
    with pytest.raises(ValueError, match="Unknown dataset 'ETTh3'.*ETTh1.*CSV"):
        load_forecast_dataset("ETTh3")


def test_data_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("XCT_DATA_DIR", str(tmp_path))
    assert resolve_data_dir() == tmp_path
    monkeypatch.setenv("XCT_DATA_DIR", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="XCT_DATA_DIR"):
        resolve_data_dir()


def test_csv_by_path_uses_ratio_split(tmp_path):
    path = tmp_path / "toy.csv"
    rows = 500
    dates = np.datetime_as_string(np.arange("2020-01-01", rows, dtype="datetime64[D]"))
    values = np.random.default_rng(0).normal(size=(rows, 3))
    lines = ["date,a,b,OT", *(f"{d},{a},{b},{c}" for d, (a, b, c) in zip(dates, values, strict=True))]
    path.write_text("\n".join(lines))
    data = load_forecast_dataset(str(path))
    assert data.series.n_components == 3 and len(data.series) == rows
    assert data.splits(96).test == (int(rows * 0.8) - 96, rows)


@needs_data
def test_ett_from_data_dir_is_read_where_it_is(monkeypatch, tmp_path):
    from darts.datasets.dataset_loaders import DatasetLoader

    monkeypatch.setattr(DatasetLoader, "_DEFAULT_DIRECTORY", tmp_path)  # a download would land here
    data = load_forecast_dataset("ETTh1", SHARED_DATA)
    assert not any(tmp_path.iterdir())  # Darts' cache untouched
    assert len(data.series) == 17420 and data.series.n_components == 7
    assert data.splits(96).test == (11424, 14400)


@needs_data
def test_tslib_csv_by_name():
    data = load_forecast_dataset("exchange_rate", SHARED_DATA)
    assert data.series.n_components == 8 and len(data.series) == 7588


@needs_data
def test_anomaly_data_shapes():
    data = load_anomaly_dataset("MSL", SHARED_DATA)
    assert data.train.shape == (58317, 55) and data.test.shape == (73729, 55)
    assert abs(data.labels.mean() - 0.1053) < 1e-3


def test_ett_from_data_dir_is_darts_series_without_touching_its_cache(shared_data, tmp_path, monkeypatch):
    import darts.datasets as darts_datasets
    from darts.datasets.dataset_loaders import DatasetLoader, DatasetLoadingException

    try:  # Darts' own loader: its cache, or a download
        expected = darts_datasets.ETTh1Dataset().load().astype(np.float32)
    except DatasetLoadingException as error:
        pytest.skip(f"Darts cannot load ETTh1 here to compare with ({error})")
    monkeypatch.setattr(DatasetLoader, "_DEFAULT_DIRECTORY", tmp_path / "cache")
    series = datasets._load_ett("ETTh1", shared_data)
    assert series.time_index.equals(expected.time_index) and series.freq_str == expected.freq_str == "h"
    assert np.array_equal(series.values(), expected.values()) and list(series.components) == list(expected.components)
    assert not (tmp_path / "cache").exists()


def test_another_file_under_an_ett_name_is_refused(tmp_path):
    (tmp_path / "ETT-small").mkdir()
    (tmp_path / "ETT-small" / "ETTh1.csv").write_text("date,OT\n2020-01-01 00:00:00,1.0\n")
    with pytest.raises(ValueError, match=r"ETTh1.csv has md5 \w+, but Darts expects \w+: a different file"):
        datasets._load_ett("ETTh1", tmp_path)


def test_an_ett_dataset_that_cannot_be_downloaded_is_one_line_naming_data_dir(tmp_path, monkeypatch):
    """Offline: Darts' downloader fails (with a BaseException of its own); the error names
    --data-dir and XCT_DATA_DIR, and no empty download folder is left behind."""
    import darts.datasets
    from darts.datasets.dataset_loaders import DatasetLoader, DatasetLoadingException

    from xct_estimators.bench.datasets import load_forecast_dataset

    home = tmp_path / "home"
    monkeypatch.setattr(DatasetLoader, "_DEFAULT_DIRECTORY", home / ".darts" / "datasets")
    monkeypatch.delenv("XCT_DATA_DIR", raising=False)

    def offline(self):
        self._root_path.mkdir(parents=True, exist_ok=True)  # as Darts does before it downloads
        raise DatasetLoadingException("Could not download the dataset. Reason:<urlopen error [Errno -3]>")

    monkeypatch.setattr(darts.datasets.ETTh1Dataset, "_download_dataset", offline)
    with pytest.raises(ValueError) as error:
        load_forecast_dataset("ETTh1")
    message = str(error.value)
    assert "ETTh1 could not be loaded through Darts (Could not download the dataset." in message
    assert "pass --data-dir DATA (or set XCT_DATA_DIR) with DATA/ETT-small/ETTh1.csv" in message
    assert not (home / ".darts").exists()
