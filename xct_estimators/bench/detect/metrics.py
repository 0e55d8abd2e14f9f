"""The measures of a detection run: the paper's threshold, point adjustment, and the
threshold-free measures (AUC-PR, AUC-ROC, VUS)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from ..vus import vus


def point_adjust(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Point adjustment: if any step of a true anomaly segment is predicted, every step of that
    segment counts as predicted. Inflates recall and F1; report it beside the unadjusted numbers.

    (Time-Series-Library's loop never adjusts index 0 backwards; here a segment starting at 0 is
    adjusted like any other, a difference of at most one point.)
    """
    predictions = np.asarray(predictions, dtype=bool).copy()
    labels = np.asarray(labels, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], labels.astype(np.int8), [0]])))
    starts, stops = edges[::2], edges[1::2]
    hits = np.concatenate([[0], np.cumsum(predictions, dtype=np.int64)])
    found = hits[stops] - hits[starts] > 0
    marks = np.zeros(len(labels) + 1, dtype=np.int64)
    np.add.at(marks, starts[found], 1)
    np.add.at(marks, stops[found], -1)
    predictions |= np.cumsum(marks[:-1]) > 0
    return predictions


def threshold(train_energy: np.ndarray, test_energy: np.ndarray, anomaly_ratio: float) -> float:
    """The paper's threshold: the ``100 - anomaly_ratio`` percentile of train and test energies."""
    return float(np.percentile(np.concatenate([np.ravel(train_energy), np.ravel(test_energy)]), 100 - anomaly_ratio))


def _binary_scores(labels: np.ndarray, predictions: np.ndarray) -> tuple[float, float, float]:
    true_positives = int(np.count_nonzero(labels & predictions))
    precision = true_positives / max(int(np.count_nonzero(predictions)), 1)
    recall = true_positives / max(int(np.count_nonzero(labels)), 1)
    f1 = 2 * precision * recall / (precision + recall) if true_positives else 0.0
    return precision, recall, f1


def detection_metrics(energy: np.ndarray, labels: np.ndarray, threshold_value: float) -> dict[str, float]:
    """Precision/recall/F1 (binary, positive = anomaly) with and without point adjustment,
    for predictions ``energy > threshold_value``, and the energies' AUC-PR, AUC-ROC, VUS-PR and
    VUS-ROC."""
    energy = np.ravel(energy)
    labels = np.ravel(labels).astype(bool)
    predictions = energy > threshold_value
    out = {"threshold": float(threshold_value)}
    # "_unadjusted" on precision alone: a record's "precision" is the training precision (32, bf16-mixed)
    for suffix, pred in (("", predictions), ("_adjusted", point_adjust(predictions, labels))):
        precision, recall, f1 = _binary_scores(labels, pred)
        out.update({f"precision{suffix or '_unadjusted'}": precision, f"recall{suffix}": recall, f"f1{suffix}": f1})
    out["auc_pr"] = float(average_precision_score(labels, energy))
    out["auc_roc"] = float(roc_auc_score(labels, energy))
    return {**out, **vus(labels, energy)}
