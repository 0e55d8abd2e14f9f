"""AbsAct, the paper's replacement for softmax, and its stabilisers (App. A)."""

from __future__ import annotations

import torch

# (a + eps) / (sum |a + eps| + delta); csrc/crab.cpp holds the same two numbers.
ABSACT_EPS = 1e-4
ABSACT_DELTA = 1e-8
#: The activations the fused CRAB chain computes (the others take the plain path).
FUSED_ACTIVATIONS = ("absact", "absact_clipped")


def abs_act(scores: torch.Tensor) -> torch.Tensor:
    """AbsAct: signed row-wise normalisation by the absolute sum, replacing softmax.

    ``AbsAct(a)_ij = (a_ij + 1e-4) / (sum_k |a_ik + 1e-4| + 1e-8)`` along the last axis.
    Every row has L1 norm below one, so the Frobenius norm of an N-row matrix is at most
    sqrt(N) (the paper's App. A.1), and the result is invariant to positive scaling of the
    scores up to the two stabilisers (App. A.2).
    """
    shifted = scores + ABSACT_EPS
    return shifted / (shifted.abs().sum(dim=-1, keepdim=True) + ABSACT_DELTA)
