"""Shared pieces of the paper's imputation protocol (the anomaly protocols are in ``detection``)."""

from __future__ import annotations

import numpy as np

#: Imputation mask rates of the paper (Table 3).
IMPUTATION_MASK_RATES = (0.125, 0.25, 0.375, 0.5)


def random_mask(shape: tuple[int, ...], rate: float, seed: int) -> np.ndarray:
    """Boolean mask, True where a point is hidden, each point with probability ``rate``."""
    return np.random.default_rng(seed).random(shape) < rate
