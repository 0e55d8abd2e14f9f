"""Instance normalisation per window and channel (RevIN without affine), undone on output."""

from __future__ import annotations

from typing import Optional

import torch

NORM_EPS = 1e-5


def instance_stats(x: torch.Tensor, observed: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and std of (B, L, C) windows over L, each (B, 1, C); biased variance, eps in sqrt.

    With ``observed`` (same shape, true/1 where a value is observed) both statistics use the
    observed points only; a channel with no observed point gets mean 0 and std sqrt(eps).
    """
    if observed is None:
        mean = x.mean(dim=1, keepdim=True)
        var = x.var(dim=1, keepdim=True, unbiased=False)
    else:
        observed = observed.bool()
        count = observed.sum(dim=1, keepdim=True).clamp_min(1).to(x.dtype)
        mean = torch.where(observed, x, 0.0).sum(dim=1, keepdim=True) / count
        var = torch.where(observed, x - mean, 0.0).square().sum(dim=1, keepdim=True) / count
    return mean, torch.sqrt(var + NORM_EPS)
