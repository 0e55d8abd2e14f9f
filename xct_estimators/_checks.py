"""Input checks the network, the Darts and the sktime adapters share: numbers and value ranges."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np


class NotFittedError(ValueError, AttributeError):
    """A fitted attribute was read before ``fit`` (a ValueError and an AttributeError, as
    scikit-learn's and sktime's)."""


def is_positive_int(value) -> bool:
    """Any integer type (``int``, ``np.int64`` from a grid, ...) >= 1; never a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def positive_int(value, name: str) -> int:
    """``value`` as a plain ``int``, or a ValueError naming ``name``."""
    if not is_positive_int(value):
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def plain_number(value):
    """numpy scalars (``np.int64`` from a grid, ``np.float32``) as Python ``int``/``float``; all
    else unchanged. Bools stay bools."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


#: Largest |value| the network takes as it is. Training and inference run in float32, and instance
#: normalisation sums squared deviations over a window: past ~1e19 the squares overflow, and well
#: before that a window's sum does. 1e17 keeps every window length of the paper finite.
MAX_ABS_VALUE = 1e17


def check_value_range(values: np.ndarray, names: Sequence, where: str) -> None:
    """Refuse channels whose values would overflow the network's float32 statistics (all-NaN
    outputs otherwise), naming them and the fix. NaNs are ignored (missing points)."""
    values = np.asarray(values)
    if values.ndim == 1:
        values = values[:, None]
    with np.errstate(invalid="ignore"):
        peak = np.nanmax(np.abs(values.astype(np.float64, copy=False)), axis=0, initial=0.0)
    too_large = np.flatnonzero(peak > MAX_ABS_VALUE)
    if len(too_large):
        channels = ", ".join(f"{names[i]!r} (|value| up to {peak[i]:.3g})" for i in too_large[:5])
        raise ValueError(
            f"{where}: channel(s) {channels} exceed {MAX_ABS_VALUE:.0e}: the network computes in float32 and "
            "its instance statistics would overflow to NaN. Scale the data first (e.g. darts' Scaler, "
            "sklearn's StandardScaler, or divide by a constant)."
        )
