"""`xct-bench impute` / `detect` wiring, on small arrays and a tiny network instead of the presets."""

import numpy as np
import pytest

import xct_estimators.bench.tasks as tasks
import xct_estimators.reconstruction as reconstruction
from xct_estimators.bench.cli import main
from xct_estimators.bench.datasets import AnomalyDataset
from xct_estimators.bench.results import ResultStore

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


def test_impute_records_one_run_per_mask_rate(monkeypatch, tmp_path, tiny_presets, capsys):
    monkeypatch.setattr(tasks, "imputation_splits", lambda name, data_dir, seed: (sines(400), sines(200, seed=1)))
    argv = ["impute", "--dataset", "ETTh1", "--mask-rates", "0.125,0.5", "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    records = ResultStore(tmp_path).records()
    assert [r["mask_rate"] for r in records] == [0.125, 0.5]
    assert all(r["mse"] > 0 and r["n_points"] > 0 and r["train_stride"] == 1 for r in records)
    assert "| ETTh1   | 0.125" in capsys.readouterr().out  # beside the paper's 0.069
    assert main([*argv, "--resume"]) == 0
    assert len(ResultStore(tmp_path).records()) == 2


def test_detect_records_f1_with_and_without_adjustment(monkeypatch, tmp_path, tiny_presets):
    test = sines(600, seed=1)
    labels = np.zeros(600, dtype=bool)
    labels[300:320] = True
    test[300:320] += 4.0
    fake = AnomalyDataset("MSL", sines(600), test, labels)
    monkeypatch.setattr(tasks, "load_anomaly_dataset", lambda name, data_dir: fake)
    assert main(["detect", "--dataset", "MSL", "--output", str(tmp_path), "--no-progress"]) == 0
    (record,) = ResultStore(tmp_path).records()
    for field in ("f1", "f1_adjusted", "auc_pr", "fit_seconds", "eval_seconds"):
        assert field in record
    assert record["f1_adjusted"] >= record["f1"]
    assert record["auc_pr"] > 0.2  # base rate 20 / 600 = 0.033
