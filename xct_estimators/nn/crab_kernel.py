"""The C++ kernel for CRAB's elementwise chain on CPU (``csrc/crab.cpp``).

It is compiled on first use with PyTorch's extension builder (a C++ compiler and ``ninja``
needed, once per machine and torch version: the build is cached under
``TORCH_EXTENSIONS_DIR``, by default ``~/.cache/torch_extensions``). Where it cannot be built,
:mod:`xct_estimators.nn.fused` runs the same chain as PyTorch operations, with the same results
and dropout masks, only slower. ``XCT_CRAB_KERNEL=0`` turns the kernel off.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Optional

import torch

SOURCE = Path(__file__).parent / "csrc" / "crab.cpp"
SWITCH = "XCT_CRAB_KERNEL"

_log = logging.getLogger(__name__)
_loaded: dict[str, object] = {}


def _capability_flags() -> list[str]:
    """Vector instructions for the compiler where this CPU has them (the build is cached per
    flag set, so a cluster of mixed CPUs gets one build each)."""
    capability = torch.backends.cpu.get_cpu_capability()
    if capability in ("AVX2", "AVX512"):
        return ["-mavx2", "-mfma"]
    return []


def load() -> Optional[ModuleType]:
    """The compiled kernel, or None where it is switched off or cannot be built (see
    :func:`unavailable_reason`)."""
    if "module" not in _loaded:
        _loaded["module"], _loaded["reason"] = None, None
        if os.environ.get(SWITCH, "1") == "0":
            _loaded["reason"] = f"switched off by {SWITCH}=0"
        else:
            try:
                from torch.utils.cpp_extension import load as build

                flags = _capability_flags()
                name = "xct_crab" + ("_avx2" if flags else "")
                _log.info("Loading the CRAB kernel %s (compiled on first use, once per machine)", name)
                cflags, ldflags = ["-O3", "-fopenmp", *flags], ["-fopenmp"]
                _loaded["module"] = build(name=name, sources=[str(SOURCE)], extra_cflags=cflags, extra_ldflags=ldflags)
            except Exception as error:  # no compiler, no ninja, no headers: the PyTorch path runs
                _loaded["reason"] = f"{type(error).__name__}: {str(error).strip().splitlines()[-1:]}"
                _log.info("The CRAB kernel is unavailable (%s); using PyTorch operations.", _loaded["reason"])
    return _loaded["module"]  # type: ignore[return-value]


def unavailable_reason() -> Optional[str]:
    """Why :func:`load` returned None (None when the kernel loaded or was not tried yet)."""
    return _loaded.get("reason")  # type: ignore[return-value]
