"""A results page: record folders as tables beside the paper's numbers, each with the device,
commit and command its numbers come from (``xct-bench report --markdown PAGE FOLDER...``)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from .comparison import covariate_sentence, helps_section
from .option_types import PAGE_MARK, PAGE_OPENING
from .page_tables import summary_tables
from .record import Record
from .results import ResultStore
from .runs import write_atomically
from .tables import markdown_table

HEADER = (
    PAGE_OPENING
    + """{rebuild}

Each table has a row per dataset and horizon, mask rate or protocol (and per setting that differs
between runs, such as covariates or a scoring) and a column per model: the mean ± standard
deviation over the seeds run, the row's best in bold, and the published number beside it. The
trivial baselines (`naive` forecasts, `linear` interpolation, `window_mean` reconstruction, a
`random` scorer) show what a measure gives for nothing. Every run's other metrics (MAE; F1,
AUC-PR, AUC-ROC and VUS-ROC beside the point-adjusted F1) and its times are in its folder's
`results.jsonl` and in `xct-bench report --output FOLDER`.
"""
)

#: A folder whose records no table compares: VUS-PR missing (recorded before it) and the
#: point-adjusted F1 outside the paper's protocol, where the paper's number does not apply.
NO_TABLE = (
    "No table: these records hold neither the ranking measure for two models nor the paper's headline under "
    "its own protocol; their metrics are in the folder's `results.jsonl` and `xct-bench report --output FOLDER`."
)


def _commit(record: Record) -> str:
    if record.git_commit is None:
        return "not recorded (older code)"
    return record.git_commit[:7] + (" (uncommitted changes)" if record.git_dirty else "")


def _device(record: Record) -> str:
    device = record.device
    if not device:
        return f"{record.accelerator or 'unknown'} (not recorded)"
    if device.get("gpu"):
        return device["gpu"]
    capability = f" ({device['cpu_capability']})" if device.get("cpu_capability") else ""  # older records lack it
    return f"{device['cpu']}{capability}, {device['cpu_threads']} threads"


def _machine(record: Record) -> str:
    """What a table is per: the GPU, or the CPU model (runs with other thread counts share its table;
    the device line names each)."""
    device = record.device
    return _device(record) if not device or device.get("gpu") else device["cpu"]


def provenance_lines(records: list[Record]) -> list[str]:
    """Where the folder's numbers come from: devices, commits, precision and compile, commands."""

    def values(of) -> str:
        return "; ".join(sorted({of(r) for r in records}))

    switches = values(lambda r: f"{r.precision}{', compiled' if r.compile else ''}")
    lines = [f"- device: {values(_device)}", f"- code: commit {values(_commit)}; precision: {switches}"]
    commands = distinct_commands(records)
    if commands:  # one line: a folder with many settings stays short
        lines.append(f"- command{'s' if len(commands) > 1 else ''}: " + "; ".join(f"`{c}`" for c in commands))
    if any(r.git_commit is None for r in records):
        lines.append("- some records predate the provenance fields: their code is older than the tables' commits")
    return lines


#: Options whose comma-separated values add runs: commands that differ only in them are one setting.
RUN_LISTS = ("--dataset", "--models", "--horizons", "--mask-rates", "--protocol", "--scoring", "--covariates")
#: Options that say where a run wrote or read, not what it ran.
PLACES = {"--output": None, "--resume": None, "--no-progress": None, "--data-dir": "DATA"}


def _options(command: str) -> tuple[list[str], list[tuple[str, Optional[str]]]]:
    """``command``'s words before its first option, and its (option, value or None) pairs."""
    words = shlex.split(command)
    start = next((i for i, word in enumerate(words) if word.startswith("--")), len(words))
    pairs, i = [], start
    while i < len(words):
        takes_value = i + 1 < len(words) and not words[i + 1].startswith("--")
        pairs.append((words[i], words[i + 1] if takes_value else None))
        i += 2 if takes_value else 1
    return words[:start], pairs


def _ordered(values: list[str]) -> list[str]:
    """Numbers in increasing order; names as first given."""
    try:
        return sorted(values, key=float)
    except ValueError:
        return values


def distinct_commands(records: list[Record]) -> list[str]:
    """One command per distinct setting of ``records``: commands that differ only in their output
    folder, data folder, seeds or the lists in :data:`RUN_LISTS` are merged into one that runs
    them all (``--seeds``: the records' own, where they are several)."""
    groups: dict[tuple, tuple[dict[str, list[str]], set]] = {}
    for record in (r for r in records if r.command):
        program, pairs = _options(record.command)
        kept, lists = [], {}
        for option, value in pairs:
            if option in RUN_LISTS and value is not None:
                lists[option] = value.split(",")
            elif option in PLACES:
                kept += [[option, PLACES[option]]] if PLACES[option] else []
            elif option not in ("--seed", "--seeds"):
                kept.append([option] if value is None else [option, value])
        # a list given and one left at its default are other settings: merging would drop the default
        setting = (tuple(program), tuple(map(tuple, kept)), tuple(sorted(lists)))
        merged, seeds = groups.setdefault(setting, ({}, set()))
        for option, values in lists.items():
            merged.setdefault(option, []).extend(v for v in values if v not in merged.get(option, []))
        seeds.add(record.seed)
    commands = []
    for (program, kept, _), (merged, seeds) in groups.items():
        words = [*program, *(w for option, values in merged.items() for w in (option, ",".join(_ordered(values))))]
        words += [w for pair in kept for w in pair]
        words += ["--seeds", ",".join(map(str, sorted(seeds)))] if len(seeds) > 1 else []
        commands.append(shlex.join(words))
    return sorted(commands)


def rebuild_command(program: str, page: Path, folders: list[Path]) -> str:
    return " ".join([program, str(page), *map(str, folders)])


def results_page(
    folders: list[Path],
    rebuild: str,
    other_section: Optional[Callable[[Path], str]] = None,
    closing: Optional[Callable[[list[Record]], str]] = None,
    read: Optional[dict[Path, list[Record]]] = None,
) -> str:
    """The page for ``folders`` (paths as they should read on the page), in the order given, that
    the command ``rebuild`` writes. ``other_section(folder)`` writes a folder without
    ``results.jsonl`` (a caller's own records; without it such a folder is refused);
    ``closing(records)`` a last section drawn from every record shown; ``read``: folders whose
    records the caller has read already."""
    sections = [HEADER.format(rebuild=rebuild)]
    shown: dict[str, list[Record]] = {}
    for folder in folders:
        if other_section is not None and not (Path(folder) / "results.jsonl").is_file():
            sections.append(other_section(Path(folder)))
            continue
        records = (read or {}).get(folder) or ResultStore(folder).latest()
        shown[str(folder)] = records
        if not records:
            raise ValueError(f"{folder} holds no results.jsonl records: pass folders that xct-bench wrote.")
        machines: dict[str, list[Record]] = {}
        for record in records:  # one table per machine; rows of several commits name theirs
            machines.setdefault(_machine(record), []).append(record)
        for device, group in sorted(machines.items()):
            title = f"## `{folder}`" + (f": {device}" if len(machines) > 1 else "")
            tables = summary_tables(group, records) or NO_TABLE
            sections.append("\n".join([title, "", *provenance_lines(group), "", tables]))
        covariates = covariate_sentence([r for r in records if r.task == "forecast"])
        if covariates:  # over the folder's machines: the runs with covariates beside those without
            sections[-1] += f"\n\n{covariates}"
    helps = helps_section(shown, markdown_table)
    if helps:  # the conclusion first, the tables it draws on after it
        sections.insert(1, helps)
    if closing is not None:
        sections.append(closing([r for records in shown.values() for r in records]))
    return "\n\n".join(sections) + "\n"


def write_results_page(path: Path, folders: list[Path]) -> Path:
    """Write the page of ``folders`` at ``path`` (checked by the parser: a new or an earlier page)."""
    text = results_page(folders, rebuild_command(PAGE_MARK, path, folders))
    try:
        write_atomically(Path(path), lambda partial: partial.write_text(text))
    except OSError as error:  # the parser saw a writable folder; the file system may still say no
        message = f"cannot write the page {path} ({error.strerror}): give a path in a folder you can write"
        raise ValueError(message) from None
    return Path(path)
