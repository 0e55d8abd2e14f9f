"""The anomaly-detection protocols of ``xct-bench detect``.

``tslib`` (the paper's numbers, Time-Series-Library's loop): every stride-1 window of the
training and of the test array is scored, one energy per window and time step (the
reconstruction MSE over channels); the energies are concatenated in window order, so a point
appears in up to ``window_length`` windows, and the test windows' labels are concatenated the
same way. Threshold: ``np.percentile(concat(train, test energies), 100 - anomaly_ratio)``;
prediction: energy > threshold; point adjustment on the concatenated sequences.

``point``: each point gets one score (what a user of the scorer or detector gets: overlapping
windows' reconstructions averaged), the same threshold rule over the train and test scores,
metrics on the original labels.

Both report precision/recall/F1 with and without point adjustment, AUC-PR and AUC-ROC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

#: The paper's anomaly ratio per dataset, in percent (the threshold percentile is 100 - ratio).
ANOMALY_RATIOS = {"SMD": 0.5, "MSL": 1.0, "SMAP": 1.0, "PSM": 1.0, "SWaT": 1.0}
DETECTION_PROTOCOLS = ("tslib", "point")


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
    AUC-PR and AUC-ROC of the energies, for predictions ``energy > threshold_value``."""
    energy = np.ravel(energy)
    labels = np.ravel(labels).astype(bool)
    predictions = energy > threshold_value
    out = {"threshold": float(threshold_value)}
    for suffix, pred in (("", predictions), ("_adjusted", point_adjust(predictions, labels))):
        precision, recall, f1 = _binary_scores(labels, pred)
        out.update({f"precision{suffix}": precision, f"recall{suffix}": recall, f"f1{suffix}": f1})
    out["auc_pr"] = float(average_precision_score(labels, energy))
    out["auc_roc"] = float(roc_auc_score(labels, energy))
    return out


def window_view(values: np.ndarray, length: int) -> np.ndarray:
    """Every stride-1 window of a (time, channels) array, (windows, length, channels), no copy."""
    return np.lib.stride_tricks.sliding_window_view(values, length, axis=0).transpose(0, 2, 1)


def window_labels(labels: np.ndarray, length: int) -> np.ndarray:
    """The labels of every stride-1 window, concatenated in window order."""
    return np.lib.stride_tricks.sliding_window_view(np.asarray(labels, dtype=bool), length).reshape(-1)


def chunked_window_energies(
    values: np.ndarray,
    length: int,
    energies_of: Callable[[np.ndarray], np.ndarray],
    chunk: int = 4096,
    progress: Optional[Callable[[int], object]] = None,
) -> np.ndarray:
    """(windows, length) energies of every stride-1 window, ``chunk`` windows at a time
    (``energies_of`` maps (n, length, channels) windows to (n, length) energies)."""
    windows = window_view(values, length)
    out = np.empty((len(windows), length), dtype=np.float32)
    for start in range(0, len(windows), chunk):
        batch = np.ascontiguousarray(windows[start : start + chunk])
        out[start : start + len(batch)] = energies_of(batch)
        if progress is not None:
            progress(len(batch))
    return out


def evaluate_tslib(detector, train, test, labels, anomaly_ratio: float, length: int, progress=None) -> dict:
    """The paper's protocol (module docstring) for a fitted bench detector."""
    train_energy = detector.window_energies(train, length, progress)
    test_energy = detector.window_energies(test, length, progress)
    metrics = detection_metrics(
        test_energy, window_labels(labels, length), threshold(train_energy, test_energy, anomaly_ratio)
    )
    return {**metrics, "n_windows": len(test_energy), "n_train_windows": len(train_energy)}


def evaluate_point(detector, train, test, labels, anomaly_ratio: float) -> dict:
    """One score per point (module docstring) for a fitted bench detector."""
    train_scores, _ = detector.point_scores(train)
    test_scores, n_windows = detector.point_scores(test)
    metrics = detection_metrics(test_scores, labels, threshold(train_scores, test_scores, anomaly_ratio))
    return {**metrics, "n_windows": n_windows}
