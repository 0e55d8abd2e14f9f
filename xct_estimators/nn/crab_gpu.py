"""Whether CRAB's Triton kernels (:mod:`.triton_crab`) run for a CUDA tensor.

They need Triton (shipped with PyTorch's CUDA builds on Linux), a GPU of compute capability
8.0 or newer and inputs its tensor cores multiply (:func:`on_tensor_cores`).
Elsewhere, or with ``XCT_TRITON=0``, CUDA tensors take the chunked PyTorch path of
:mod:`.fused`: the same results. Triton is imported on first use
only, so the package imports and runs without it.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType
from typing import Optional

import torch

from . import tf32

SWITCH = "XCT_TRITON"

_log = logging.getLogger(__name__)
_loaded: dict[str, Optional[object]] = {}


def module() -> Optional[ModuleType]:
    """:mod:`.triton_crab`, or None where Triton is switched off or cannot be imported
    (:func:`unavailable_reason` says why)."""
    if "module" not in _loaded:
        _loaded["module"], _loaded["reason"] = None, None
        if os.environ.get(SWITCH, "1") == "0":
            _loaded["reason"] = f"switched off by {SWITCH}=0"
        else:
            try:
                from . import triton_crab

                _loaded["module"] = triton_crab
            except ImportError as error:
                _loaded["reason"] = f"{type(error).__name__}: {error}"
                _log.warning(
                    "xct-estimators: Triton is unavailable (%s); CRAB runs as PyTorch operations on the GPU: "
                    "same results, slower. Install PyTorch's CUDA build (it ships Triton), or set %s=0 to skip "
                    "this message.",
                    _loaded["reason"],
                    SWITCH,
                )
    return _loaded["module"]  # type: ignore[return-value]


def unavailable_reason() -> Optional[str]:
    """Why :func:`module` returned None (None when it loaded or was not tried yet)."""
    return _loaded.get("reason")  # type: ignore[return-value]


def on_tensor_cores(dtype: torch.dtype) -> bool:
    """Whether the kernels' products for ``dtype`` run on tensor cores: half precision, or float32
    where TF32 is allowed. Full-precision float32 products in Triton run without them, far slower
    than cuBLAS (the project's GPU check measured it), so those inputs take the chunked path."""
    return dtype in (torch.float16, torch.bfloat16) or (dtype == torch.float32 and tf32.allowed())


def usable(q: torch.Tensor) -> bool:
    """Whether the Triton kernels take CRAB's inputs like ``q`` (a CUDA tensor). Not under
    ``torch.use_deterministic_algorithms(True)``: their backward adds dQ and dM atomically, in an
    order that varies (and the forward goes with it, so that both passes find the same minimum)."""
    if not q.is_cuda or module() is None or q.dtype not in module().DTYPES or not on_tensor_cores(q.dtype):
        return False
    if torch.are_deterministic_algorithms_enabled():
        return False
    major, _ = torch.cuda.get_device_capability(q.device)
    return major >= 8  # bfloat16 and TF32 (float32, and fp16, computed in float32) need Ampere
