"""The C++ kernels on CPU: CRAB's elementwise chain and the hashed dropout (``csrc/crab.cpp``),
and the known-future decoder's pairwise hidden layer (``csrc/pairwise.cpp``), one extension.

It is compiled on first use with PyTorch's extension builder (a C++ compiler and ``ninja``
needed) and cached under ``TORCH_EXTENSIONS_DIR`` (by default ``~/.cache/torch_extensions``) in
a folder named by the hash of what it is built from (source, flags, torch and Python versions), so
two environments or package versions never share or rebuild each other's build. Each build runs in
a private folder and its library is moved into the cache in one step: a process killed while
building leaves no lock for the next one to wait on, and two processes building at once each
finish. Where it cannot be built, :mod:`xct_estimators.nn.fused` runs the same chain as PyTorch
operations, with the same results and dropout masks, and the decoder its layer as PyTorch
operations, only slower. ``XCT_CRAB_KERNEL=0`` turns the kernels off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Optional

import torch

SOURCES = (Path(__file__).parent / "csrc" / "crab.cpp", Path(__file__).parent / "csrc" / "pairwise.cpp")
SWITCH = "XCT_CRAB_KERNEL"
_LIBRARY_SUFFIX = ".pyd" if sys.platform == "win32" else ".so"

_log = logging.getLogger(__name__)
_loaded: dict[str, object] = {}


def _capability_flags() -> list[str]:
    """Vector instructions for the compiler where this CPU has them (the build is cached per
    flag set, so a cluster of mixed CPUs gets one build each)."""
    capability = torch.backends.cpu.get_cpu_capability()
    if capability in ("AVX2", "AVX512"):
        return ["-mavx2", "-mfma"]
    return []


def extension_name(source: bytes, flags: list[str]) -> str:
    """The build's name (and so its folder): a hash of the source, the compiler flags, and the
    torch and Python versions it is built for."""
    key = b"\0".join([source, " ".join(flags).encode(), torch.__version__.encode(), sys.version.encode()])
    return f"xct_crab_{hashlib.sha256(key).hexdigest()[:16]}"


def load() -> Optional[ModuleType]:
    """The compiled kernel, or None where it is switched off or cannot be built (see
    :func:`unavailable_reason`)."""
    if "module" not in _loaded:
        _loaded["module"], _loaded["reason"] = None, None
        if os.environ.get(SWITCH, "1") == "0":
            _loaded["reason"] = f"switched off by {SWITCH}=0"
        else:
            try:
                cflags, ldflags = ["-O3", "-fopenmp", *_capability_flags()], ["-fopenmp"]
                name = extension_name(b"\0".join(path.read_bytes() for path in SOURCES), cflags + ldflags)
                library = cached_library(name)
                if library.exists():
                    _loaded["module"] = _import(name, library)
                else:
                    _loaded["module"] = _build(name, cflags, ldflags, library)
            except Exception as error:  # no compiler, no ninja, no headers: the PyTorch path runs
                _loaded["reason"] = f"{type(error).__name__}: {str(error).strip().splitlines()[-1:]}"
                _log.warning(
                    "xct-estimators: the CPU kernels could not be built (%s); CRAB attention and the covariate "
                    "decoder run as PyTorch operations: same results, slower. Install a C++ compiler and ninja for "
                    "the kernels, or set %s=0 to skip them without this message.",
                    _loaded["reason"],
                    SWITCH,
                )
    return _loaded["module"]  # type: ignore[return-value]


def cached_library(name: str) -> Path:
    """Where the build of ``name`` lives: torch's own layout, so builds made by torch's loader are reused."""
    from torch.utils.cpp_extension import _get_build_directory

    return Path(_get_build_directory(name, verbose=False)) / f"{name}{_LIBRARY_SUFFIX}"


def _build(name: str, cflags: list[str], ldflags: list[str], library: Path) -> ModuleType:
    """Compile in a private folder (torch's builder locks its folder, and a killed build's lock would
    stop every later one), then move the library into the cache in one step."""
    from torch.utils.cpp_extension import load as build

    _log.warning(
        "xct-estimators: compiling the CPU kernels (CRAB attention, covariate decoder) for this machine, once; "
        "it can take a few minutes (%s=0 skips them and runs the slower PyTorch path).",
        SWITCH,
    )
    _remove_abandoned_builds(library.parent.parent)
    prefix = f"{name}.building-{os.getpid()}-"  # the builder's PID: a later build knows when it died
    with tempfile.TemporaryDirectory(prefix=prefix, dir=library.parent.parent) as private:
        module = build(
            name=name,
            sources=[str(path) for path in SOURCES],
            extra_cflags=cflags,
            extra_ldflags=ldflags,
            build_directory=private,
        )
        os.replace(Path(private) / library.name, library)
    return module


def _remove_abandoned_builds(cache: Path) -> None:
    """Private build folders whose builder was killed (SIGKILL skips the clean-up): those of a
    process that no longer runs, or, without a PID in the name, older than a day."""
    for folder in cache.glob("*.building-*"):
        owner = folder.name.rpartition(".building-")[2].split("-")[0]
        if owner.isdigit():
            abandoned = not _is_running(int(owner))
        else:
            abandoned = time.time() - folder.stat().st_mtime > 86400
        if abandoned:
            shutil.rmtree(folder, ignore_errors=True)


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _import(name: str, library: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, library)
    if spec is None or spec.loader is None:
        raise ImportError(f"{library} is not a loadable extension; delete it to rebuild the kernel")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unavailable_reason() -> Optional[str]:
    """Why :func:`load` returned None (None when the kernel loaded or was not tried yet)."""
    return _loaded.get("reason")  # type: ignore[return-value]
