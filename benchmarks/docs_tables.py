"""Blocks of the docs generated from their one home: the committed benchmark records, pyproject
and the ``xct-bench`` parser.

A block in a Markdown file between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` is
the table ``NAME`` below: measurements with a line naming their record, device and commit, the
supported versions, or every ``xct-bench`` option. Nothing in such a block is typed by hand.
``python -m benchmarks.docs_tables`` rewrites every block in README.md and docs/*.md; ``--check``
lists stale blocks and exits 1 if any (the tests run it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from benchmarks import detection_ablation
from benchmarks.measure import compact_table, covariate_tables, lookback_tables
from benchmarks.measure.estimates import STEP_RECORDS
from benchmarks.measure.gpu_report import compile_modes_table
from benchmarks.measure.option_reference import option_reference
from benchmarks.measure.package_tables import ablation_models, covariate_families, estimator_parameters

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def _latest(pattern: str) -> Path:
    found = sorted(RESULTS.glob(pattern))
    if not found:
        raise FileNotFoundError(f"No record matches benchmarks/results/{pattern}: run the benchmark that writes it.")
    return found[-1]


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def compile_cpu() -> str:
    """Training and inference steps, eager vs compiled fused network on a CPU (``step_time.py --compile``)."""
    path = _latest("step_time/*/compile.json")
    record = json.loads(path.read_text())
    rows = []
    for row in record["rows"]:
        cells = [row["network"], str(row["batch"]), str(row["tokens"])]
        for ms in (row["train_ms"], row["infer_ms"]):
            cells += [f"{ms['fused']:.1f}", f"{ms['compiled']:.1f}", f"{ms['compiled'] / ms['fused']:.2f}"]
        rows.append(cells)
    header = ["network", "batch", "tokens"]
    header += [name for step in ("train", "infer") for name in (f"{step} eager", f"{step} compiled", "ratio")]
    origin = record["provenance"]
    source = (
        f"\nms per step, the fused path eager and compiled (ratio < 1: compiled is faster). {origin['device']['cpu']}, "
        f"{record['threads']} threads, torch {record['torch']}, commit {origin['git_commit'][:7]}; command: "
        f"`{origin['command']}`; record: `{_relative(path)}`.\n"
    )
    return compact_table(header, rows) + source


#: The libraries of the versions table: as records name them -> as pyproject names them.
LIBRARIES = {name: name for name in ("python", "torch", "pytorch_lightning", "darts", "sktime", "numpy")}
LIBRARIES["pytorch_lightning"] = "pytorch-lightning"


def _required() -> dict[str, str]:
    """pyproject's range per library (Lightning comes with Darts' torch extra)."""
    text = (ROOT / "pyproject.toml").read_text()
    found = {"python": re.search(r'requires-python = "([^"]+)"', text).group(1)}
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    for spec in re.findall(r'"([^"]+)"', block):
        name = re.match(r"[\w-]+", spec).group(0)
        found[name] = spec[len(name) :].split("]")[-1] or "any"
    found.setdefault("pytorch-lightning", "with darts[torch]")
    return found


def versions() -> str:
    """Library versions: what pyproject requires, and what the newest CPU and GPU records ran."""
    newest: dict[str, tuple[str, dict, Path]] = {}
    for path in RESULTS.glob("**/results.jsonl"):
        for line in filter(str.strip, path.read_text().splitlines()):
            record = json.loads(line)
            kind = "GPU" if (record.get("device") or {}).get("gpu") else "CPU"
            if "versions" in record and record.get("finished_at", "") >= newest.get(kind, ("",))[0]:
                newest[kind] = (record["finished_at"], record, path)
    required = _required()
    kinds = [kind for kind in ("CPU", "GPU") if kind in newest]
    rows = []
    for key, name in LIBRARIES.items():
        tested = [newest[kind][1]["versions"].get(key, "-") for kind in kinds]
        rows.append([name, required.get(name, "-"), *("-" if "not importable" in v else v for v in tested)])
    header = ["library", "requires", *(f"tested ({kind})" for kind in kinds)]
    sources = "; ".join(
        f"{kind}: {newest[kind][1]['device'].get('gpu') or newest[kind][1]['device']['cpu']}, "
        f"commit {newest[kind][1]['git_commit'][:7]}, `{_relative(newest[kind][2])}`"
        for kind in kinds
    )
    return compact_table(header, rows) + f"\nTested: the newest benchmark records ({sources}).\n"


TABLES = {
    # a table of a script's record lives in that script
    "decoder-choice": lambda: covariate_tables.table(RESULTS, ROOT),
    "covariate-suite": lambda: covariate_tables.suite_table(RESULTS, ROOT),
    "covariate-calendar": lambda: covariate_tables.calendar_table(RESULTS, ROOT),
    "covariate-errors": lambda: covariate_tables.error_split_table(RESULTS, ROOT),
    "lookback-frontier": lambda: lookback_tables.frontier_table(RESULTS, ROOT),
    "lookback-inputs": lambda: lookback_tables.look_back_table(RESULTS, ROOT),
    "lookback-recipes": lambda: lookback_tables.recipes_table(RESULTS, ROOT),
    "covariate-families": covariate_families,
    "detection-ablation": lambda: detection_ablation.table(RESULTS, ROOT),
    "estimator-parameters": estimator_parameters,
    "ablation-models": ablation_models,
    "compile-gpu": lambda: compile_modes_table([RESULTS / path for path in STEP_RECORDS], ROOT),
    "compile-cpu": compile_cpu,
    "versions": versions,
    "xct-bench-options": option_reference,
}


def refreshed(text: str, where: str) -> str:
    """``text`` with every generated block rebuilt."""

    def build(match: re.Match) -> str:
        name = match.group("name")
        if name not in TABLES:
            raise ValueError(f"{where}: unknown generated block {name!r}; known: {', '.join(TABLES)}.")
        return match.group(1) + TABLES[name]() + match.group(4)

    return BLOCK.sub(build, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list stale blocks; exit 1 if any")
    args = parser.parse_args(argv)
    stale = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        text = path.read_text()
        new = refreshed(text, _relative(path))
        if new != text:
            stale.append(_relative(path))
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(f"stale generated tables in {', '.join(stale)}: run python -m benchmarks.docs_tables", file=sys.stderr)
        return 1
    for name in stale:
        print(f"rewrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
