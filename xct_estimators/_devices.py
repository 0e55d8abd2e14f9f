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
    a process Lightning spawned for several devices (``ddp_spawn``), death with its parent, which
    decides when to stop: a parent killed outright would leave it training to the end."""
    destroy_process_group_at_exit()
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is None or world_size < 2 or parent.sentinel is None:  # e.g. a joblib worker training alone
        return
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent stops us
    if _kill_when_parent_dies() and parent.is_alive():
        return
    import os
    import threading

    def watch() -> None:  # where the kernel cannot signal a parent's death, or it has died already
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
