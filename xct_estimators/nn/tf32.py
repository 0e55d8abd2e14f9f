"""TF32 for float32 products on CUDA. Torch 2.9 added a switch (``fp32_precision``) and refuses to
read the older one (``allow_tf32``) once a user set the new one (a ``RuntimeError``): the package
reads the new one where it exists and writes through here only."""

from __future__ import annotations

import torch


def allowed() -> bool:
    """Whether float32 matrix products on CUDA may use TF32."""
    matmul = torch.backends.cuda.matmul
    try:
        return matmul.fp32_precision == "tf32"
    except AttributeError:  # a torch before the switch
        return bool(matmul.allow_tf32)


def allow(on: bool) -> None:
    """Let float32 matrix products and convolutions on CUDA use TF32 (``on``), or keep them exact.
    Written through the older switch while torch has it: after that write both switches read back
    (the reverse order would make every later read of ``allow_tf32``, ours or a library's, raise)."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = on
    except AttributeError:  # a torch without the older switch
        precision = "tf32" if on else "ieee"
        torch.backends.cuda.matmul.fp32_precision = torch.backends.cudnn.conv.fp32_precision = precision
