"""How long ``xct-bench`` takes to answer ``--help`` and an argument error (the goal: well under
2 s), each the median of a few fresh processes.

    python -m benchmarks.cli_startup [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "xct-bench --help": ["--help"],
    "xct-bench forecast --help": ["forecast", "--help"],
    "xct-bench impute --mask-rates 1.5 (an argument error)": ["impute", "--mask-rates", "1.5"],
    "xct-bench report --output <missing folder>": ["report", "--output", "/nonexistent/xct-bench-results"],
}


def seconds(argv: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "xct_estimators.bench", *argv], capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    for name, case in CASES.items():
        print(f"{seconds(case, args.repeats):6.2f} s  {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
