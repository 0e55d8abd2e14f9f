"""``torch.compile`` as one switch of the estimators: the values it takes, the checks that run
before anything compiles, and compiling a network in place.

In place means ``nn.Module.compile``: the module keeps its class and its state dict its keys, so a
model saved with the switch on loads with it off and the other way round. Pickling drops the
compiled function (torch's ``Module.__getstate__``), so the switch is applied again where a
network is used: in the Lightning modules' ``setup`` (every training and prediction process)
and before the reconstruction engine's own inference.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shutil
import sys
from collections.abc import Iterator
from typing import Optional, Union

import torch

from .hyperparameters import Hyperparameter

CompileOption = Union[bool, dict]

#: The keyword arguments ``torch.compile`` takes besides the module.
COMPILE_ARGUMENTS: tuple[str, ...] = tuple(p for p in inspect.signature(torch.compile).parameters if p != "model")

#: The switch's documentation, shared by every estimator that takes it.
COMPILE = Hyperparameter(
    "compile",
    False,
    "bool or dict",
    "Compile the network with ``torch.compile`` for training and prediction (in place: saved weights are the "
    'same either way). A dict passes its arguments to ``torch.compile`` (e.g. ``{"mode": "max-autotune"}``). '
    "Worth it on a GPU, together with ``bf16-mixed`` precision; on a CPU the fused attention is already "
    "compiled code and the first steps pay the compilation (see docs/scaling.md).",
)


def compile_options(value: CompileOption) -> Optional[dict]:
    """The ``torch.compile`` arguments the switch ``value`` asks for (``None``: do not compile).
    Raises a ``ValueError`` naming the fix for anything else."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(COMPILE_ARGUMENTS))
        if unknown:
            raise ValueError(
                f"compile={value!r}: {', '.join(map(repr, unknown))} is not an argument of torch.compile, which "
                f"takes {', '.join(COMPILE_ARGUMENTS)}; e.g. compile={{'mode': 'max-autotune'}}."
            )
        return dict(value)
    raise ValueError(
        f"compile must be True, False or a dict of torch.compile arguments (e.g. {{'mode': 'max-autotune'}}), "
        f"got {value!r}."
    )


def compile_unsupported(options: dict, device: Union[str, torch.device]) -> Optional[str]:
    """Why compiling with ``options`` for ``device`` would fail at the first step (with the fix), or
    ``None`` when nothing stands in the way."""
    device = torch.device(device)
    if not torch._dynamo.eval_frame.is_dynamo_supported():
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        return (
            f"torch {torch.__version__} cannot compile on Python {version}: install a torch release that "
            "supports it (pip install -U torch)."
        )
    if (options.get("backend") or "inductor") != "inductor":
        return None
    if device.type == "cpu" and not _has_cpp_compiler():
        return (
            "torch.compile's inductor backend needs a C++ compiler on the CPU, and none was found (looked for "
            "$CXX, c++, g++, clang++): install one (e.g. apt install g++)."
        )
    if device.type == "cuda" and torch.cuda.is_available():
        index = device.index if device.index is not None else torch.cuda.current_device()
        if torch.cuda.get_device_capability(index) < (7, 0):
            return (
                f"torch.compile's inductor backend (Triton) needs a GPU of compute capability 7.0 or newer, "
                f"and {torch.cuda.get_device_name(index)} is older."
            )
    return None


def check_compile_supported(options: dict, device: Union[str, torch.device]) -> None:
    """Raise, naming the fix, where compiling would fail only at the first training step."""
    reason = compile_unsupported(options, device)
    if reason is not None:
        raise RuntimeError(
            f"compile={options or True!r} on {torch.device(device).type}: {reason} Or pass compile=False "
            "(or compile={'backend': 'aot_eager'}, which needs no C++ compiler or Triton)."
        )


def _has_cpp_compiler() -> bool:
    names = [os.environ.get("CXX"), "c++", "g++", "clang++"]
    return any(name and shutil.which(name) for name in names)


def is_compiled(net: torch.nn.Module) -> bool:
    return getattr(net, "_compiled_call_impl", None) is not None


def apply_compile(net: torch.nn.Module, options: Optional[dict], device: Union[str, torch.device]) -> None:
    """Compile ``net`` in place with ``options`` (or undo it for ``None``); nothing when it already is
    as asked. Compilation itself happens at the first call."""
    if options is None:
        if is_compiled(net):
            net._compiled_call_impl = None
        return
    if not is_compiled(net):
        check_compile_supported(options, device)
        net.compile(**options)


@contextlib.contextmanager
def uncompiled(module: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Within the block, ``module`` and its submodules run eagerly: for exporters, which trace the
    Python code themselves, and for forward hooks added for one call."""
    compiled = [(m, m._compiled_call_impl) for m in module.modules() if is_compiled(m)]
    try:
        for m, _ in compiled:
            m._compiled_call_impl = None
        yield module
    finally:
        for m, function in compiled:
            m._compiled_call_impl = function


class CompiledNetwork:
    """Mixin of the Lightning modules: their network ``net`` compiled as ``compile_options`` say
    (``None``: eager; a class default, so modules saved before the switch load as eager)."""

    compile_options: Optional[dict] = None

    def compile_network(self, device: Union[str, torch.device, None] = None) -> None:
        """Apply ``compile_options`` to ``net`` (idempotent), checked for ``device`` (default: the
        network's)."""
        if device is None:
            device = next(self.net.parameters()).device
        apply_compile(self.net, self.compile_options, device)
