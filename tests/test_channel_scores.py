"""Per-channel error scaling and channel aggregation: the math, the estimators that use it, and
the Darts scorer in ``darts.ad``'s pipelines."""

import pickle

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries
from darts.ad import FilteringAnomalyModel
from darts.models import MovingAverageFilter

from xct_estimators import XCTFormerAnomalyDetector, XCTFormerScorer
from xct_estimators.channel_scores import ErrorScale, step_scores

FAST = dict(window_length=48, patch_len=8, stride=4, n_epochs=2, random_state=0, accelerator="cpu")


def loud_and_quiet_errors(n=500, seed=0):
    """Channel 0 is hard to reconstruct (errors around 1), channel 1 easy (around 0.01); at step
    300 channel 1's error is 100 times its usual, channel 0's stays ordinary."""
    rng = np.random.default_rng(seed)
    errors = np.stack([rng.chisquare(1, n), 0.01 * rng.chisquare(1, n)], axis=1)
    errors[300, 1] = 1.0
    return errors


def test_the_papers_score_is_the_mean_of_the_raw_errors():
    errors = loud_and_quiet_errors()
    errors[5, 0] = np.nan  # unobserved: left out
    assert np.allclose(step_scores(errors, None, "none", "mean"), np.nanmean(errors, axis=1))


def test_standardising_lets_a_quiet_channel_raise_the_alarm():
    errors = loud_and_quiet_errors()
    scale = ErrorScale.of(errors[:250])  # the training part
    assert np.argmax(step_scores(errors, scale, "standardize", "max")) == 300
    assert np.argmax(step_scores(errors, None, "none", "mean")) != 300  # drowned by channel 0


def test_aggregations_are_mean_max_and_the_mean_of_the_k_largest():
    errors = np.array([[1.0, 5.0, 3.0, np.nan], [0.0, 0.0, 2.0, 4.0]])
    scale = ErrorScale(mean=np.zeros(4), std=np.ones(4))
    assert np.allclose(step_scores(errors, scale, "standardize", "max"), [5.0, 4.0])
    assert np.allclose(step_scores(errors, scale, "standardize", 2), [4.0, 3.0])
    assert np.allclose(step_scores(errors, scale, "standardize", 1), [5.0, 4.0])
    assert np.allclose(step_scores(errors, scale, "standardize", 9), [3.0, 1.5])  # k above the channels: all


def test_a_channel_constant_in_training_gets_a_bounded_scale():
    errors = np.stack([np.linspace(0, 2, 100), np.zeros(100), np.linspace(0, 4, 100)], axis=1)
    scale = ErrorScale.of(errors)
    assert scale.std[1] == pytest.approx(1e-3 * errors[:, 2].std())
    assert np.allclose(scale.mean, errors.mean(axis=0)) and np.allclose(scale.std[[0, 2]], errors.std(axis=0)[[0, 2]])


@pytest.mark.parametrize(
    "kwargs, message",
    [({"error_scaling": "zscore"}, "error_scaling must be one of"), ({"channel_aggregation": 0}, "positive integer")],
)
def test_an_unknown_scoring_is_refused_with_the_choices(kwargs, message):
    for estimator in (XCTFormerAnomalyDetector, XCTFormerScorer):
        with pytest.raises(ValueError, match=message):
            estimator(**kwargs)


def sines(n=900):
    t = np.arange(n)
    return np.stack([np.sin(t / 8), np.cos(t / 8), np.sin(t / 5)], axis=1)


def test_the_detector_scales_by_its_training_errors_and_keeps_the_papers_score():
    X = pd.DataFrame(sines())
    detector = XCTFormerAnomalyDetector(channel_aggregation="max", **FAST).fit(X)
    errors = detector.engine_.score(X.to_numpy())
    assert np.allclose(detector.error_scale_.mean, errors.mean(axis=0))
    assert np.allclose(detector.train_scores_, ((errors - errors.mean(0)) / errors.std(0)).max(axis=1), atol=1e-6)
    paper = XCTFormerAnomalyDetector(error_scaling="none", **FAST).fit(X)
    assert np.allclose(paper.transform_scores(X)["score"], paper.engine_.score(X.to_numpy()).mean(axis=1))


def test_a_detector_pickled_before_the_choice_keeps_the_papers_score():
    X = pd.DataFrame(sines())
    detector = XCTFormerAnomalyDetector(error_scaling="none", **FAST).fit(X)
    state = vars(detector).copy()
    for name in ("error_scaling", "channel_aggregation", "error_scale_"):
        del state[name]
    older = XCTFormerAnomalyDetector.__new__(XCTFormerAnomalyDetector)
    older.__setstate__(pickle.loads(pickle.dumps(state)))
    assert older.error_scaling == "none"
    assert np.array_equal(older.transform_scores(X)["score"], detector.transform_scores(X)["score"])


def test_the_scorer_in_a_darts_ad_pipeline():
    """Darts' scorer cases: unfitted scoring refused, a sequence in gives a sequence out, another
    width refused; and a ``FilteringAnomalyModel`` that fits the scorer on a filter's residuals."""
    train = TimeSeries.from_values(sines())
    values = sines(400)
    values[200:210, 0] += 2
    test = TimeSeries.from_values(values)
    with pytest.raises(ValueError, match="has not been fitted"):
        XCTFormerScorer(**FAST).score(test)
    scorer = XCTFormerScorer(channel_aggregation="max", **FAST).fit(train)
    assert [len(s) for s in scorer.score([test, test])] == [400, 400]
    with pytest.raises(ValueError, match="pass the same columns"):
        scorer.score(TimeSeries.from_values(values[:, :1]))
    model = FilteringAnomalyModel(MovingAverageFilter(window=5), [XCTFormerScorer(channel_aggregation=2, **FAST)])
    model.fit(train)
    labels = TimeSeries.from_values((np.arange(400) // 10 == 20).astype(float)[:, None])
    assert model.eval_metric(labels, test, metric="AUC_ROC")["XCTFormerScorer_w=1"] > 0.9


def test_the_scorer_with_hidden_passes_keeps_darts_scorer_cases():
    train, test = TimeSeries.from_values(sines()), TimeSeries.from_values(sines(400))
    scorer = XCTFormerScorer(mask_rate=0.25, hidden_passes=2, component_wise=True, **FAST).fit(train)
    scores = scorer.score([test, test])
    assert [s.values().shape for s in scores] == [(400, sines().shape[1])] * 2 and np.isfinite(scores[0].values()).all()
    with pytest.raises(ValueError, match="pass the same columns"):
        scorer.score(TimeSeries.from_values(sines(400)[:, :1]))
