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
    rows = result["trial_rows"]  # every trial, so a search's record shows what it tried
    assert [r["number"] for r in rows] == [0, 1] and {r["state"] for r in rows} == {"complete"}
    best = rows[result["best_trial"]]
    assert best["value"] == result["best_value"] == min(best["val_mse_by_epoch"]) and len(best["val_mse_by_epoch"]) == 1
    assert best["searched"]["d_model"] == result["best_params"]["d_model"] and best["seconds"] > 0
    assert "best validation MSE" in capsys.readouterr().out
    assert main(_argv(csv, space, out, 3)) == 0  # one more trial, the first two are kept
    study = optuna.load_study(study_name=result["study_name"], storage=open_storage(out / "optuna.journal"))
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    assert not (out / "results.jsonl").exists() and not (out / ".lock").exists()


def test_two_workers_share_one_study(small_csv, tmp_path):
    """Two processes on one journal file with one --seed: the study ends with its trials, each run
    by one worker once, and no two trials drew the same parameters."""
    csv, _ = small_csv
    space = tmp_path / "continuous.json"  # a continuous rate: equal draws can only come from equal streams
    space.write_text(
        json.dumps({"d_model": {"low": 4, "high": 8, "step": 4}, "learning_rate": {"low": 1e-3, "high": 1e-2}})
    )
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
    drawn = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(drawn)) == len(drawn), drawn
    assert study.best_value == min(t.value for t in trials)


def test_joining_a_study_with_other_fixed_settings_is_refused(small_csv, tmp_path, capsys):
    csv, space = small_csv
    out = tmp_path / "out"
    assert main(_argv(csv, space, out, 1)) == 0
    changed = _argv(csv, space, out, 2)
    changed[changed.index("--epochs") + 1] = "2"
    assert main(changed) == 2
    err = capsys.readouterr().err
    assert "was started with other settings" in err and '"n_epochs": 1' in err and '"n_epochs": 2' in err
    study = optuna.load_study(study_name="xctformer-forecast-small-H24", storage=open_storage(out / "optuna.journal"))
    assert len(study.trials) == 1  # nothing ran under the other settings


@pytest.mark.parametrize(
    "storage, fragment", [("nosuchdb://x/y", "Optuna cannot open the storage"), ("DIR", "is a folder")]
)
def test_a_bad_storage_is_one_line(small_csv, tmp_path, capsys, storage, fragment):
    csv, space = small_csv
    storage = str(tmp_path) if storage == "DIR" else storage
    assert main(_argv(csv, space, tmp_path / "out", 1, "--storage", storage)) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_an_interrupted_trial_does_not_use_up_the_budget(small_csv, tmp_path):
    """A real SIGTERM in the middle of the only trial; the same command then completes it."""
    import signal
    import time

    csv, space = small_csv
    out = tmp_path / "out"
    argv = _argv(csv, space, out, 1)
    argv[argv.index("--epochs") + 1] = "30"
    command = [sys.executable, "-m", "xct_estimators.bench", *argv]
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while True:  # until its trial is running
        assert worker.poll() is None and time.time() < deadline, worker.communicate()
        if (out / "optuna.journal").is_file():
            study = optuna.load_study(
                study_name="xctformer-forecast-small-H24", storage=open_storage(out / "optuna.journal")
            )
            if any(t.state.name == "RUNNING" for t in study.trials):
                break
        time.sleep(0.2)
    time.sleep(1)
    worker.send_signal(signal.SIGTERM)
    worker.communicate(timeout=60)
    assert worker.returncode == 143
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    study = optuna.load_study(study_name="xctformer-forecast-small-H24", storage=open_storage(out / "optuna.journal"))
    assert [t.state.name for t in study.trials] == ["FAIL", "COMPLETE"]


def test_a_train_stride_for_forecast_trials_is_refused_not_ignored(tmp_path, capsys):
    out = tmp_path / "tune"
    assert main(["tune", "--task", "forecast", "--train-stride", "4", "--trials", "1", "--output", str(out)]) == 2
    assert "--train-stride 4: forecasting trials train on every window" in capsys.readouterr().err
    assert not out.exists()  # refused before anything is written


def test_a_study_name_on_an_edited_csv_is_refused_naming_the_data(small_csv, tmp_path, capsys):
    csv, space = small_csv
    out = tmp_path / "out"
    assert main(_argv(csv, space, out, 1, "--study-name", "mine")) == 0
    frame = pd.read_csv(csv)
    frame.loc[:99, "OT"] += 1.0  # the same file, other content (standardised, not just rescaled)
    frame.to_csv(csv, index=False)
    capsys.readouterr()
    assert main(_argv(csv, space, out, 2, "--study-name", "mine")) == 2
    err = capsys.readouterr().err
    assert "Study 'mine' was started with other settings (data_sha256: " in err and "Give another study name" in err


def test_a_look_back_search_on_the_paper_splits(small_csv, tmp_path):
    csv, space = small_csv
    out = tmp_path / "out"
    assert main(_argv(csv, space, out, 2, "--look-backs", "48,24", "--patience", "3")) == 0
    result = json.loads((out / "tune_xctformer-forecast-small-H24.json").read_text())
    assert result["space"]["input_chunk_length"] == {"choices": [24, 48]} and result["patience"] == 3
    assert result["best_params"]["input_chunk_length"] in (24, 48)
    assert result["best_params"]["stride"] == result["best_params"]["patch_len"] // 2


@pytest.mark.parametrize(
    "extra, fragment",
    [(["--task", "impute", "--look-backs", "96"], "--look-backs: a look-back search is for forecasting"),
     (["--space", "SPACE"], "searches input_chunk_length: give the input lengths with --look-backs"),
     (["--task", "detect", "--patience", "2"], "--patience: --task detect trials already stop after the paper's 6")],
)  # fmt: skip
def test_look_backs_and_patience_are_refused_where_they_cannot_apply(tmp_path, capsys, extra, fragment):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"input_chunk_length": {"choices": [96, 192]}}))
    out = tmp_path / "tune"
    argv = ["tune", "--trials", "1", "--output", str(out), *[str(space) if a == "SPACE" else a for a in extra]]
    assert main(argv) == 2
    assert fragment in capsys.readouterr().err
    assert not out.exists()
