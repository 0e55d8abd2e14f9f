"""CRAB's Triton kernels compiled ahead of time for a GPU, with no GPU: whether they compile, and
what each program needs (registers, the stack that spilled registers take, shared memory).

A kernel whose registers spill to its stack (local memory) reads and writes them through the caches on every
loop step; one whose shared memory exceeds the device's cannot launch. Both are read off the
compiled binary, so they are checked here before a GPU is lent.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

#: Kernel arguments that are pointers, and those of them in the inputs' dtype (the rest float32).
_POINTERS = set("Q K V Mask Low Place places Seed Out Den partial G Delta GQ GK GV GM Total".split())
_INTEGERS = ("Seed", "Place", "places")  # int64 buffers
_HALVES = set("Q K V Out G GV".split())
_FLOAT_SCALARS = ("scale", "inv_keep")
#: Shared memory a program may take on an H100 or H200 (228 KiB per SM, 1 KiB reserved per block).
H100_SHARED_BYTES = 227 * 1024


@dataclass(frozen=True)
class KernelBuild:
    kernel: str
    registers: int
    spilled_bytes: int  # stack frame per thread: the registers that did not fit
    shared_bytes: int
    ordered_atomics: int  # acquire-release atomics in the PTX: each orders memory, where a sum needs none


def _signature(kernel, fixed: dict, dtype: str) -> dict:
    def kind(name: str) -> str:
        if name in fixed:
            return "constexpr"
        if name in _POINTERS:
            return "*i64" if name in _INTEGERS else f"*{dtype}" if name in _HALVES else "*fp32"
        return "fp32" if name in _FLOAT_SCALARS else "i32"

    return {name: kind(name) for name in kernel.arg_names}


def _resources(cubin: bytes) -> tuple[int, int]:
    """Registers and stack bytes per thread (where registers that did not fit go), from
    ``cuobjdump -res-usage``."""
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as file:
        file.write(cubin)
        file.flush()
        usage = subprocess.run([tool, "-res-usage", file.name], capture_output=True, text=True, check=True).stdout
    registers, stack = re.search(r"REG:(\d+)", usage), re.search(r"STACK:(\d+)", usage)
    return int(registers.group(1)), int(stack.group(1))


def distinct_kernels() -> dict:
    """CRAB's kernels by name, each once: two tuned launchers may share one kernel (the backward with
    and without the mask's gradient), and a compilation is per kernel."""
    from xct_estimators.nn import triton_crab

    kernels: dict = {}
    for name, kernel in triton_crab._RAW.items():
        if kernel not in kernels.values():
            kernels[name] = kernel
    return kernels


def compile_kernels(
    dtype: str,
    head_width: int,
    tiling: tuple[int, int, int, int],
    masked=True,
    clipped=False,
    dropout=True,
    capability=90,
) -> list[KernelBuild]:
    """Every CRAB kernel compiled for ``sm_{capability}`` with one ``tiling`` (query rows and keys per
    tile, warps, pipeline stages) and CRAB's switches; ``dtype`` is Triton's name of the inputs' dtype (``fp32``,
    ``bf16``). Raises what the compiler raises."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from xct_estimators.nn import triton_crab

    rows, keys, warps, stages = tiling
    first, second = triton_crab._widths(head_width)
    tiles = dict(BLOCK_M=rows, BLOCK_N=keys, DA=first, DB=second, VA=first, VB=second)
    tiles["PRECISION"] = "tf32" if dtype == "fp32" else "ieee"
    flags = dict(HAS_MASK=masked, MASK_GRAD=masked, CLIPPED=clipped, DROPOUT=dropout)
    builds = []
    for name, kernel in distinct_kernels().items():
        fixed = {n: v for n, v in {**tiles, **flags}.items() if n in kernel.arg_names}
        if not fixed.get("HAS_MASK", True):
            fixed.update({name: None for name in ("Mask", "GM") if name in kernel.arg_names})
        constants = {(kernel.arg_names.index(n),): v for n, v in fixed.items()}
        source = ASTSource(kernel, _signature(kernel, fixed, dtype), constants)
        compiled = triton.compile(
            source, target=GPUTarget("cuda", capability, 32), options=dict(num_warps=warps, num_stages=stages)
        )
        registers, spilled = _resources(compiled.asm["cubin"])
        ordered = len(re.findall(r"\batom\.[\w.]*acq_rel", compiled.asm["ptx"]))
        builds.append(KernelBuild(name, registers, spilled, compiled.metadata.shared, ordered))
    return builds
