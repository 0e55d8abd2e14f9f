"""A step's anomaly score from its per-channel reconstruction errors: each channel's error put on
a common scale, then aggregated over the channels (:data:`SCORING_PARAMETERS` says how and why)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Union

import numpy as np

from .nn.hyperparameters import Hyperparameter

ERROR_SCALINGS = ("standardize", "none")
#: The estimators' defaults, fixed from the training side alone (no test labels): one scale for all channels.
DEFAULT_ERROR_SCALING, DEFAULT_CHANNEL_AGGREGATION = "standardize", "mean"
#: The paper's score, raw errors averaged over the channels (and that of estimators saved before the choice).
PAPER_SCORE = {"error_scaling": "none", "channel_aggregation": "mean"}
#: A channel's error spread counts as at least this share of the widest channel's: a channel
#: constant in training would otherwise turn any later change into an unbounded score.
MIN_RELATIVE_SPREAD = 1e-3

Aggregation = Union[str, int]

#: The scoring settings of the Darts scorer and the sktime detector, documented once for both.
SCORING_PARAMETERS = {h.name: h for h in (
    Hyperparameter("error_scaling", DEFAULT_ERROR_SCALING, '{"standardize", "none"}', '``"standardize"``: each '
       "channel's error minus its mean, divided by its standard deviation, both over the errors on the data the "
       "model was fitted on, so that channels that are hard to reconstruct do not drown the others. "
       '``"none"``: raw squared errors (the paper). ' "The default was fixed from the training data's view alone."),
    Hyperparameter("channel_aggregation", DEFAULT_CHANNEL_AGGREGATION, '{"mean", "max"} or int', "How a step's "
       "channel scores become one: their mean (the paper), their maximum (one unusual channel suffices), or an "
       "integer ``k``: the mean of the ``k`` largest."),
)}  # fmt: skip


def check_scoring(error_scaling: str, channel_aggregation: Aggregation) -> None:
    """Refuse an unknown scaling or aggregation, naming the choices."""
    if error_scaling not in ERROR_SCALINGS:
        raise ValueError(f"error_scaling must be one of {ERROR_SCALINGS}, got {error_scaling!r}.")
    integer = isinstance(channel_aggregation, numbers.Integral) and not isinstance(channel_aggregation, bool)
    if not (channel_aggregation in ("mean", "max") or (integer and channel_aggregation >= 1)):
        raise ValueError(
            "channel_aggregation must be 'mean', 'max' or a positive integer k (the mean of the k largest "
            f"channel scores), got {channel_aggregation!r}."
        )


@dataclass(frozen=True)
class ErrorScale:
    """Each channel's error mean and spread on the data a model was fitted on (:meth:`of` builds it).

    Attributes
    ----------
    mean : np.ndarray
        Each channel's mean error.
    std : np.ndarray
        Each channel's error standard deviation, at least :data:`MIN_RELATIVE_SPREAD` of the widest.
    """

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def of(cls, errors: np.ndarray) -> ErrorScale:
        """From (time, channels) errors; NaN (unobserved) points are left out.

        Parameters
        ----------
        errors : np.ndarray
            Squared reconstruction errors of the training data, (time, channels).

        Returns
        -------
        ErrorScale
        """
        mean = np.nanmean(errors, axis=0)
        std = np.nanstd(errors, axis=0)
        floor = max(MIN_RELATIVE_SPREAD * float(np.nanmax(std)), np.finfo(np.float32).tiny)
        return cls(np.nan_to_num(mean), np.maximum(np.nan_to_num(std), floor))


def step_scores(
    errors: np.ndarray, scale: ErrorScale | None, error_scaling: str, channel_aggregation: Aggregation
) -> np.ndarray:
    """One score per step from (..., channels) errors; NaN errors (unobserved points) are left out.

    Parameters
    ----------
    errors : np.ndarray
        Squared reconstruction errors, channels last (``ReconstructionEngine.score``'s output).
    scale : ErrorScale or None
        The channels' error scale on the training data; unused with ``error_scaling="none"``.
    error_scaling : {"standardize", "none"}
        Standardise each channel's error by ``scale``, or keep the raw errors (the paper).
    channel_aggregation : {"mean", "max"} or int
        The mean over channels (the paper), the maximum, or the mean of the ``k`` largest.

    Returns
    -------
    np.ndarray
        ``errors``' shape without its last axis.
    """
    errors = scaled(errors, scale, error_scaling)
    if channel_aggregation == "mean":
        return np.nanmean(errors, axis=-1)
    if channel_aggregation == "max":
        return np.nanmax(errors, axis=-1)
    k = min(int(channel_aggregation), errors.shape[-1])
    largest = -np.sort(-np.nan_to_num(errors, nan=-np.inf), axis=-1)[..., :k]  # NaN last
    largest = np.where(np.isfinite(largest), largest, np.nan)
    return np.nanmean(largest, axis=-1)


def scaled(errors: np.ndarray, scale: ErrorScale | None, error_scaling: str) -> np.ndarray:
    """Each channel's errors on ``scale`` (``"standardize"``), or as they are (``"none"``)."""
    return (errors - scale.mean) / scale.std if error_scaling == "standardize" else errors
