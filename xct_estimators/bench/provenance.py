"""Where a benchmark number comes from: the code's commit, the machine, the library versions and
the command line, for the records that benchmarks write."""

from __future__ import annotations

import importlib
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

#: The package's source tree (a git checkout when installed editable).
SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: Libraries whose versions a record names.
LIBRARIES = ("torch", "pytorch_lightning", "darts", "sktime", "numpy", "xct_estimators")


def git_commit(root: Path = SOURCE_ROOT) -> str:
    """The code's commit: ``$XCT_GIT_COMMIT`` where the tree travelled without ``.git`` (a device
    machine), else ``git rev-parse HEAD`` with ``-dirty`` when the tree differs from it;
    ``"unknown"`` outside a checkout."""
    if os.environ.get("XCT_GIT_COMMIT"):
        return os.environ["XCT_GIT_COMMIT"]
    try:
        run = dict(cwd=root, capture_output=True, text=True, check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **run).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device() -> dict[str, Any]:
    """The CPU (model, threads torch uses) and the GPU, if torch sees one."""
    import torch

    gpu: Optional[str] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": cpu_model(), "cpu_threads": torch.get_num_threads(), "gpu": gpu}


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = importlib.import_module(name).__version__
        except Exception as error:  # a missing library is a finding, not a crash
            found[name] = f"not importable ({type(error).__name__})"
    return found


def provenance(argv: Optional[list[str]] = None) -> dict[str, Any]:
    """Commit, device, versions and the command line (``sys.argv`` unless given) of this process."""
    argv = list(sys.argv if argv is None else argv)
    if argv and argv[0].endswith(".py"):
        argv = ["python", *argv]  # a script, as it was run
    elif argv:
        argv[0] = Path(argv[0]).name  # a console script (xct-bench), by name
    command = shlex.join(argv)
    return {"git_commit": git_commit(), "device": device(), "versions": versions(), "command": command}
