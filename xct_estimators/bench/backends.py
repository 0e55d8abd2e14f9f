"""Where ``xct-bench`` runs execute: one after another in this process, or as Ray tasks.

Every independent run (dataset, horizon or mask rate, model, seed) is a :class:`Job`. The driver
(this process) decides what to run, and alone writes ``results.jsonl``: a backend only executes
``job.work`` and hands back its records, so resume, the output lock and the report are the same
for every backend.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .._optional import optional_import
from .record import Record
from .results import ResultStore

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours its task names
#: What ``work`` returns: one ``(record, example)`` per record (``example`` for the plots, or None).
Outcome = list[tuple[Record, Optional[dict[str, Any]]]]


@dataclass
class Job:
    """One independent run. ``work`` is a picklable callable (a ``functools.partial`` of a module
    function) so that it can run in another process or on another machine."""

    label: str
    work: Callable[[], Outcome]
    summary: Callable[[Record], str]
    run: dict[str, Any] = field(default_factory=dict)
    #: The task's own files of a run's example, written where the records are (forecast plots).
    keep: Optional[Callable[[Path, Record, dict[str, Any]], None]] = None


def set_matmul_precision(exact_fp32: bool) -> None:
    """Float32 matrix products in TF32 on GPUs that have it, or in full float32 (``--exact-fp32``);
    set where the runs execute, and named in each record (``device.tf32``). CPU products are left as
    they are."""
    from ..nn import tf32

    tf32.allow(not exact_fp32)


class LocalBackend:
    """Runs jobs in order in this process; the first failure stops the command (finished records stay)."""

    name = "local"

    def __init__(self, exact_fp32: bool = False):
        self.exact_fp32 = exact_fp32

    def run(self, jobs: list[Job], finished, failed, starting=None) -> None:
        set_matmul_precision(self.exact_fp32)
        for job in jobs:
            if starting is not None:
                starting(job)
            finished(job, job.work())


class RayBackend:
    """Runs every job as a Ray task with its resources declared; results come back to the driver.

    ``address=None`` starts a local Ray instance (stopped at the end); ``"auto"`` or ``"host:port"``
    joins a running cluster. A task that fails is reported with its traceback; the others go on.
    Ctrl-C (or SIGTERM) cancels the tasks not yet finished.
    """

    name = "ray"

    def __init__(
        self, address: Optional[str] = None, cpus_per_run: float = 1, gpus_per_run: float = 0, exact_fp32=False
    ):
        optional_import("ray", extra="ray", purpose="--backend ray")
        self.address, self.cpus_per_run, self.gpus_per_run = address, cpus_per_run, gpus_per_run
        self.exact_fp32 = exact_fp32

    def run(self, jobs: list[Job], finished, failed, starting=None) -> None:
        import ray

        started_here = not ray.is_initialized()
        if started_here:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        task = ray.remote(_work).options(num_cpus=self.cpus_per_run, num_gpus=self.gpus_per_run, max_retries=0)
        by_ref = {task.remote(job.work, self.exact_fp32): job for job in jobs}
        pending = list(by_ref)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                job = by_ref[done[0]]
                try:
                    outcome = ray.get(done[0])
                except ray.exceptions.RayError as error:  # the task's exception, with its remote traceback
                    failed(job, _ANSI.sub("", getattr(error, "traceback_str", None) or str(error)))
                    continue
                finished(job, outcome)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        finally:
            if started_here:
                ray.shutdown()


def _work(work: Callable[[], Outcome], exact_fp32: bool) -> Outcome:
    set_matmul_precision(exact_fp32)
    return work()


def make_backend(settings):
    """The backend ``settings`` (a :class:`~.settings.BackendSettings`) name."""
    exact_fp32 = getattr(settings, "exact_fp32", False)
    if settings.backend == "ray":
        gpus = 1 if settings.accelerator == "gpu" else 0
        return RayBackend(settings.ray_address, settings.cpus_per_run or 1, gpus, exact_fp32)
    return LocalBackend(exact_fp32)


def execute(jobs: list[Job], store: ResultStore, backend, progress: bool = True) -> int:
    """Run ``jobs`` on ``backend``; append each record to ``store`` as it arrives.

    Returns 0, or 1 when some job failed (each failure was printed with its traceback).
    """
    from tqdm.auto import tqdm

    failures: list[str] = []
    bar = tqdm(total=len(jobs), desc="runs", unit="run", position=0, disable=not progress)

    def finished(job: Job, outcome: Outcome) -> None:
        for record, example in outcome:
            if example is not None and job.keep is not None:  # first: a recorded run always has its files
                job.keep(store.directory, record, example)
            store.append(record)
            bar.write(job.summary(record))
        bar.update()

    def failed(job: Job, text: str) -> None:
        failures.append(job.label)
        bar.write(f"FAILED {job.label}:\n{text}")
        bar.update()

    def starting(job: Job) -> None:
        bar.set_postfix_str(job.label)

    try:
        backend.run(jobs, finished, failed, starting)
    finally:
        bar.close()
    if failures:
        print(f"{len(failures)} of {len(jobs)} runs failed: {'; '.join(failures)} (rerun with --resume to retry them)")
        return 1
    return 0
