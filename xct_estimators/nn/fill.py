"""Per-window linear interpolation of unobserved points: an imputation input and a baseline."""

from __future__ import annotations

import torch


def linear_fill(x: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    """Fill the unobserved points of (B, L, C) windows by linear interpolation along L.

    Each (window, channel) is interpolated from its own observed points only; before the first
    and after the last observed point the nearest observed value is repeated. A channel with no
    observed point in a window is filled with 0. Observed points are returned unchanged.
    Unobserved entries of ``x`` may hold anything, NaN included.
    """
    observed = observed.bool()
    length = x.shape[1]
    steps = torch.arange(length, device=x.device).view(1, length, 1).expand_as(x)
    # index of the nearest observed step at or before / at or after each step (-1 / L if none)
    before = _last_observed(observed, steps)
    after = length - 1 - _last_observed(observed.flip(1), steps).flip(1)
    has_before, has_after = before >= 0, after < length
    left = torch.gather(x, 1, before.clamp(0, length - 1))
    right = torch.gather(x, 1, after.clamp(0, length - 1))
    span = (after - before).clamp_min(1).to(x.dtype)
    weight = (steps - before).to(x.dtype) / span
    inner = left + weight * (right - left)
    filled = torch.where(has_before & has_after, inner, torch.where(has_before, left, right))
    filled = torch.where(has_before | has_after, filled, torch.zeros((), dtype=x.dtype, device=x.device))
    return torch.where(observed, x, filled)


def _last_observed(observed: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """The last observed step at or before each step along dim 1 (-1 where none): the running
    count of observed steps indexes a table of their positions (a cumulative max written with
    cumsum, scatter and gather, which ONNX has)."""
    count = observed.long().cumsum(dim=1)
    slot = torch.where(observed, count, torch.zeros_like(count))  # unobserved steps write slot 0
    positions = steps.new_full((steps.shape[0], steps.shape[1] + 1, steps.shape[2]), -1)
    positions = positions.scatter(1, slot, torch.where(observed, steps, torch.full_like(steps, -1)))
    return torch.gather(positions, 1, count)
