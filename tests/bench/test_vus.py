"""VUS-PR and VUS-ROC against TSB-AD's published implementation (fixtures made by
``tests/data/vus/make_fixtures.py``), and what they must do on clear cases."""

import json
from pathlib import Path

import numpy as np
import pytest

from xct_estimators.bench.vus import vus

FIXTURES = json.loads((Path(__file__).parents[1] / "data" / "vus" / "fixtures.json").read_text())


@pytest.mark.parametrize("case", FIXTURES["cases"], ids=[c["case"] for c in FIXTURES["cases"]])
def test_values_equal_tsb_ads(case):
    got = vus(np.array(case["labels"]), np.array(case["scores"]), case["sliding_window"])
    assert got["vus_pr"] == pytest.approx(case["vus_pr"], rel=1e-9, abs=1e-12)
    assert got["vus_roc"] == pytest.approx(case["vus_roc"], rel=1e-9, abs=1e-12)


def test_a_perfect_detector_beats_noise_and_a_late_one_keeps_credit():
    labels = np.zeros(2000, dtype=int)
    labels[300:340] = labels[1200:1260] = 1
    perfect = vus(labels, labels + 0.0)
    noise = vus(labels, np.random.default_rng(0).random(2000))
    late = vus(labels, np.roll(labels, 10) + 0.0)  # flagged ten steps after each start
    assert perfect["vus_roc"] == perfect["vus_pr"] == 1.0
    # noise: VUS-PR near the (softly widened) anomaly share; VUS-ROC well above 0.5, by construction
    # (the ranges' margins and the existence reward credit scattered hits), so it is read beside random's
    assert noise["vus_pr"] < 0.2 and 0.6 < noise["vus_roc"] < 0.85
    assert noise["vus_pr"] < late["vus_pr"] < perfect["vus_pr"]
    assert noise["vus_roc"] < late["vus_roc"] < perfect["vus_roc"]


def test_refuses_what_it_cannot_score():
    with pytest.raises(ValueError, match="at least one anomalous step"):
        vus(np.zeros(10), np.arange(10.0))
    with pytest.raises(ValueError, match="differ in length: 10 and 9"):
        vus(np.ones(10), np.arange(9.0))
