"""The anomaly protocols against a plain-numpy rebuild of their rules, and the bench detectors."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, precision_recall_fscore_support, roc_auc_score

from xct_estimators.bench.detect.detectors import DartsScorerDetector, WindowMeanDetector, chunked_window_energies
from xct_estimators.bench.detect.protocol import (
    evaluate_point,
    evaluate_tslib,
    point_adjust,
    tslib_windows,
    window_labels,
)


def reference_point_adjust(pred, labels):
    """The rule, step by step: a true segment with any predicted step is predicted entirely."""
    pred = list(pred)
    i = 0
    while i < len(labels):
        if labels[i]:
            j = i
            while j < len(labels) and labels[j]:
                j += 1
            if any(pred[i:j]):
                pred[i:j] = [True] * (j - i)
            i = j
        else:
            i += 1
    return np.array(pred, dtype=bool)


def first_row_reconstruction(window):
    """A deterministic reconstructor: every step of a window is its first row."""
    return np.repeat(window[:1], len(window), axis=0)


class FirstRowDetector:
    def window_energies(self, values, length, progress=None):
        return chunked_window_energies(
            values, length, lambda w: ((w - w[:, :1]) ** 2).mean(axis=-1), chunk=7, progress=progress
        )


def tslib_rebuild(train, test, labels, ratio, length):
    """Time-Series-Library's test loop in plain numpy: loops over stride-1 windows."""

    def energies(values):
        out = []
        for start in range(len(values) - length + 1):
            window = values[start : start + length]
            out.append(((window - first_row_reconstruction(window)) ** 2).mean(axis=1))
        return np.concatenate(out)

    train_energy, test_energy = energies(train), energies(test)
    threshold = np.percentile(np.concatenate([train_energy, test_energy]), 100 - ratio)
    gt = np.concatenate([labels[s : s + length] for s in range(len(test) - length + 1)]).astype(int)
    pred = (test_energy > threshold).astype(int)
    out = {"threshold": threshold, "auc_pr": average_precision_score(gt, test_energy),
           "auc_roc": roc_auc_score(gt, test_energy)}  # fmt: skip
    for suffix, p in (("", pred), ("_adjusted", reference_point_adjust(pred.astype(bool), gt.astype(bool)))):
        precision, recall, f1, _ = precision_recall_fscore_support(gt, p.astype(int), average="binary")
        out.update({f"precision{suffix or '_unadjusted'}": precision, f"recall{suffix}": recall, f"f1{suffix}": f1})
    return out, len(test) - length + 1


def anomalous_arrays(seed=0):
    rng = np.random.default_rng(seed)
    train = rng.normal(size=(90, 3)).astype(np.float32)
    test = rng.normal(size=(120, 3)).astype(np.float32)
    labels = np.zeros(120, dtype=bool)
    for start, stop in ((0, 4), (30, 38), (70, 71), (100, 112)):
        labels[start:stop] = True
        test[start:stop] += rng.uniform(1, 4)
    return train, test, labels


@pytest.mark.parametrize("seed, ratio", [(0, 1.0), (1, 0.5), (2, 5.0)])
def test_tslib_protocol_matches_a_plain_numpy_rebuild_exactly(seed, ratio):
    train, test, labels = anomalous_arrays(seed)
    expected, n_windows = tslib_rebuild(train, test, labels, ratio, length=10)
    got = evaluate_tslib(FirstRowDetector(), train, test, labels, ratio, length=10)
    assert got["n_windows"] == n_windows == 111 and got["n_train_windows"] == 81
    assert tslib_windows(len(train), len(test), 10) == 111 + 81  # what the GPU queue's estimate counts
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert got["f1_adjusted"] >= got["f1"]


def test_point_adjust_matches_the_rule_on_random_sequences():
    rng = np.random.default_rng(0)
    for _ in range(200):
        labels = rng.random(60) < rng.uniform(0.1, 0.7)
        pred = rng.random(60) < rng.uniform(0.0, 0.4)
        np.testing.assert_array_equal(point_adjust(pred, labels), reference_point_adjust(pred, labels))


def test_window_labels_concatenate_every_stride_1_window():
    labels = np.array([0, 1, 1, 0, 1], bool)
    np.testing.assert_array_equal(window_labels(labels, 3), [0, 1, 1, 1, 1, 0, 1, 0, 1])


def test_window_mean_energies_and_point_scores():
    train, test, labels = anomalous_arrays()
    detector = WindowMeanDetector(10).fit(train)
    energies = detector.window_energies(test, 10)
    for start in (0, 17, 110):
        window = test[start : start + 10]
        np.testing.assert_allclose(energies[start], ((window - window.mean(0)) ** 2).mean(1), rtol=1e-5)
    scores, n_windows = detector.point_scores(test)
    starts = [*range(0, 111, 5)]  # stride 5, the last window ends at the end
    assert n_windows == len(starts) == 23
    total, count = np.zeros(test.shape), np.zeros((120, 1))
    for s in starts:
        total[s : s + 10] += test[s : s + 10].mean(0)
        count[s : s + 10] += 1
    np.testing.assert_allclose(scores, ((total / count - test) ** 2).mean(1), rtol=1e-5)
    (metrics,) = evaluate_point(detector, train, test, labels, anomaly_ratio=1.0).values()
    assert metrics["n_windows"] == 23 and 0 <= metrics["f1"] <= metrics["f1_adjusted"] <= 1


@pytest.mark.parametrize("name", ["darts_kmeans", "darts_iforest"])
def test_darts_scorers_give_one_score_per_step_and_their_windows(name):
    pytest.importorskip("pyod") if name == "darts_iforest" else None
    train, test, labels = anomalous_arrays()
    detector = DartsScorerDetector(name, seed=0).fit(train)
    scores, _ = detector.point_scores(test)
    assert scores.shape == (120,) and np.isfinite(scores).all()
    assert (scores[:9] == scores[9]).all()  # the first window - 1 steps take the first score
    energies = detector.window_energies(test, 10)
    assert energies.shape == (111, 10)
    np.testing.assert_array_equal(energies[5], scores[5:15])
    assert evaluate_tslib(detector, train, test, labels, 1.0, 10)["auc_roc"] > 0.6  # shifted segments are found


def test_random_scores_are_noise_that_point_adjustment_rewards():
    """The `random` model: repeatable from its seed, the train and test arrays drawn apart, chance
    under AUC-ROC, yet a high point-adjusted F1 on long anomaly segments (Kim et al., AAAI 2022)."""
    from xct_estimators.bench.detect.detectors import RandomDetector
    from xct_estimators.bench.detect.protocol import evaluate_point

    train, test = np.zeros((3000, 2), dtype=np.float32), np.zeros((4000, 2), dtype=np.float32)
    labels = np.zeros(4000, dtype=bool)
    labels[500:900] = labels[2000:2600] = True
    detector = RandomDetector(seed=3).fit(train)
    scores, _ = detector.point_scores(test)
    assert np.array_equal(scores, RandomDetector(seed=3).point_scores(test)[0])
    assert not np.array_equal(scores[:3000], detector.point_scores(train)[0])
    assert detector.window_energies(test, 100).shape == (3901, 100)
    (metrics,) = evaluate_point(detector, train, test, labels, anomaly_ratio=1.0).values()
    assert abs(metrics["auc_roc"] - 0.5) < 0.05 and metrics["f1"] < 0.1
    assert metrics["f1_adjusted"] > 0.9 and metrics["vus_pr"] < 0.4


def test_the_report_sets_the_papers_f1_beside_its_own_protocol_and_tsb_ads_best_beside_entities():
    from xct_estimators.bench import paper
    from xct_estimators.bench.detect.record import DetectRecord
    from xct_estimators.bench.page_tables import runs_table

    def record(protocol):
        run = {"task": "detect", "dataset": "MSL", "protocol": protocol, "model": "xctformer", "seed": 2021}
        scores = {"f1": 0.1, "f1_adjusted": 0.5, "auc_pr": 0.2, "vus_pr": 0.3}
        return DetectRecord.from_json({**run, "run": run, **scores, "fit_seconds": 1, "eval_seconds": 1})

    lines = [
        line for line in runs_table([record(p) for p in ("tslib", "point", "entity")]).splitlines() if line[:1] == "|"
    ]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {row[1]: dict(zip(header, row, strict=True)) for row in (
        [cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:])}  # fmt: skip
    f1, best = "published point-adjusted F1", "published VUS-PR"
    assert rows["tslib"][f1] == f"{paper.ANOMALY['MSL'][2] / 100:.3f}"
    assert rows["point"][f1] == rows["entity"][f1] == "-"  # the paper's number is its tslib protocol's
    assert best not in header  # TSB-AD's VUS-PR are of another protocol than the entities: beside nothing
    assert rows["tslib"]["VUS-ROC"] == "-" and rows["tslib"]["VUS-PR"] == "0.300"  # a measure not recorded
