"""The per-entity protocol and ``--scoring`` against a plain-numpy rebuild of their rules."""

import argparse
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from xct_estimators.bench.detect.detectors import WindowMeanDetector
from xct_estimators.bench.detect.entities import evaluate_entities, load_entities, training_rows
from xct_estimators.bench.detect.protocol import evaluate_point

LENGTHS = ((400, 500), (300, 450), (500, 600))  # (train, test) rows of each entity


def write_entities(root, channels=3, lengths=LENGTHS, anomalies=(True, False, True)):
    """An MSL-shaped folder: entities of different scales concatenated, and their table."""
    rng = np.random.default_rng(0)
    folder = root / "MSL"
    folder.mkdir(parents=True)
    trains, tests, labels, rows = [], [], [], []
    for i, ((n_train, n_test), anomalous) in enumerate(zip(lengths, anomalies, strict=True)):
        scale, t = 10.0**i, np.arange(n_train + n_test)[:, None]
        series = scale * (np.sin(t / (6 + 3 * np.arange(channels))) + 0.1 * rng.normal(size=(len(t), channels)))
        label = np.zeros(n_test, dtype=bool)
        if anomalous:
            series[n_train + 200 : n_train + 230, i % channels] += 3 * scale
            label[200:230] = True
        trains.append(series[:n_train])
        tests.append(series[n_train:])
        labels.append(label)
        rows.append([f"E-{i}", sum(len(x) for x in trains[:-1]), n_train, sum(len(x) for x in tests[:-1]), n_test])
    np.save(folder / "MSL_train.npy", np.concatenate(trains).astype(np.float32))
    np.save(folder / "MSL_test.npy", np.concatenate(tests).astype(np.float32))
    np.save(folder / "MSL_test_label.npy", np.concatenate(labels).astype(np.float32))
    pd.DataFrame(rows, columns=["chan_id", "train_start", "train_len", "test_start", "test_len"]).to_csv(
        folder / "MSL_channels.csv", index=False
    )
    return trains, tests, labels


def test_each_entity_is_standardised_on_its_own_training_rows(tmp_path):
    trains, tests, labels = write_entities(tmp_path)
    entities = load_entities("MSL", tmp_path)
    assert [e.name for e in entities] == ["E-0", "E-1", "E-2"]
    for entity, train, test, label in zip(entities, trains, tests, labels, strict=True):
        assert np.allclose(entity.train.mean(axis=0), 0, atol=1e-5) and np.allclose(
            entity.train.std(axis=0), 1, atol=1e-4
        )
        expected = (test - train.mean(axis=0)) / train.std(axis=0)
        assert np.allclose(entity.test, expected, atol=1e-4) and np.array_equal(entity.labels, label)
    assert len(training_rows(entities)) == sum(len(t) for t in trains)


def rebuilt_entity_measures(entities, scoring_max):
    """Per entity with an anomaly: window-mean errors, standardised by its training errors and
    maxed over channels (or raw and averaged), AUC-PR and AUC-ROC; then averaged."""
    detector = WindowMeanDetector(100)
    aucs = []
    for entity in entities:
        if not entity.labels.any():
            continue
        train_errors, _ = detector.point_errors(entity.train)
        test_errors, _ = detector.point_errors(entity.test)
        if scoring_max:
            z = (test_errors - train_errors.mean(axis=0)) / train_errors.std(axis=0)
            scores = z.max(axis=1)
        else:
            scores = test_errors.mean(axis=1)
        aucs.append((average_precision_score(entity.labels, scores), roc_auc_score(entity.labels, scores)))
    return np.array(aucs)  # (entities with an anomaly, [AUC-PR, AUC-ROC])


@pytest.mark.parametrize("scoring", ["none/mean", "standardize/max"])
def test_entity_measures_match_a_plain_numpy_rebuild(tmp_path, scoring):
    write_entities(tmp_path)
    entities = load_entities("MSL", tmp_path)
    (metrics,) = evaluate_entities(WindowMeanDetector(100), entities, anomaly_ratio=1.0, scorings=[scoring]).values()
    assert metrics["n_entities"] == 2  # the entity without an anomaly is left out
    each = rebuilt_entity_measures(entities, scoring_max=scoring == "standardize/max")
    auc_pr, auc_roc = each.mean(axis=0)
    assert metrics["auc_pr"] == pytest.approx(auc_pr) and metrics["auc_roc"] == pytest.approx(auc_roc)
    named = [e.name for e in entities if e.labels.any()]
    assert list(metrics["per_entity"]) == named  # each entity's own measures, in the table's order
    found = [[metrics["per_entity"][name][key] for key in ("auc_pr", "auc_roc")] for name in named]
    np.testing.assert_allclose(found, each)
    vus = [metrics["per_entity"][name]["vus_pr"] for name in named]
    assert metrics["vus_pr"] == pytest.approx(np.mean(vus))


def noise_with_an_anomaly(seed, n_train, n_test, anomaly, channel, shift):
    """Standard-normal training and test rows; ``shift`` added to one channel over ``anomaly``."""
    rng = np.random.default_rng(seed)
    train, test = (rng.normal(size=(n, 3)).astype(np.float32) for n in (n_train, n_test))
    labels = np.zeros(n_test, dtype=bool)
    labels[anomaly] = True
    test[anomaly, channel] += shift
    return train, test, labels


def test_the_papers_point_scoring_is_unchanged_by_the_scoring_option():
    train, test, labels = noise_with_an_anomaly(1, 800, 900, slice(300, 340), channel=2, shift=4)
    detector = WindowMeanDetector(100)
    measured = evaluate_point(detector, train, test, labels, 1.0, ["none/mean", "standardize/max"])
    paper = measured["none/mean"]
    scores, _ = detector.point_scores(test)  # the score before --scoring existed
    assert paper["auc_roc"] == roc_auc_score(labels, scores) and paper["auc_pr"] == average_precision_score(
        labels, scores
    )
    assert measured["standardize/max"]["auc_roc"] != paper["auc_roc"]


def test_a_missing_or_foreign_entity_table_is_refused_with_the_fix(tmp_path):
    write_entities(tmp_path)
    table = tmp_path / "MSL" / "MSL_channels.csv"
    rows = pd.read_csv(table)
    rows.loc[1, "train_len"] += 5
    rows.to_csv(table, index=False)
    with pytest.raises(ValueError, match="do not tile the 1200 rows of MSL's train array"):
        load_entities("MSL", tmp_path)
    table.write_text("")
    with pytest.raises(ValueError, match="MSL_channels.csv is not a readable table .*columns chan_id"):
        load_entities("MSL", tmp_path)
    table.write_text(",".join(rows.columns) + "\n")
    with pytest.raises(ValueError, match="MSL_channels.csv lists no entity: restore it"):
        load_entities("MSL", tmp_path)
    table.unlink()
    with pytest.raises(FileNotFoundError, match="--protocol entity needs .*MSL_channels.csv"):
        load_entities("MSL", tmp_path)


def run_detect(tmp_path, *options):
    argv = [sys.executable, "-m", "xct_estimators.bench", "detect", "--data-dir", str(tmp_path), "--output",
            str(tmp_path / "out"), "--no-progress", *options]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def test_the_command_records_each_protocol_and_scoring_and_refuses_an_unknown_one(tmp_path):
    write_entities(tmp_path)
    bad = run_detect(tmp_path, "--models", "window_mean", "--scoring", "standardize/median")
    assert bad.returncode == 2 and "'standardize/median': channel_aggregation must be" in bad.stderr
    long = run_detect(tmp_path, "--models", "window_mean", "--protocol", "entity", "--window-length", "350")
    assert (
        long.returncode == 2
        and "--window-length 350 is longer than MSL's entity E-1's training rows (300 rows): pass at most 300"
        in long.stderr
    )
    assert not (tmp_path / "out" / "results.jsonl").exists()
    done = run_detect(tmp_path, "--models", "window_mean,random", "--protocol", "point,entity", "--scoring",
                      "none/mean,standardize/max")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    runs = {(r["model"], r["protocol"], r["settings"].get("scoring")) for r in records}
    assert runs == {
        *(("window_mean", p, s) for p in ("point", "entity") for s in (None, "standardize/max")),
        ("random", "point", None),
        ("random", "entity", None),  # a detector without per-channel errors scores its own way
    }
    assert all(r["n_entities"] == 2 for r in records if r["protocol"] == "entity")
    points = run_detect(tmp_path, "--models", "interpolation", "--protocol", "tslib,entity", "--scoring",
                        "none/mean/50/continuous")  # fmt: skip
    assert points.returncode == 0 and "skip: interpolation scores points, not windows" in points.stdout
    assert "already in results" not in points.stdout
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [(r["protocol"], r["settings"]["scoring"]) for r in records if r["model"] == "interpolation"] == [
        ("entity", "none/mean/50/continuous")
    ]


def test_a_smoothing_span_is_a_centred_moving_mean_of_the_step_scores():
    train, test, labels = noise_with_an_anomaly(2, 600, 700, slice(300, 360), channel=1, shift=2)
    detector = WindowMeanDetector(50)
    measured = evaluate_point(detector, train, test, labels, 1.0, ["standardize/max/25"])["standardize/max/25"]
    train_errors, test_errors = detector.point_errors(train)[0], detector.point_errors(test)[0]
    z = (test_errors - train_errors.mean(axis=0)) / train_errors.std(axis=0)
    window = np.ones(25)  # 12 steps either side, fewer at the ends
    smoothed = np.convolve(z.max(axis=1), window, "same") / np.convolve(np.ones(len(z)), window, "same")
    assert measured["auc_pr"] == pytest.approx(average_precision_score(labels, smoothed))
    assert measured["auc_roc"] == pytest.approx(roc_auc_score(labels, smoothed))


@pytest.mark.parametrize("name", ["standardize/max/0", "standardize/max/x", "none/mean/2.5"])
def test_a_bad_smoothing_span_is_refused_with_the_form(name):
    from xct_estimators.bench.detect.scoring import scoring_list

    form = "smoothing span .* positive number of steps.*scaling/aggregation\\[/span\\[/channels\\]\\]"
    with pytest.raises(argparse.ArgumentTypeError, match=form):
        scoring_list(name)
