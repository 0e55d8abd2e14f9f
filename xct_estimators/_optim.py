"""Adam's fused implementation by default, where torch has it for the parameters' device.

The default (for-loop) Adam makes about ten passes over every parameter tensor and allocates
two temporaries of its size; the fused one makes one (``benchmarks/training_parts.py`` measures
the difference). The arithmetic is Adam's, so results agree to rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

_FUSABLE = (torch.optim.Adam, torch.optim.AdamW)
#: device type -> first torch release with a fused Adam for it.
_FUSED_SINCE = {"cuda": (2, 0), "cpu": (2, 4)}
#: Arguments that choose an implementation (or need the for-loop one): the user's choice stands.
_IMPLEMENTATION_ARGS = {"fused", "foreach", "differentiable", "capturable"}


def optimizer_kwargs_with_fused(
    optimizer_cls: type, kwargs: Mapping[str, Any], parameters: Iterable[torch.Tensor]
) -> dict[str, Any]:
    """``kwargs`` plus ``fused=True`` when ``optimizer_cls`` is ``torch.optim.Adam`` or
    ``AdamW``, no implementation argument (``fused``, ``foreach``, ...) was given, and every
    parameter is a floating-point tensor on a device with a fused kernel in this torch (CUDA;
    CPU from torch 2.4). Otherwise ``kwargs`` unchanged: other optimizers and devices keep
    torch's default."""
    kwargs = dict(kwargs)
    if optimizer_cls not in _FUSABLE or _IMPLEMENTATION_ARGS & kwargs.keys():
        return kwargs
    parameters = list(parameters)
    if parameters and all(
        p.is_floating_point() and p.device.type in _FUSED_SINCE and torch.__version__ >= _FUSED_SINCE[p.device.type]
        for p in parameters
    ):
        kwargs["fused"] = True
    return kwargs
