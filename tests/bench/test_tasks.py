"""`xct-bench impute` / `detect` wiring, on small arrays and a tiny network instead of the presets."""

import numpy as np
import pytest

import xct_estimators.bench.detect.protocol as detect_module
import xct_estimators.bench.impute.protocol as impute_module
import xct_estimators.reconstruction as reconstruction
from xct_estimators.bench.cli import main
from xct_estimators.bench.datasets import AnomalyDataset
from xct_estimators.bench.parser import settings_from
from xct_estimators.bench.results import ResultStore
from xct_estimators.nn.presets import PAPER_PATIENCE

TINY = dict(window_length=32, patch_len=8, stride=8, d_model=8, n_heads=1, d_ff=16, e_layers=1, dropout=0.0,
            fc_dropout=0.0, attn_dropout=0.0, decop_k=None, n_epochs=1, batch_size=32, learning_rate=1e-3)  # fmt: skip


@pytest.fixture
def tiny_presets(monkeypatch):
    monkeypatch.setattr(reconstruction, "preset_params", lambda dataset, task: dict(TINY))


def sines(rows, channels=3, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(rows)[:, None]
    return (np.sin(2 * np.pi * t / rng.uniform(10, 40, channels)) + 0.05 * rng.normal(size=(rows, channels))).astype(
        np.float32
    )


def test_impute_records_one_run_per_mask_rate_and_model(monkeypatch, tmp_path, tiny_presets, capsys):
    splits = (sines(400), sines(200, seed=2), sines(200, seed=1))
    monkeypatch.setattr(impute_module, "imputation_splits", lambda name, data_dir, seed: splits)
    monkeypatch.setattr(impute_module, "TASK_SEQ_LEN", {"impute": 32})
    argv = ["impute", "--dataset", "ETTh1", "--mask-rates", "0.125,0.5", "--models", "xctformer,linear",
            "--train-stride", "4", "--eval-stride", "3", "--output", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    records = ResultStore(tmp_path).records()
    assert [(r.mask_rate, r.model) for r in records] == [
        (0.125, "xctformer"),
        (0.125, "linear"),
        (0.5, "xctformer"),
        (0.5, "linear"),
    ]
    for r in records:
        assert r.protocol == "tslib" and r.eval_stride == 3
        assert r.train_stride == (4 if r.model == "xctformer" else None)  # linear does not train
        assert r.n_windows == len(range(0, 200 - 32 + 1, 3)) and r.n_hidden > 0 and r.mse > 0
    xct = records[0]
    assert xct.settings["fill"] == "zero" and xct.settings["patience"] == PAPER_PATIENCE
    assert "| ETTh1   | 0.125" in capsys.readouterr().out  # beside the paper's 0.069
    assert main([*argv, "--resume"]) == 0
    assert len(ResultStore(tmp_path).records()) == 4
    # another protocol is another run, not a resumed one
    assert main([*argv, "--resume", "--protocol", "series", "--models", "linear"]) == 0
    records = ResultStore(tmp_path).records()
    assert len(records) == 6 and records[-1].protocol == "series" and records[-1].n_windows is None


def test_impute_train_stride_reaches_the_engine(monkeypatch, tiny_presets):
    from xct_estimators.bench.parser import build_parser

    settings = settings_from(build_parser().parse_args(["impute", "--train-stride", "16", "--no-progress"]))
    imputer = impute_module.build_imputer("xctformer_linear", "ETTh1", 0.25, settings)
    assert imputer.engine.train_stride == 16 and imputer.engine.fill == "linear" and imputer.engine.mask_rate == 0.25


def test_impute_unknown_model_is_refused_before_any_training(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["impute", "--models", "xctformer,foo", "--output", str(tmp_path), "--no-progress"])
    assert exit_info.value.code == 2 and "list of xctformer" in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


def test_detect_runs_both_protocols_for_every_model_and_resumes(monkeypatch, tmp_path, tiny_presets):
    test = sines(600, seed=1)
    labels = np.zeros(600, dtype=bool)
    labels[300:320] = True
    test[300:320] += 4.0
    fake = AnomalyDataset("MSL", sines(600), test, labels)
    monkeypatch.setattr(detect_module, "load_anomaly_dataset", lambda name, data_dir: fake)
    models = "xctformer,window_mean,darts_kmeans"
    argv = ["detect", "--models", models, "--protocol", "tslib,point", "--window-length", "32", "--output",
            str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    records = ResultStore(tmp_path).records()
    assert [(r.model, r.protocol) for r in records] == [(m, p) for m in models.split(",") for p in ("tslib", "point")]
    for r in records:
        assert r.anomaly_ratio == 1.0 and r.window_length == 32
        assert 0 <= r.f1 <= r.f1_adjusted <= 1 and 0 < r.auc_roc <= 1
        assert r.auc_pr > 0.2, r  # base rate 20 / 600 = 0.033
    tslib = records[0]
    assert tslib.n_windows == 600 - 32 + 1 and tslib.n_train_windows == 600 - 32 + 1
    window_stride = (32 - records[1].settings["stride"]) // 2  # each step where two patches see it
    assert records[1].n_windows == len(range(0, 600 - 32 + 1, window_stride)) + 1  # and one ending at the end
    assert tslib.settings["patience"] == PAPER_PATIENCE and tslib.settings["window_length"] == 32
    assert main([*argv, "--resume"]) == 0
    assert len(ResultStore(tmp_path).records()) == 6
    # another network is another run; the baselines are unchanged by --arch
    assert main([*argv, "--resume", "--arch", "d_model=4,d_ff=8"]) == 0
    records = ResultStore(tmp_path).records()
    assert len(records) == 8 and records[-1].arch == {"d_model": 4, "d_ff": 8}
    assert records[-1].settings["d_model"] == 4


@pytest.mark.parametrize(
    "command, option, value",
    [("impute", "--train-stride", "0"), ("impute", "--eval-stride", "-3"), ("impute", "--learning-rate", "x"),
     ("detect", "--train-stride", "-1"), ("detect", "--batch-size", "0")],
)  # fmt: skip
def test_refuses_non_positive_settings(command, option, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, option, value])
    assert exit_info.value.code == 2
    assert f"argument {option}: expected a positive" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option, value, message",
    [("--models", "xctformer,foo", "expected a comma-separated list of xctformer"),
     ("--protocol", "paper", "expected a comma-separated list of tslib, point"),
     ("--dataset", "FOO", "expected a comma-separated list of MSL, SMAP"),
     ("--arch", "depth=3", "KEY one of patch_len"),
     ("--arch", "d_model=wide", "d_model expects a number")],
)  # fmt: skip
def test_detect_refuses_unknown_names_before_any_training(option, value, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["detect", option, value])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_the_registry_holds_each_command_once_with_its_planner_and_tune_data():
    """The commands, the report and tune find a task's code through ``TASKS`` alone."""
    from xct_estimators.bench.parser import build_parser
    from xct_estimators.bench.tasks import TASKS

    assert list(TASKS) == ["forecast", "impute", "detect"]
    for task in TASKS.values():
        module = task._module()
        assert callable(getattr(module, f"{task.name}_jobs")) and callable(module.tune_data)
        assert build_parser().parse_args([task.name]).command == task.name
