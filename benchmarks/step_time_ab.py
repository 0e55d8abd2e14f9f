"""``benchmarks/step_time.py`` on two commits, interleaved: the CPU's speed before and after a change.

Each commit is checked out into a temporary git worktree; the rounds alternate in ABBA order
(before, after, after, before, ...) so that the machine's drift hits both alike, each round a fresh process of
``step_time.py`` on that tree. Prints, per network, the median over rounds of each commit's
milliseconds and the ratio after / before (below 1: faster), and writes them with both commits,
the device and the versions to ``--json``.

    python -m benchmarks.step_time_ab --before b18b945 --after HEAD --rounds 3 \\
        --networks ETTh1,ETTh1-impute,MSL-anomaly --json out.json -- --threads 2 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from xct_estimators.bench.provenance import provenance

ROOT = Path(__file__).resolve().parents[1]
#: The step_time columns compared: (JSON key, path).
COLUMNS = [("train_ms", "fused"), ("train_ms", "plain"), ("infer_ms", "fused"), ("infer_ms", "plain")]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def _round(tree: Path, networks: str, extra: list[str], scratch: Path) -> dict:
    out = scratch / "round.json"
    command = [sys.executable, "-m", "benchmarks.step_time", "--networks", networks, "--json", str(out)]
    subprocess.run([*command, *extra], check=True, env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)
    return {row["network"]: row for row in json.loads(out.read_text())["rows"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--after", default="HEAD", help="the commit after it (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per commit, alternating (default: 3)")
    parser.add_argument("--networks", default="ETTh1,ETTh1-impute,MSL-anomaly")
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    commits = {side: _git("rev-parse", getattr(args, side)) for side in ("before", "after")}
    results: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as scratch:
        trees = {side: Path(scratch) / side for side in commits}
        for side, commit in commits.items():
            _git("worktree", "add", "--detach", "--force", str(trees[side]), commit)
        try:
            for index in range(args.rounds):
                for side in ("before", "after") if index % 2 == 0 else ("after", "before"):  # ABBA order
                    print(f"round {index + 1}/{args.rounds}: {side} ({commits[side][:10]})", flush=True)
                    results[side].append(_round(trees[side], args.networks, extra, Path(scratch)))
        finally:
            for tree in trees.values():
                _git("worktree", "remove", "--force", str(tree))
    rows = []
    print(f"{'network':<14} {'column':<12} {'before ms':>10} {'after ms':>10} {'after/before':>12}")
    for network in args.networks.split(","):
        for key, path in COLUMNS:
            before, after = (
                statistics.median(r[network][key][path] for r in results[side]) for side in ("before", "after")
            )
            rows.append({"network": network, "column": f"{key}.{path}", "before_ms": before, "after_ms": after})
            print(f"{network:<14} {key + '.' + path:<12} {before:>10.1f} {after:>10.1f} {after / before:>12.3f}")
    if args.json:
        record = {"commits": commits, "rounds": args.rounds, "step_time_args": extra, "rows": rows}
        Path(args.json).write_text(json.dumps({**record, "provenance": provenance(argv)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
