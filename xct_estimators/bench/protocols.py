"""The paper's evaluation protocols for imputation and anomaly detection."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score, precision_recall_fscore_support

#: Imputation mask rates of the paper (Table 3).
IMPUTATION_MASK_RATES = (0.125, 0.25, 0.375, 0.5)
#: Anomaly ratio (alpha) per dataset; the threshold is the (1 - alpha) quantile of scores.
ANOMALY_RATIOS = {"SMD": 0.005, "MSL": 0.01, "SMAP": 0.01, "PSM": 0.01, "SWaT": 0.01}


def random_mask(shape: tuple[int, ...], rate: float, seed: int) -> np.ndarray:
    """Boolean mask, True where a point is hidden, each point with probability ``rate``."""
    return np.random.default_rng(seed).random(shape) < rate


def point_adjust(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Point adjustment (the Time-Series-Library code path behind the paper's F1).

    If any step of a true anomaly segment is predicted, every step of that segment counts as
    predicted. This inflates recall and F1; report it beside the unadjusted numbers.
    """
    predictions = np.asarray(predictions, dtype=bool).copy()
    labels = np.asarray(labels, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], labels.astype(np.int8), [0]])))
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        if predictions[start:stop].any():
            predictions[start:stop] = True
    return predictions


def anomaly_metrics(
    test_scores: np.ndarray, labels: np.ndarray, train_scores: np.ndarray, alpha: float
) -> dict[str, float]:
    """Precision/recall/F1 with and without point adjustment, and AUC-PR.

    The threshold is the ``1 - alpha`` quantile of the train and test scores together.
    """
    test_scores = np.asarray(test_scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    threshold = float(np.quantile(np.concatenate([train_scores, test_scores]), 1.0 - alpha))
    predictions = test_scores > threshold
    out = {"threshold": threshold, "auc_pr": float(average_precision_score(labels, test_scores))}
    for suffix, pred in (("", predictions), ("_adjusted", point_adjust(predictions, labels))):
        p, r, f, _ = precision_recall_fscore_support(labels, pred, average="binary", zero_division=0)
        out.update({f"precision{suffix}": float(p), f"recall{suffix}": float(r), f"f1{suffix}": float(f)})
    return out
