"""``benchmarks/training_stability.py``: one epoch of the bench's ETTh2 imputation training, with
and without the incomplete last batch, reports its gradient norms and validation loss."""

import json
import math

import pytest


@pytest.mark.parametrize("keep_last, steps", [(False, 2), (True, 3)])
def test_one_epoch_reports_gradient_norms_and_validation_loss(
    keep_last, steps, shared_data, tmp_path, monkeypatch, benchmark_script
):
    monkeypatch.chdir(tmp_path)
    module = benchmark_script("training_stability")
    # every 110th of ETTh2's 7,617 training windows: 70 windows, 2 batches of 32 and one of 6
    argv = ["--dataset", "ETTh2", "--stop-after", "1", "--train-stride", "110", "--data-dir", str(shared_data)]
    rows = module.main(argv + (["--keep-last-batch"] if keep_last else ["--clip", "0.5", "--output", "out.json"]))
    assert [row["epoch"] for row in rows] == [0] and rows[0]["steps"] == steps
    assert rows[0]["grad_max"] >= rows[0]["grad_median"] > 0 and math.isfinite(rows[0]["val_loss"])
    if not keep_last:  # the record: the rows with their provenance
        record = json.loads((tmp_path / "out.json").read_text())
        assert record["epochs"] == rows and record["command"].startswith("python -m benchmarks.training_stability")
        assert "--clip 0.5" in record["command"] and record["git_commit"]
