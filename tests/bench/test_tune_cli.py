"""``xct-bench tune``: one study shared by several worker processes through Optuna's storage."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

optuna = pytest.importorskip("optuna", reason="the tune extra (optuna) is not installed")

from xct_estimators.bench.cli import main  # noqa: E402
from xct_estimators.tune import open_storage  # noqa: E402


@pytest.fixture
def small_csv(tmp_path):
    stamps = pd.date_range("2020", periods=1000, freq="h")
    i = np.arange(1000)
    path = tmp_path / "small.csv"
    pd.DataFrame({"date": stamps, "a": np.sin(i / 7).round(4), "OT": np.cos(i / 9).round(4)}).to_csv(path, index=False)
    space = tmp_path / "space.json"
    tiny = {"d_model": {"low": 4, "high": 8, "step": 4}, "learning_rate": {"choices": [1e-3, 1e-2]}}
    space.write_text(json.dumps(tiny))
    return path, space


def _argv(csv, space, output, trials, *extra):
    return ["tune", "--dataset", str(csv), "--horizon", "24", "--trials", str(trials), "--epochs", "1",
            "--arch", "e_layers=1,n_heads=1", "--space", str(space), "--output", str(output), "--no-progress",
            *extra]  # fmt: skip


def test_tune_writes_the_best_parameters_and_continues_the_study(small_csv, tmp_path, capsys):
    csv, space = small_csv
    out = tmp_path / "out"
    assert main(_argv(csv, space, out, 2)) == 0
    result = json.loads((out / "tune_xctformer-forecast-small-H24.json").read_text())
    assert result["trials"]["complete"] == 2 and result["study_name"] == "xctformer-forecast-small-H24"
    assert result["best_params"]["e_layers"] == 1 and result["best_params"]["n_epochs"] == 1
    assert result["best_params"]["d_ff"] == 2 * result["best_params"]["d_model"]
    assert "best validation MSE" in capsys.readouterr().out
    assert main(_argv(csv, space, out, 3)) == 0  # one more trial, the first two are kept
    study = optuna.load_study(study_name=result["study_name"], storage=open_storage(out / "optuna.journal"))
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    assert not (out / "results.jsonl").exists() and not (out / ".lock").exists()


def test_two_workers_share_one_study(small_csv, tmp_path):
    """Two processes on one journal file: the study ends with its trials, each run by one worker once."""
    csv, space = small_csv
    out = tmp_path / "out"
    n_trials = 6
    command = [sys.executable, "-m", "xct_estimators.bench", *_argv(csv, space, out, n_trials)]
    workers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in "ab"]
    outputs = [worker.communicate(timeout=600)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    study = optuna.load_study(study_name="xctformer-forecast-small-H24", storage=open_storage(out / "optuna.journal"))
    trials = study.trials
    assert [t.number for t in trials] == list(range(len(trials)))
    assert all(t.state.name == "COMPLETE" for t in trials)  # none lost (RUNNING / FAIL)
    # Optuna's MaxTrialsCallback: a worker starts a trial only while fewer than n_trials exist; two
    # workers finishing at the same instant may each start one, so at most one extra.
    assert n_trials <= len(trials) <= n_trials + 1
    workers_seen = {t.user_attrs["worker"] for t in trials}
    assert len(workers_seen) == 2, workers_seen  # both worked on the one study
