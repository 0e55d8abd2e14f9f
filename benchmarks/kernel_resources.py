"""What CRAB's Triton kernels need per program on an H100 (sm_90), read off binaries compiled here,
with no GPU: registers, the stack that spilled registers take, shared memory.

For each network ``gpu_check.py --kernel-only`` times, with that network's head width and CRAB
switches, every tiling the autotuner may pick. A program that spills reads and writes its stack
through the caches on every loop step; one whose shared memory exceeds the device's does not
launch (the autotuner skips it). Writes ``kernels.jsonl`` and ``report.md`` to ``--output``.

    python -m benchmarks.kernel_resources --output benchmarks/results/kernel_resources/DATE
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compiled binaries, not the interpreter

import triton  # noqa: E402

from benchmarks.measure.kernel_build import H100_SHARED_BYTES, compile_kernels, distinct_kernels  # noqa: E402
from benchmarks.measure.networks import KERNEL_NETWORKS, PRESETS, build  # noqa: E402
from xct_estimators.bench.provenance import provenance  # noqa: E402
from xct_estimators.nn import triton_crab  # noqa: E402


def network_rows(name: str) -> list[dict]:
    _, dataset, task, horizon = next(preset for preset in PRESETS if preset[0] == name)
    config, _, _ = build(dataset, task, horizon, smoke=False)
    clipped = config.activation == "absact_clipped"
    switches = dict(masked=config.use_mask, clipped=clipped, dropout=config.attn_dropout > 0)
    rows = []
    for tiling in triton_crab._CANDIDATES:
        queries, keys, warps, stages = tiling
        for build_ in compile_kernels("bf16", config.head_dim, tiling, **switches):
            row = {"network": name, "head_width": config.head_dim, "dtype": "bf16", **switches}
            row.update(tile=f"{queries}x{keys}", warps=warps, stages=stages, **asdict(build_))
            row["launches"] = build_.shared_bytes <= H100_SHARED_BYTES
            rows.append(row)
            print(
                f"{name}: tile {queries}x{keys}, {warps} warps, {stages} stages, {build_.kernel}: {build_.registers} "
                f"registers, {build_.spilled_bytes} bytes spilled, {build_.shared_bytes} bytes shared",
                flush=True,
            )
    return rows


def report(rows: list[dict], source: dict) -> str:
    lines = [
        "# CRAB's Triton kernels per program, compiled for sm_90 (bf16)",
        "",
        f"commit {source['git_commit']}; triton {triton.__version__}; command: `{source['command']}`",
        "",
        "registers / bytes spilled to the stack per thread; shared KiB per program (* does not launch on an H100).",
        "",
        "| network | head width | tile (queries x keys) | warps | stages | " + " | ".join(distinct_kernels()) + " |",
        "|---|---|---|---|---|" + "---|" * len(distinct_kernels()),
    ]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        key = tuple(row[name] for name in ("network", "head_width", "tile", "warps", "stages"))
        groups.setdefault(key, []).append(row)
    for key, kernels in groups.items():
        cells = [
            f"{k['registers']} / {k['spilled_bytes']}, {k['shared_bytes'] / 1024:.0f}{'' if k['launches'] else '*'}"
            for k in kernels
        ]
        lines.append("| " + " | ".join(map(str, key)) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, required=True, help="folder for kernels.jsonl and report.md")
    parser.add_argument("--networks", default=",".join(KERNEL_NETWORKS), help="comma-separated (default: %(default)s)")
    args = parser.parse_args()
    names = args.networks.split(",")
    unknown = sorted(set(names) - {preset[0] for preset in PRESETS})
    if unknown:
        parser.error(f"--networks: unknown {', '.join(unknown)}; choose from {', '.join(p[0] for p in PRESETS)}")
    source = provenance()
    rows = [row for name in names for row in network_rows(name)]
    args.output.mkdir(parents=True, exist_ok=True)
    with open(args.output / "kernels.jsonl", "w") as file:
        for row in rows:
            file.write(json.dumps({**row, **source}) + "\n")
    (args.output / "report.md").write_text(report(rows, source))
    print(f"wrote {args.output / 'report.md'}")


if __name__ == "__main__":
    main()
