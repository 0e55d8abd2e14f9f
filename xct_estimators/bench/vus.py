"""VUS-PR and VUS-ROC (Paparrizos et al., VLDB 2022), as TSB-AD (Liu and Paparrizos, NeurIPS
2024) computes them: the range-based PR and ROC areas averaged over buffer sizes 0 to
``2 * sliding_window``.

For a buffer ``w``, each anomaly segment's label is extended by ``w // 2`` steps on both sides
with the soft weight ``sqrt(1 - distance / w)`` (summed where extensions meet, capped at 1); the
extended segments that touch are merged. At each of 250 thresholds (order statistics of the
scores, ``score >= threshold`` predicted), with P anomalous steps, the predicted steps' soft
labels summed outside the segments (B) and N predicted steps:

    TP = (predicted steps inside the segments) + B      P' = (P + P + B) / 2
    TPR = min(TP / P', 1) * (merged segments with a prediction) / (merged segments)
    FPR = (N - TP) / (n - P')                           precision = TP / N

The ROC area (trapezoids from (0, 0) to (1, 1)) and the PR area (TPR steps times precision,
from precision 1 at TPR 0) are averaged over ``w = 0 .. 2 * sliding_window``.

Here every sum over steps is a count of scores above a threshold (a binary search in sorted
scores), so a buffer costs O(segments x buffer + thresholds) instead of O(thresholds x steps);
``tests/bench/test_vus.py`` checks the values against TSB-AD's implementation on fixtures.
"""

from __future__ import annotations

import numpy as np

#: TSB-AD's number of thresholds and its default sliding window (``get_metrics``).
THRESHOLDS = 250
SLIDING_WINDOW = 100


def _segments(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and inclusive ends of the runs of ones."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], labels.astype(np.int8), [0]])))
    return edges[::2], edges[1::2] - 1


def _count_at_least(sorted_scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many of the ascending ``sorted_scores`` are >= each threshold."""
    return len(sorted_scores) - np.searchsorted(sorted_scores, thresholds, side="left")


def _running_max(score: np.ndarray, starts: np.ndarray, ends: np.ndarray, reach: int) -> tuple[np.ndarray, ...]:
    """The largest score within ``o`` steps before each start and after each end, o = 0..reach
    (-inf where none), as (segments, reach + 1) arrays."""
    n = len(score)
    offsets = np.arange(1, reach + 1)
    before = starts[:, None] - offsets
    after = ends[:, None] + offsets
    pad = np.full((len(starts), 1), -np.inf)
    before_vals = np.where(before >= 0, score[np.clip(before, 0, n - 1)], -np.inf)
    after_vals = np.where(after < n, score[np.clip(after, 0, n - 1)], -np.inf)
    return (
        np.maximum.accumulate(np.hstack([pad, before_vals]), axis=1),
        np.maximum.accumulate(np.hstack([pad, after_vals]), axis=1),
    )


def vus(labels: np.ndarray, scores: np.ndarray, sliding_window: int = SLIDING_WINDOW) -> dict[str, float]:
    """``{"vus_pr": ..., "vus_roc": ...}`` of anomaly ``scores`` (higher: more anomalous) against
    0/1 ``labels`` (at least one anomaly), TSB-AD's ``get_metrics`` with ``slidingWindow``."""
    labels = np.ravel(labels).astype(bool)
    score = np.ravel(scores).astype(np.float64)
    if len(labels) != len(score):
        raise ValueError(f"labels and scores differ in length: {len(labels)} and {len(score)}.")
    if not labels.any():
        raise ValueError("VUS needs at least one anomalous step in the labels.")
    n, reach = len(score), sliding_window  # the largest buffer, 2 * sliding_window, reaches w // 2 steps
    ascending = np.sort(score)
    thresholds = ascending[::-1][np.linspace(0, n - 1, THRESHOLDS).astype(int)]
    predicted = _count_at_least(ascending, thresholds)
    starts, ends = _segments(labels)
    positives = int(labels.sum())
    inside = _count_at_least(np.sort(score[labels]), thresholds)

    # Each (step outside the segments, distance to a segment edge within reach): the soft labels' support.
    offsets = np.arange(1, reach + 1)
    steps = np.concatenate([(starts[:, None] - offsets).ravel(), (ends[:, None] + offsets).ravel()])
    distance = np.concatenate([np.tile(offsets, len(starts)), np.tile(offsets, len(ends))])
    keep = (steps >= 0) & (steps < n)
    steps, distance = steps[keep], distance[keep]
    keep = ~labels[steps]
    steps, distance = steps[keep], distance[keep]
    support, slot = np.unique(steps, return_inverse=True)
    by_score = np.argsort(-score[support], kind="stable")
    support_hits = _count_at_least(np.sort(score[support]), thresholds)  # support steps predicted

    segment_max = np.maximum.reduceat(score, np.ravel(np.column_stack([starts, ends + 1]))[:-1])[::2]
    if ends[-1] + 1 < n:  # reduceat's last slice runs to the end of the array
        segment_max[-1] = score[starts[-1] : ends[-1] + 1].max()
    before_max, after_max = _running_max(score, starts, ends, reach)

    pr_areas, roc_areas = [], []
    for buffer in range(2 * sliding_window + 1):
        half = buffer // 2
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = np.where(distance <= half, np.sqrt(np.maximum(1 - distance / max(buffer, 1), 0.0)), 0.0)
        soft = np.minimum(np.bincount(slot, weight, minlength=len(support)), 1.0)
        ordered = np.concatenate([[0.0], np.cumsum(soft[by_score])])
        extra = ordered[support_hits]  # soft labels of the predicted steps outside the segments
        true_positives = inside + extra
        half_positives = (positives + positives + extra) / 2
        recall = np.minimum(true_positives / half_positives, 1.0)

        reach_max = np.maximum(segment_max, np.maximum(before_max[:, half], after_max[:, half]))
        new_group = np.concatenate([[True], ends[:-1] + half < starts[1:] - half])
        group_max = np.maximum.reduceat(reach_max, np.flatnonzero(new_group))
        found = _count_at_least(np.sort(group_max), thresholds)
        tpr = recall * found / len(group_max)
        fpr = (predicted - true_positives) / (n - half_positives)
        precision = true_positives / predicted
        tpr_curve = np.concatenate([[0.0], tpr, [1.0]])
        fpr_curve = np.concatenate([[0.0], fpr, [1.0]])
        roc_areas.append(np.dot(np.diff(fpr_curve), (tpr_curve[1:] + tpr_curve[:-1]) / 2))
        pr_areas.append(np.dot(np.diff(tpr_curve[:-1]), precision))
    return {"vus_pr": float(np.mean(pr_areas)), "vus_roc": float(np.mean(roc_areas))}
