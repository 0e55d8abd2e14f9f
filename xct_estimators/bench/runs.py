"""What every ``xct-bench`` run shares: the output folder's lock, signals, the report, run settings.

The runners (``forecast``, ``impute``, ``detect``) and the command line (``cli``) import this
module; it imports none of them, so imports go one way.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from .settings import TuneSettings

LOCK_FILE = ".xct-bench.lock"
PID_FILE = ".xct-bench.pid"


class BenchInterrupted(BaseException):
    """SIGINT or SIGTERM during a run. A ``BaseException`` so that no ``except Exception`` in a
    library swallows it, and not a ``KeyboardInterrupt``, which Lightning turns into ``exit(1)``."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`BenchInterrupted` inside the block; handlers restored after."""

    def handler(signum, frame):
        raise BenchInterrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def stop_children() -> None:
    """Kill the training processes of this run (``--devices N``): interrupted while starting up,
    they would print tracebacks of a half-read start, and otherwise train on unobserved."""
    import multiprocessing

    children = multiprocessing.active_children()
    for child in children:
        child.kill()
    for child in children:
        child.join(timeout=10)
    for pid in _unregistered_spawn_children():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _unregistered_spawn_children() -> list[int]:
    """Spawned processes still waiting for their start-up data: a signal between the spawn and
    the write leaves them outside ``active_children``. Linux only (``/proc``)."""
    pids = []
    for listing in Path("/proc/self/task").glob("*/children"):
        with contextlib.suppress(OSError):
            pids += [int(pid) for pid in listing.read_text().split()]
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


def check_output(output: Path) -> None:
    """Refuse an ``--output`` that cannot hold results before anything trains."""
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file; results need a folder: pass another path.")
    try:
        output.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=output):
            pass
    except OSError as error:
        raise ValueError(
            f"--output {output} is not writable ({error.strerror}): pass a folder you can write to."
        ) from None


@contextlib.contextmanager
def locked_output(output: Path) -> Iterator[None]:
    """Hold ``output``'s lock for a run (``filelock``); a second run on the same folder stops at once."""
    check_output(output)
    lock = FileLock(str(output / LOCK_FILE))
    pid_file = output / PID_FILE
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder = pid_file.read_text().strip() if pid_file.is_file() else "unknown"
        raise ValueError(
            f"Another xct-bench run (PID {holder}) is writing to {output}: wait for it to finish, or pass "
            "another --output."
        ) from None
    try:
        pid_file.write_text(str(os.getpid()))
        yield
    finally:
        with contextlib.suppress(OSError):
            pid_file.unlink()
        lock.release()


def check_backend_options(settings) -> None:
    """Refuse the Ray options without ``--backend ray`` (no import: before torch loads)."""
    ray = getattr(settings, "backend", "local") == "ray"
    for option in ("ray_address", "cpus_per_run"):
        if not ray and getattr(settings, option, None) is not None:
            name = "--" + option.replace("_", "-")
            raise ValueError(f"{name} applies to --backend ray only: add --backend ray, or leave {name} out.")


def check_compute(settings) -> None:
    """Refuse ``--accelerator``, ``--compile`` and ``--precision`` that this machine cannot run,
    before any data is read."""
    import torch

    ray = getattr(settings, "backend", "local") == "ray"
    remote = ray and getattr(settings, "ray_address", None)
    gpu_here = torch.cuda.is_available() or torch.backends.mps.is_available()
    if settings.accelerator == "gpu" and not gpu_here and not remote:  # a cluster's GPUs are its workers'
        raise ValueError(
            "--accelerator gpu: torch sees no GPU on this machine (torch.cuda.is_available() is False); "
            "use --accelerator cpu, or auto to take a GPU where there is one."
        )
    devices = getattr(settings, "devices", "auto")
    on_cpu = settings.accelerator == "cpu" or (settings.accelerator in ("auto", None) and not gpu_here)
    check_devices(devices, on_cpu, remote, tuning=isinstance(settings, TuneSettings))
    if not getattr(settings, "compile", False) and getattr(settings, "precision", "32") == "32":
        return

    gpu = settings.accelerator == "gpu" or (settings.accelerator in ("auto", None) and torch.cuda.is_available())
    if settings.compile:
        from ..nn.compiling import compile_unsupported

        reason = compile_unsupported({}, "cuda" if gpu else "cpu")
        if reason is not None:
            raise ValueError(f"--compile: {reason} Or run without --compile.")
    if settings.precision == "bf16-mixed" and gpu and torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
        raise ValueError(
            f"--precision bf16-mixed: {torch.cuda.get_device_name()} does not support bfloat16; use --precision 32."
        )


def check_devices(devices, on_cpu: bool, remote, tuning: bool) -> None:
    """Refuse a ``--devices`` that Lightning cannot run here, before any data is read."""
    import torch

    from .._devices import device_count

    if on_cpu and isinstance(devices, str) and "," in devices:  # Lightning's CPU takes a count only
        raise ValueError(
            f"--devices {devices}: device indices name GPUs; on the CPU give a number of processes "
            f"(--devices {len(devices.split(','))}) or run on a GPU (--accelerator gpu)."
        )
    if on_cpu and str(devices) == "-1":
        raise ValueError("--devices -1 (every GPU) needs a GPU; on the CPU give a number of processes (--devices 2).")
    wanted = device_count(devices)
    if tuning and wanted > 1:
        raise ValueError(
            f"--devices {devices}: a tune trial trains on one device. To search on several, start one "
            "`xct-bench tune` per device on the same --storage and --study-name (docs/scaling.md)."
        )
    available = torch.cuda.device_count()
    if not on_cpu and not remote and available and wanted > available and str(devices) != "-1":
        raise ValueError(f"--devices {devices}: this machine has {available} GPU(s); give at most {available}.")


def interrupted_message(output: Path) -> str:
    return (
        f"\nInterrupted. Finished runs are kept in {Path(output) / 'results.jsonl'}; "
        "rerun the same command with --resume to continue."
    )


def plain_settings(params: dict[str, Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """JSON-stable settings: numbers, strings and their containers as they are, classes and
    objects by their class name (no memory addresses), ``skip`` keys left out."""

    def plain(value):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, type):
            return value.__name__
        if hasattr(value, "item") and callable(value.item):  # numpy scalars
            return plain(value.item())
        return type(value).__name__

    return {key: plain(value) for key, value in params.items() if key not in skip}


def write_atomically(path: Path, write, companions: tuple[str, ...] = ()) -> None:
    """``write(temporary path)``, then a rename onto ``path``: a crash or a full disk leaves the
    old file or none, never a torn one. ``companions``: suffixes of files ``write`` puts beside
    its path (Darts' ``save`` writes ``.ckpt``), renamed before ``path``, so ``path`` existing
    means all of them are whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # its own name per writer (two tune workers write one summary); the suffix still names the format
    partial = path.with_name(f".{path.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial{path.suffix}")
    try:
        write(partial)
        for suffix in companions:
            os.replace(f"{partial}{suffix}", f"{path}{suffix}")
        os.replace(partial, path)
    finally:
        for leftover in (partial, *(Path(f"{partial}{suffix}") for suffix in companions)):
            leftover.unlink(missing_ok=True)
