"""Where a benchmark number comes from: the code's commit, the machine, the library versions and
the command line, for the records that benchmarks write."""

from __future__ import annotations

import importlib
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

#: The package's source tree (a git checkout when installed editable).
SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: Libraries whose versions a record names.
LIBRARIES = ("torch", "pytorch_lightning", "darts", "sktime", "numpy", "xct_estimators")


def is_checkout(root: Path = SOURCE_ROOT) -> bool:
    """Whether ``root`` is a git checkout of this project: the top of a work tree whose
    pyproject.toml names xct-estimators (a wheel installed under some other checkout is not)."""
    try:
        run = dict(cwd=root, capture_output=True, text=True, check=True)
        top = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], **run).stdout.strip())
        project = (root / "pyproject.toml").read_text()
    except (OSError, subprocess.CalledProcessError):
        return False
    return top.resolve() == Path(root).resolve() and 'name = "xct-estimators"' in project


def git_state(root: Path = SOURCE_ROOT) -> tuple[str, Optional[bool]]:
    """The code's commit and whether tracked files differ from it: ``$XCT_GIT_COMMIT`` where the
    tree travelled without ``.git`` (a device machine; a ``-dirty`` suffix says so), else ``git``
    in a checkout of this project; elsewhere (a wheel, an sdist) the release, ``("v0.1.0", None)``."""
    given = os.environ.get("XCT_GIT_COMMIT")
    if given:
        return given.removesuffix("-dirty"), given.endswith("-dirty")
    if not is_checkout(root):
        from .. import __version__

        return f"v{__version__}", None
    run = dict(cwd=root, capture_output=True, text=True, check=True)
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **run).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown", None
    return commit, bool(dirty)


def git_commit(root: Path = SOURCE_ROOT) -> str:
    """:func:`git_state` as one string: the commit, with ``-dirty`` when the tree differs from it."""
    commit, dirty = git_state(root)
    return commit + ("-dirty" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device(accelerator: str = "auto") -> dict[str, Any]:
    """The CPU (model, the vector instructions torch's kernels use, threads torch uses), the GPU a
    run with Lightning's ``accelerator`` uses (``None`` when it runs on the CPU) and whether its
    float32 matrix products use TF32. The instructions and threads decide how sums are rounded."""
    import torch

    from ..nn.tf32 import allowed as allowed_tf32

    on_gpu = accelerator != "cpu" and torch.cuda.is_available()
    gpu: Optional[str] = torch.cuda.get_device_name(0) if on_gpu else None
    tf32 = allowed_tf32() if on_gpu else None
    capability = torch.backends.cpu.get_cpu_capability()
    return {
        "cpu": cpu_model(),
        "cpu_capability": capability,
        "cpu_threads": torch.get_num_threads(),
        "gpu": gpu,
        "tf32": tf32,
    }


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = importlib.import_module(name).__version__
        except Exception as error:  # a missing library is a finding, not a crash
            found[name] = f"not importable ({type(error).__name__})"
    return found


def timestamp() -> str:
    """Local time to the second, as every record's ``finished_at`` writes it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def command_line(argv: Optional[list[str]] = None) -> str:
    """``argv`` (default ``sys.argv``) as a shell command: ``python script.py ...`` for a script,
    ``python -m module ...`` for a module run so, the console script's name (``xct-bench ...``)
    otherwise."""
    module = getattr(sys.modules.get("__main__"), "__spec__", None) if argv is None else None
    argv = list(sys.argv if argv is None else argv)
    if argv and module is not None and argv[0].endswith(".py"):
        argv = ["python", "-m", module.name, *argv[1:]]
    elif argv and argv[0].endswith(".py"):
        argv = ["python", *argv]
    elif argv:
        argv[0] = Path(argv[0]).name
    return shlex.join(argv)


def run_fields(accelerator: str = "auto") -> dict[str, Any]:
    """What a result record says about where it ran: commit, tree state, versions, device."""
    commit, dirty = git_state()
    return {"git_commit": commit, "git_dirty": dirty, "versions": versions(), "device": device(accelerator)}


def provenance(argv: Optional[list[str]] = None) -> dict[str, Any]:
    """Commit, device, versions and the command line (``sys.argv`` unless given) of this process."""
    return {"git_commit": git_commit(), "device": device(), "versions": versions(), "command": command_line(argv)}
