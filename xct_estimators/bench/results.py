"""Resumable results: one JSON object per finished run, appended to ``results.jsonl`` at once.

A record's ``run`` field holds every setting that changes its numbers (task, dataset, horizon or
mask rate, model and its settings, epochs, look-back, protocol, strides, seed, ...); two records
are the same run exactly when their ``run`` fields are equal.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

from .record import Record
from .tasks import TASKS

RESULTS_FILE = "results.jsonl"


def parse_record(value) -> Optional[Record]:
    """The record of a parsed line, or None when the line is not one: not a known task's, or a
    field the tables read missing or of another type."""
    if not isinstance(value, dict) or value.get("task") not in TASKS:
        return None
    try:
        return TASKS[value["task"]].record.from_json(value)
    except (TypeError, ValueError):
        return None


def identity(run: dict) -> tuple:
    """The identity of the run of these ``run`` settings (as :func:`run_key` gives it for its record)."""
    return ("run", json.dumps(run, sort_keys=True))


def run_key(record: Record) -> tuple:
    """The identity of a record's run: its ``run`` settings as sorted JSON (a line without them,
    written before 0.1.0, is its own run and never matches a new one)."""
    if record.run is not None:
        return identity(record.run)
    return ("record", json.dumps(record.to_json(), sort_keys=True, default=str))


class ResultStore:
    """Appends records to ``<directory>/results.jsonl``, each flushed and synced before returning."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.path = self.directory / RESULTS_FILE

    def records(self) -> list[Record]:
        """Every stored record. Lines that are not records (a line torn by a crash, other JSON,
        bytes that are not UTF-8) are skipped with one warning naming them."""
        return list(self._read())

    def _read(self) -> Iterator[Record]:
        if not self.path.is_file():
            return
        skipped = []
        with self.path.open("rb") as f:
            for number, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                try:
                    record = parse_record(json.loads(raw.decode("utf-8")))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    record = None
                if record is not None:
                    yield record
                else:
                    skipped.append(number)
        if skipped:
            warnings.warn(
                f"{self.path}: skipped line(s) {', '.join(map(str, skipped))}, which are not result records "
                "(torn by a crash or edited); those runs count as not finished.",
                UserWarning,
                stacklevel=3,
            )

    def finished(self) -> set[tuple]:
        return {run_key(record) for record in self._read()}

    def latest(self) -> list[Record]:
        """One record per run: the last one written."""
        by_key = {run_key(record): record for record in self._read()}
        return list(by_key.values())

    def append(self, record: Record) -> None:
        values = record.to_json()
        bad = [k for k, v in values.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            raise ValueError(
                f"The run {record.dataset} / {record.model} produced non-finite {', '.join(bad)} "
                f"({', '.join(str(values[k]) for k in bad)}); it is not recorded as finished. Check the data "
                "for gaps and the model's settings."
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        line = json.dumps(values, sort_keys=False) + "\n"
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    line = "\n" + line  # end a line torn by a crash, so this record stays readable
        with self.path.open("a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
