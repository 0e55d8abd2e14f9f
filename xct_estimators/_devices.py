"""Training on several devices, predicting on one.

Data-parallel strategies split every data loader across processes, the prediction loader too:
a one-window prediction split over two processes fails in Lightning's distributed sampler
(``num_samples >= 1``), and a longer one comes back in pieces. Inference needs no gradient
synchronisation, so it runs on one device of the training accelerator.
"""

from __future__ import annotations

from typing import Any

#: Trainer arguments that only concern several processes.
_DISTRIBUTED_ONLY = ("strategy", "num_nodes", "sync_batchnorm", "use_distributed_sampler")


def device_count(devices: Any) -> int:
    """How many devices a Lightning ``devices`` value asks for (``"auto"`` / ``None``: 1)."""
    if isinstance(devices, (list, tuple)):
        return len(devices)
    if isinstance(devices, str):
        text = devices.strip()
        if "," in text:
            return len([part for part in text.split(",") if part.strip()])
        devices = int(text) if text.lstrip("-").isdigit() else None
    if isinstance(devices, int):
        return devices if devices > 0 else 2  # -1: all of them, taken as several
    return 1


def training_processes(accelerator: str, devices: Any) -> int:
    """How many processes Lightning trains in for ``accelerator`` and ``devices`` on this machine:
    ``"auto"`` and ``-1`` take every GPU (one process on a CPU)."""
    if devices in ("auto", None) or str(devices) == "-1":
        if accelerator == "cpu":
            return 1
        import torch

        return max(torch.cuda.device_count(), 1)
    return device_count(devices)


def is_distributed(trainer_params: dict[str, Any]) -> bool:
    strategy = trainer_params.get("strategy")
    named = isinstance(strategy, str) and strategy not in ("auto", "single_device")
    return named or device_count(trainer_params.get("devices")) > 1 or trainer_params.get("num_nodes", 1) > 1


def single_device(trainer_params: dict[str, Any]) -> dict[str, Any]:
    """``trainer_params`` for inference: one device of the same accelerator, no strategy."""
    params = {key: value for key, value in trainer_params.items() if key not in _DISTRIBUTED_ONLY}
    devices = trainer_params.get("devices")
    if isinstance(devices, (list, tuple)) and devices:
        params["devices"] = [devices[0]]
    elif isinstance(devices, str) and "," in devices:
        params["devices"] = [int(devices.split(",")[0])]
    else:
        params["devices"] = 1
    return params


_destroy_registered = False  # per process: each spawned training process registers once


def destroy_process_group_at_exit() -> None:
    """In a training process of a distributed run: destroy the process group when the process
    exits. Lightning does so for NCCL only; a gloo group left to the interpreter's finalisation
    can abort a rank ("terminate called without an active exception") after training ended."""
    import atexit

    import torch.distributed as dist

    global _destroy_registered
    if dist.is_available() and dist.is_initialized() and not _destroy_registered:
        _destroy_registered = True
        atexit.register(lambda: dist.destroy_process_group() if dist.is_initialized() else None)


def prepare_training_process(world_size: int) -> None:
    """At the start of training, in every training process: the process group's clean-up, and in
    a process Lightning spawned for several devices (``ddp_spawn``), Ctrl-C left to the parent,
    which decides when to stop (it reaches the whole process group), and death with the parent
    (the package's own strategy binds its processes earlier, before they import anything heavy)."""
    destroy_process_group_at_exit()
    import multiprocessing

    if multiprocessing.parent_process() is None or world_size < 2:  # e.g. a joblib worker training alone
        return
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()  # a strategy of the user's (ddp_spawn itself): bound from here on, at least


#: Set by a process that spawns trainers to its pid: a process whose parent has that pid binds to
#: it on importing the package (:func:`bind_spawned_trainer`), before its heavy imports.
SPAWNED_BY = "XCT_SPAWNED_BY"


def bind_spawned_trainer() -> None:
    """In a process spawned with :data:`SPAWNED_BY` naming its parent: :func:`die_with_parent`
    now, while it is still unpickling its work (the package is imported first); if that parent
    has died already, exit. The variable then names this process, for the processes it starts."""
    import os
    import sys

    parent = os.environ.get(SPAWNED_BY)
    if not (parent and parent.isdigit()) or "--multiprocessing-fork" not in sys.orig_argv:  # not spawned
        return
    if int(parent) != os.getppid():
        try:
            os.kill(int(parent), 0)
        except ProcessLookupError:  # the launcher that spawned us is gone: its work is not wanted
            os._exit(1)
        except PermissionError:
            pass
        return  # another process's spawn: not ours to bind
    die_with_parent(int(parent))
    os.environ[SPAWNED_BY] = str(os.getpid())


def die_with_parent(parent_pid: int | None = None) -> None:
    """In a spawned process, as early as it can: die when the parent dies, however it dies
    (SIGKILL too), or now if it has died already. Linux's parent-death signal, then a check that
    the parent is still the one that spawned us (it may have died while we started); elsewhere a
    thread that waits for the parent's end. ``parent_pid``: the parent, where multiprocessing
    does not know it yet."""
    import multiprocessing
    import os

    parent = multiprocessing.parent_process()
    pid = parent_pid if parent_pid is not None else None if parent is None else parent.pid
    if pid is None:
        return
    if _kill_when_parent_dies():
        if os.getppid() != pid:  # orphaned before the signal was set: it will never come
            os._exit(1)
        return
    if parent is None or parent.sentinel is None:
        return
    import threading

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="xct-follow-parent").start()


def _kill_when_parent_dies() -> bool:
    """Linux's PR_SET_PDEATHSIG: SIGKILL when the parent exits, however it exits."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import signal

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL)) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False
