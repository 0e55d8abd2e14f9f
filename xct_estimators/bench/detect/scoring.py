"""``--scoring``: how a reconstructor's per-channel errors become a step's score
(:mod:`xct_estimators.channel_scores`), named ``scaling/aggregation[/span]``: ``none/mean`` is the
paper's score, ``standardize/max`` standardises each channel's error by its training errors and
takes the largest, ``standardize/3`` the mean of the three largest; a third part, as in
``standardize/max/100``, smooths the step scores by a centred moving mean over that many steps
(an anomaly lasts many steps, a reconstruction's noise does not: Telemanom's smoothed errors,
Hundman et al., KDD 2018)."""

from __future__ import annotations

import argparse

import numpy as np

from ...channel_scores import Aggregation, ErrorScale, check_scoring, step_scores
from ..option_types import csv

#: The paper's score: raw squared errors averaged over the channels.
PAPER_SCORING = "none/mean"


def parse_scoring(name: str) -> tuple[str, Aggregation, int]:
    """``"standardize/3"`` -> ``("standardize", 3, 1)``, ``"none/mean/100"`` -> ``("none", "mean", 100)``;
    ``ValueError`` naming the choices."""
    scaling, _, rest = name.partition("/")
    aggregation, _, span = rest.partition("/")
    parsed = int(aggregation) if aggregation.isdigit() else aggregation
    check_scoring(scaling, parsed)
    if span and not (span.isdigit() and int(span) >= 1):
        raise ValueError(f"the smoothing span (a third part) must be a positive number of steps, got {span!r}.")
    return scaling, parsed, int(span or 1)


def moving_mean(scores: np.ndarray, span: int) -> np.ndarray:
    """Each step's mean over the ``span`` steps centred on it (fewer at the ends; NaN steps left out)."""
    if span <= 1:
        return scores
    import pandas as pd  # lazily: the CLI parses --scoring before any heavy import

    return pd.Series(scores).rolling(span, center=True, min_periods=1).mean().to_numpy()


def scoring_list(text: str) -> list[str]:
    """``--scoring``'s parser: comma-separated scoring names, each checked."""
    names = list(dict.fromkeys(csv(str)(text)))
    for name in names:
        try:
            parse_scoring(name)
        except ValueError as error:
            raise argparse.ArgumentTypeError(
                f"{name!r}: {error} Write a scoring as scaling/aggregation[/span], e.g. none/mean, "
                "standardize/max or standardize/max/100."
            ) from None
    return names


def scored(detector, train, test, scorings) -> dict:
    """scoring -> (train scores, test scores, test windows) of a fitted bench detector, from one
    reconstruction of each array; the error scale comes from the training array. Detectors without
    per-channel errors (Darts' scorers, random) give their own point scores under every scoring."""
    if not hasattr(detector, "point_errors"):
        train_scores, _ = detector.point_scores(train)
        test_scores, n_windows = detector.point_scores(test)
        return {scoring: (train_scores, test_scores, n_windows) for scoring in scorings}
    train_errors, _ = detector.point_errors(train)
    test_errors, n_windows = detector.point_errors(test)
    scale = ErrorScale.of(train_errors)
    out = {}
    for scoring in scorings:
        scaling, aggregation, span = parse_scoring(scoring)
        train_scores, test_scores = (
            moving_mean(step_scores(e, scale, scaling, aggregation), span) for e in (train_errors, test_errors)
        )
        out[scoring] = (train_scores, test_scores, n_windows)
    return out
