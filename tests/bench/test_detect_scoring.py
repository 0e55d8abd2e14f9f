"""``--scoring``'s channel and local-scaling parts, and the interpolation floor, against plain numpy."""

import argparse

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from xct_estimators.bench.detect.detectors import InterpolationDetector, WindowMeanDetector
from xct_estimators.bench.detect.entities import Entity, evaluate_entities
from xct_estimators.bench.detect.protocol import evaluate_point
from xct_estimators.bench.detect.scoring import continuous_channels, scoring_list


def flags_and_a_measurement(seed=0, n_train=800, n_test=900):
    """Channel 0 a noisy measurement with a level shift over test steps 400-460; channel 1 a 0/1
    command that toggles at random (a large error wherever it does); channel 2 constant."""
    rng = np.random.default_rng(seed)

    def rows(n):
        return np.stack([rng.normal(size=n), rng.random(n) < 0.05, np.full(n, 3.0)], axis=1).astype(np.float32)

    train, test = rows(n_train), rows(n_test)
    labels = np.zeros(n_test, dtype=bool)
    labels[400:460] = True
    test[400:460, 0] += 1.5
    return train, test, labels


def smoothed(scores, span):
    window = np.ones(span)
    return np.convolve(scores, window, "same") / np.convolve(np.ones(len(scores)), window, "same")


def test_continuous_channels_leave_out_flags_and_constants_in_every_array():
    train, _, _ = flags_and_a_measurement()
    assert continuous_channels(train).tolist() == [True, False, False]
    two_valued = train.copy()
    two_valued[:, 0] = np.arange(len(train)) % 2  # two-valued here, continuous in the other array
    assert continuous_channels(two_valued, train).tolist() == [True, False, False]
    assert continuous_channels(train[:, 1:]).tolist() == [True, True]  # nothing continuous: every channel


def test_scoring_only_the_continuous_channels_is_the_numpy_rule():
    train, test, labels = flags_and_a_measurement()
    detector = WindowMeanDetector(50)
    measured = evaluate_point(detector, train, test, labels, 1.0, ["none/mean/25", "none/mean/25/continuous"])
    errors = detector.point_errors(test)[0]
    assert measured["none/mean/25/continuous"]["auc_pr"] == pytest.approx(
        average_precision_score(labels, smoothed(errors[:, 0], 25))
    )
    assert measured["none/mean/25/continuous"]["auc_pr"] > measured["none/mean/25"]["auc_pr"]  # the flags' noise gone


def test_local_scaling_divides_each_error_by_its_inputs_centred_variance():
    train, test, labels = flags_and_a_measurement(seed=1)
    test[:300, 0] *= 5  # a louder stretch: its errors are larger without being anomalous
    detector = WindowMeanDetector(40)
    measured = evaluate_point(detector, train, test, labels, 1.0, ["local/mean/20/continuous"])
    x, errors = test[:, 0].astype(np.float64), detector.point_errors(test)[0][:, 0]
    variance = np.array([x[max(t - 20, 0) : t + 20].var(ddof=1) for t in range(len(x))])  # 40 steps centred on t
    rebuilt = errors / np.maximum(variance, 1e-3 * train[:, 0].var())
    assert measured["local/mean/20/continuous"]["auc_pr"] == pytest.approx(
        average_precision_score(labels, smoothed(rebuilt, 20)), rel=1e-5
    )


def test_per_entity_a_channel_is_continuous_if_it_is_in_any_entitys_training_rows():
    first, second = flags_and_a_measurement(seed=2), flags_and_a_measurement(seed=3)
    two_valued = first[0].copy()
    two_valued[:, 0] = np.arange(len(two_valued)) % 2
    entities = [Entity("A", two_valued, first[1], first[2]), Entity("B", *second)]
    measured = evaluate_entities(InterpolationDetector(50), entities, 1.0, ["none/mean/25/continuous", "local/max"])
    expected = []
    for entity in entities:
        errors = InterpolationDetector(50).point_errors(entity.test)[0][:, 0]  # channel 0 in both entities
        expected.append(average_precision_score(entity.labels, smoothed(errors, 25)))
    assert measured["none/mean/25/continuous"]["auc_pr"] == pytest.approx(np.mean(expected))


def test_interpolation_predicts_each_point_by_its_two_neighbours():
    values = np.array([[1.0, 0.0], [3.0, 2.0], [2.0, 4.0], [7.0, 6.0]])
    errors, _ = InterpolationDetector(50).point_errors(values)
    predicted = np.array([[3.0, 2.0], [1.5, 2.0], [5.0, 4.0], [2.0, 4.0]])
    assert np.array_equal(errors, (values - predicted) ** 2)


@pytest.mark.parametrize("name", ["none/mean/100/flags", "local/median/100", "standardize/max/100/all/x"])
def test_a_bad_channel_part_or_aggregation_is_refused(name):
    with pytest.raises(argparse.ArgumentTypeError, match="scaling/aggregation\\[/span\\[/channels\\]\\]"):
        scoring_list(name)


def test_an_unknown_scaling_names_every_scaling_the_bench_takes():
    with pytest.raises(argparse.ArgumentTypeError, match="scaling .* one of \\('standardize', 'none', 'local'\\)"):
        scoring_list("locl/mean/100")
