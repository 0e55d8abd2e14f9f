"""``--scoring``: how a reconstructor's per-channel errors become a step's score
(:mod:`xct_estimators.channel_scores`), named ``scaling/aggregation[/span[/channels]]`` as
docs/benchmarks.md (Anomaly detection) describes; each part is fixed from the training data alone."""

from __future__ import annotations

import argparse

import numpy as np

from ...channel_scores import ERROR_SCALINGS, MIN_RELATIVE_SPREAD, Aggregation, ErrorScale, check_scoring, step_scores
from ..option_types import csv

#: The paper's score: raw squared errors averaged over the channels.
PAPER_SCORING = "none/mean"


#: ``--scoring``'s first part: the estimators' error scalings, and ``local`` (bench only: it reads the input).
SCALINGS = (*ERROR_SCALINGS, "local")
#: ``--scoring``'s fourth part: which channels' errors are scored.
CHANNEL_CHOICES = ("all", "continuous")


def parse_scoring(name: str) -> tuple[str, Aggregation, int, str]:
    """``"standardize/3"`` -> ``("standardize", 3, 1, "all")``, ``"none/mean/100/continuous"`` ->
    ``("none", "mean", 100, "continuous")``; ``ValueError`` naming the choices."""
    scaling, _, rest = name.partition("/")
    aggregation, _, rest = rest.partition("/")
    span, _, channels = rest.partition("/")
    parsed = int(aggregation) if aggregation.isdigit() else aggregation
    if scaling not in SCALINGS:
        raise ValueError(f"the scaling (a first part) must be one of {SCALINGS}, got {scaling!r}.")
    check_scoring("none" if scaling == "local" else scaling, parsed)  # local: raw errors over the input's variance
    if span and not (span.isdigit() and int(span) >= 1):
        raise ValueError(f"the smoothing span (a third part) must be a positive number of steps, got {span!r}.")
    if channels and channels not in CHANNEL_CHOICES:
        raise ValueError(f"the channels (a fourth part) must be one of {CHANNEL_CHOICES}, got {channels!r}.")
    return scaling, parsed, int(span or 1), channels or "all"


def local_variance(values: np.ndarray, span: int, floor: np.ndarray) -> np.ndarray:
    """Each point's channel variance over the ``span`` steps centred on it, at least ``floor``."""
    import pandas as pd  # lazily, as in moving_mean

    variance = pd.DataFrame(values).rolling(span, center=True, min_periods=2).var().bfill().to_numpy()
    return np.maximum(np.nan_to_num(variance), floor)


def continuous_channels(*arrays: np.ndarray) -> np.ndarray:
    """Which columns take more than two distinct values in at least one of ``arrays`` (each
    standardised on its own, so a 0/1 flag stays two-valued in each); every column if none does."""
    keep = np.array(
        [any(np.unique(a[~np.isnan(a[:, c]), c]).size > 2 for a in arrays) for c in range(arrays[0].shape[1])]
    )
    return keep if keep.any() else np.ones_like(keep)


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
                f"{name!r}: {error} Write a scoring as scaling/aggregation[/span[/channels]], e.g. none/mean, "
                "standardize/max, standardize/max/100 or none/mean/100/continuous."
            ) from None
    return names


def scored(detector, train, test, scorings, continuous=None) -> dict:
    """scoring -> (train scores, test scores, test windows) of a fitted bench detector, from one
    reconstruction of each array; the error scale comes from the training array, the continuous
    channels are ``continuous`` (a mask; default :func:`continuous_channels` of ``train``, when a
    scoring asks). Detectors without per-channel errors (Darts' scorers, random) give their own
    point scores under every scoring."""
    if not hasattr(detector, "point_errors"):
        train_scores, _ = detector.point_scores(train)
        test_scores, n_windows = detector.point_scores(test)
        return {scoring: (train_scores, test_scores, n_windows) for scoring in scorings}
    train_errors, _ = detector.point_errors(train)
    test_errors, n_windows = detector.point_errors(test)
    out = {}
    for scoring in scorings:
        scaling, aggregation, span, channels = parse_scoring(scoring)
        if channels == "continuous" and continuous is None:
            continuous = continuous_channels(train)
        picked = continuous if channels == "continuous" else slice(None)
        errors = (train_errors[:, picked], test_errors[:, picked])
        if scaling == "local":  # relative to how much the input itself moves there
            values = (train[:, picked], test[:, picked])
            floor = MIN_RELATIVE_SPREAD * np.maximum(np.nanvar(values[0], axis=0), np.finfo(np.float32).tiny)
            length = detector.settings["window_length"]
            errors = tuple(e / local_variance(v, length, floor) for e, v in zip(errors, values, strict=True))
            scaling = "none"
        scale = ErrorScale.of(errors[0])
        train_scores, test_scores = (moving_mean(step_scores(e, scale, scaling, aggregation), span) for e in errors)
        out[scoring] = (train_scores, test_scores, n_windows)
    return out
