import numpy as np
import pytest

from xct_estimators.bench.protocols import anomaly_metrics, point_adjust


def test_point_adjust_fills_detected_segments_only():
    labels = np.array([0, 1, 1, 1, 0, 0, 1, 1, 0, 1], bool)
    preds = np.array([1, 0, 1, 0, 0, 0, 0, 0, 0, 1], bool)
    expected = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 1], bool)
    assert np.array_equal(point_adjust(preds, labels), expected)


def test_anomaly_metrics_with_and_without_adjustment():
    labels = np.zeros(100, bool)
    labels[10:20] = True
    scores = np.zeros(100)
    scores[12] = 5.0  # one hit inside the segment
    scores[50] = 4.0  # one false alarm
    metrics = anomaly_metrics(scores, labels, train_scores=np.zeros(100), alpha=0.01)
    # threshold: the 99th percentile of 200 scores, of which 198 are 0 -> 0.0
    assert metrics["precision"] == pytest.approx(0.5) and metrics["recall"] == pytest.approx(0.1)
    assert metrics["f1"] == pytest.approx(2 * 0.5 * 0.1 / 0.6)
    assert metrics["recall_adjusted"] == pytest.approx(1.0)
    assert metrics["precision_adjusted"] == pytest.approx(10 / 11)
    assert 0 < metrics["auc_pr"] <= 1
