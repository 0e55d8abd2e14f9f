"""Resumable results: one JSON object per finished run, appended to ``results.jsonl`` at once."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

RESULTS_FILE = "results.jsonl"
#: Fields that identify a run; a run with the same values is the same run.
KEY_FIELDS = (
    "dataset", "task", "horizon", "mask_rate", "model", "seed", "protocol", "eval_stride", "train_stride", "arch",
)  # fmt: skip


def run_key(record: dict) -> tuple:
    """The values of :data:`KEY_FIELDS`; absent fields count as None, dicts by their sorted JSON."""
    return tuple(_hashable(record.get(field)) for field in KEY_FIELDS)


def _hashable(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


class ResultStore:
    """Appends records to ``<directory>/results.jsonl``, each flushed and synced before returning."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.path = self.directory / RESULTS_FILE

    def records(self) -> list[dict]:
        """Every stored record, skipping a torn last line left by a crash mid-write."""
        return list(self._read())

    def _read(self) -> Iterator[dict]:
        if not self.path.is_file():
            return
        with self.path.open() as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue

    def finished(self) -> set[tuple]:
        return {run_key(record) for record in self._read()}

    def latest(self) -> list[dict]:
        """One record per run key: the last one written."""
        by_key = {run_key(record): record for record in self._read()}
        return list(by_key.values())

    def append(self, record: dict) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, sort_keys=False) + "\n"
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    line = "\n" + line  # end a line torn by a crash, so this record stays readable
        with self.path.open("a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
