"""``--backend ray``: the same records as the local backend, written by the driver alone."""

import json

import numpy as np
import pandas as pd
import pytest

from xct_estimators.bench.cli import main
from xct_estimators.bench.results import ResultStore

TIMING = ("fit_seconds", "eval_seconds", "finished_at")
#: What differs by construction: the command line, and the threads a Ray worker gives torch.
WHERE = ("command", "device")


@pytest.fixture(autouse=True)
def _ray_workers_at_normal_priority(monkeypatch):
    """Ray starts its workers at nice 15: beside another pytest-xdist worker they would hardly run."""
    monkeypatch.setenv("RAY_worker_niceness", "0")


@pytest.fixture
def small_csv(tmp_path):
    stamps = pd.date_range("2020", periods=1000, freq="h")
    i = np.arange(1000)
    path = tmp_path / "small.csv"
    frame = pd.DataFrame({"date": stamps, "a": np.sin(i / 7).round(4), "OT": (np.cos(i / 9) + i / 500).round(4)})
    frame.to_csv(path, index=False)
    return path


def _argv(csv, output, horizons="8,16", *extra):
    return ["forecast", "--dataset", str(csv), "--models", "xctformer,dlinear", "--horizons", horizons,
            "--epochs", "1", "--seq-len", "32", "--output", str(output), "--no-progress", *extra]  # fmt: skip


def _by_run(output):
    return {json.dumps(r.run, sort_keys=True): r.to_json() for r in ResultStore(output).records()}


def test_ray_backend_records_equal_the_local_backends(small_csv, tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    local, ray = tmp_path / "local", tmp_path / "ray"
    assert main(_argv(small_csv, local)) == 0
    assert main(_argv(small_csv, ray, "8,16", "--backend", "ray")) == 0
    local_records, ray_records = _by_run(local), _by_run(ray)
    assert len(local_records) == 4 and set(local_records) == set(ray_records)
    for key, record in local_records.items():
        other = ray_records[key]
        assert set(record) == set(other)
        assert other["command"].endswith("--backend ray") and other["device"]["cpu"] == record["device"]["cpu"]
        for field in set(record) - set(TIMING) - set(WHERE):
            if isinstance(record[field], float):
                assert other[field] == pytest.approx(record[field], rel=1e-5, abs=1e-7), field
            else:
                assert other[field] == record[field], field
    examples = [sorted(p.name for p in (out / "examples").iterdir()) for out in (local, ray)]
    assert examples[0] == examples[1] and len(examples[0]) == 4
    assert main(_argv(small_csv, ray, "8,16", "--backend", "ray", "--resume")) == 0  # nothing left to run
    assert len(ResultStore(ray).records()) == 4


def test_a_failing_ray_task_is_reported_and_the_others_finish(small_csv, tmp_path, capsys, monkeypatch):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import xct_estimators.bench.forecast.protocol as forecast_module

    out = tmp_path / "out"
    # horizon 400 is longer than the splits allow. The driver's checks before planning are skipped
    # here, so the two runs reach their tasks, whose own check (in a fresh process) fails them.
    monkeypatch.setattr(forecast_module, "check_split_lengths", lambda *args, **kwargs: None)
    monkeypatch.setattr("xct_estimators.bench.splits.check_rows", lambda *args, **kwargs: None)
    assert main(_argv(small_csv, out, "8,400", "--backend", "ray")) == 1
    text = capsys.readouterr().out
    assert text.count("FAILED") == 2 and "fewer than look-back" in text
    assert "in run_forecast" in text and "\x1b[" not in text  # the remote traceback, plain
    assert "2 of 4 runs failed" in text and "--resume" in text
    assert sorted((r.horizon, r.model) for r in ResultStore(out).records()) == [(8, "dlinear"), (8, "xctformer")]


def test_without_ray_the_error_names_the_extra(small_csv, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)
    assert main(_argv(small_csv, tmp_path / "out", "8", "--backend", "ray")) == 2
    assert "pip install 'xct-estimators[ray]'" in capsys.readouterr().err
