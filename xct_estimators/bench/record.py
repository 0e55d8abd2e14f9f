"""A result record: one finished run of ``xct-bench``, as one line of ``results.jsonl`` holds it.

:class:`Record` has what every run has; each task's record (``forecast.record``, ...) adds what its
protocol measures. ``run`` holds the settings that make the run: two records are the same run
exactly when their ``run`` are equal, and the line repeats them at its top level, where the
tables read them. A line written by an older version lacks some fields (they take their
defaults); fields this version does not know are kept in ``extra`` and written back as they were.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

#: The types a required field's annotation names (``bool`` is never a number here).
_KINDS = {"str": (str,), "int": (int,), "float": (int, float)}


@dataclass(frozen=True, kw_only=True)
class Record:
    TASK: ClassVar[str] = ""
    WHERE: ClassVar[str] = ""  # the field that places a run in its task's tables

    dataset: str
    model: str
    seed: int
    fit_seconds: float
    eval_seconds: float
    run: Optional[dict] = None  # None: written before runs had one, or an average of several
    settings: dict = field(default_factory=dict)  # the model's settings that decide its numbers
    n_windows: Optional[int] = None
    data_sha256: Optional[str] = None  # a CSV's content, so a changed file is a new run
    precision: str = "32"
    compile: bool = False
    exact_fp32: bool = False
    command: Optional[str] = None
    accelerator: Optional[str] = None
    device: Optional[dict] = None
    versions: Optional[dict] = None
    git_commit: Optional[str] = None
    git_dirty: Optional[bool] = None
    finished_at: Optional[str] = None
    eval_compilations: Optional[int] = None
    extra: dict = field(default_factory=dict)

    @property
    def task(self) -> str:
        return self.TASK

    @property
    def where(self):
        """The horizon, mask rate or protocol: where in its task's tables the run sits."""
        return getattr(self, self.WHERE)

    def describe(self) -> str:
        """:attr:`where` in words."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, value: dict) -> Record:
        """The record of a parsed line; ``ValueError`` when a field the tables need is missing or of
        another type."""
        names = {spec.name for spec in dataclasses.fields(cls)} - {"extra"}
        for spec in dataclasses.fields(cls):
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                found = value.get(spec.name)
                if not isinstance(found, _KINDS[spec.type]) or isinstance(found, bool):
                    raise ValueError(f"field {spec.name!r} is {found!r}, not a {spec.type}")
        known = {k: v for k, v in value.items() if k in names}
        return cls(**known, extra={k: v for k, v in value.items() if k not in names and k != "task"})

    def to_json(self) -> dict[str, Any]:
        fields = {spec.name: getattr(self, spec.name) for spec in dataclasses.fields(self) if spec.name != "extra"}
        return {"task": self.TASK, **fields, **self.extra}

    def replace(self, **changes) -> Record:
        return dataclasses.replace(self, **changes)
