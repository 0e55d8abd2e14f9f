"""The network's dropouts on CPU: activations with a hashed mask, attention weights with a
uniform-threshold mask.

torch's dropout on CPU draws a Bernoulli tensor, keeps it for the backward pass and multiplies
by it twice. For activations, the C++ kernel
(:mod:`.crab_kernel`) keeps entry i of the flat tensor when a counter-based hash of
(seed, i) clears the threshold (the hash of the attention-weight dropout, :func:`.fused.keep_masks`)
and scales the kept ones by 1 / (1 - p), all in one pass; the backward pass applies the same
function to the gradient. Each entry is kept with probability 1 - p (p rounded to 1/65536), as
with torch's dropout; the seed comes from torch's global generator, so ``torch.manual_seed``
makes runs repeatable.

On other devices, for other dtypes (bf16 under autocast) and where the kernel cannot be built,
torch's own dropout runs: the same distribution, another random stream.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from . import crab_kernel, ops

_HASHED_DTYPES = (torch.float32, torch.float64)
_MAX_ELEMENTS = 2**32  # the hash indexes entries with 32 bits


@torch.compiler.assume_constant_result
def _kernel_available() -> bool:
    return crab_kernel.load() is not None


def hashed_dropout_applies(x: torch.Tensor) -> bool:
    """Whether :func:`dropout` takes the hashed kernel for ``x`` (else torch's dropout)."""
    return x.device.type == "cpu" and x.dtype in _HASHED_DTYPES and x.numel() < _MAX_ELEMENTS and _kernel_available()


def dropout(x: torch.Tensor, p: float, training: bool, seed: int | None = None) -> torch.Tensor:
    """``F.dropout(x, p, training)`` with the hashed mask where it applies. ``seed`` fixes the
    mask (default: drawn from torch's global generator)."""
    if not training or p == 0.0:
        return x
    if not 0.0 < p < 1.0 or not hashed_dropout_applies(x):
        return F.dropout(x, p, training)
    return ops.scaled_keep(x, float(p), ops.seed_tensor(p, seed))


class Dropout(nn.Dropout):
    """``nn.Dropout`` (same arguments, same distribution) with the hashed mask on CPU."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.inplace:
            return super().forward(x)
        return dropout(x, self.p, self.training)


class WeightDropout(nn.Dropout):
    """Dropout for the plain path's attention-weight tensors: on CPU a uniform-threshold keep
    mask (cheaper to draw than torch's Bernoulli kernel at these sizes); elsewhere ``nn.Dropout``.
    Same distribution either way. (The fused path draws its own mask: :func:`.fused.keep_masks`.)"""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0 or x.device.type != "cpu":
            return super().forward(x)
        keep = torch.rand_like(x) >= self.p
        return x * keep * (1.0 / (1.0 - self.p))
