"""``--scoring``: how a reconstructor's per-channel errors become a step's score
(:mod:`xct_estimators.channel_scores`), named ``scaling/aggregation``: ``none/mean`` is the
paper's score, ``standardize/max`` standardises each channel's error by its training errors and
takes the largest, ``standardize/3`` the mean of the three largest."""

from __future__ import annotations

import argparse

from ...channel_scores import Aggregation, ErrorScale, check_scoring, step_scores
from ..option_types import csv

#: The paper's score: raw squared errors averaged over the channels.
PAPER_SCORING = "none/mean"


def parse_scoring(name: str) -> tuple[str, Aggregation]:
    """``"standardize/3"`` -> ``("standardize", 3)``; ``ValueError`` naming the choices."""
    scaling, _, aggregation = name.partition("/")
    check_scoring(scaling, int(aggregation) if aggregation.isdigit() else aggregation)
    return scaling, int(aggregation) if aggregation.isdigit() else aggregation


def scoring_list(text: str) -> list[str]:
    """``--scoring``'s parser: comma-separated scoring names, each checked."""
    names = list(dict.fromkeys(csv(str)(text)))
    for name in names:
        try:
            parse_scoring(name)
        except ValueError as error:
            raise argparse.ArgumentTypeError(
                f"{name!r}: {error} Write a scoring as scaling/aggregation, e.g. none/mean or standardize/max."
            ) from None
    return names


def scored(detector, train, test, scoring: str):
    """(train scores, test scores, test windows) of a fitted bench detector under ``scoring``; the
    error scale comes from the training array. Detectors without per-channel errors (Darts'
    scorers, random) and the paper's scoring give their own point scores."""
    if scoring == PAPER_SCORING or not hasattr(detector, "point_errors"):
        train_scores, _ = detector.point_scores(train)
        test_scores, n_windows = detector.point_scores(test)
        return train_scores, test_scores, n_windows
    scaling, aggregation = parse_scoring(scoring)
    train_errors, _ = detector.point_errors(train)
    test_errors, n_windows = detector.point_errors(test)
    scale = ErrorScale.of(train_errors)
    return (
        step_scores(train_errors, scale, scaling, aggregation),
        step_scores(test_errors, scale, scaling, aggregation),
        n_windows,
    )
