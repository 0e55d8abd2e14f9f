"""The project's results page (``docs/results.md``): the committed ``xct-bench`` record folders as
``xct-bench report --markdown`` writes them, with this lab's own records (the GPU check's kernel
and converged comparisons, the SMAP analysis) and what the paper reports that no record covers.

    python -m benchmarks.results_page docs/results.md FOLDER...    # the command at the page's top
    python -m benchmarks.results_page --check                        # exit 1 if the page is stale
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from benchmarks.measure.page_sections import converged_section, kernel_section, missing_section, smap_section
from xct_estimators.bench.results_page import rebuild_command, results_page
from xct_estimators.bench.runs import write_atomically

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"
REBUILD = "python -m benchmarks.results_page"


def lab_section(folder: Path) -> str:
    """A folder this lab wrote: ``smap_analysis``'s or a ``gpu_check`` report."""
    if (folder / "analysis.json").is_file():
        return smap_section(folder)
    if not (folder / "report.json").is_file():
        raise ValueError(f"{folder} holds neither results.jsonl nor a gpu_check or smap_analysis record.")
    converged = json.loads((folder / "report.json").read_text()).get("converged")
    return converged_section(folder) if converged else kernel_section(folder)


def page_text(page: str, folders: list[str]) -> str:
    paths = [Path(f) for f in folders]
    return results_page(paths, rebuild_command(REBUILD, Path(page), paths), lab_section, missing_section)


def committed_command(page: Path = PAGE) -> tuple[str, list[str]]:
    """The page and folders of the rebuild command at the top of ``page``."""
    line = next(line for line in page.read_text().splitlines() if line.strip().startswith(REBUILD))
    words = shlex.split(line)[len(shlex.split(REBUILD)) :]
    return words[0], words[1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", nargs="?", help="the page to write (default: the committed page's own command)")
    parser.add_argument("folders", nargs="*", help="record folders, in the page's order")
    parser.add_argument("--check", action="store_true", help="rebuild the committed page in memory; exit 1 if stale")
    args = parser.parse_args(argv)
    page, folders = (args.page, args.folders) if args.page else committed_command()
    text = page_text(page, folders)
    if args.check:
        stale = (ROOT / page).read_text() != text
        print(f"{page} is stale: run {REBUILD}" if stale else f"{page} is up to date")
        return int(stale)
    write_atomically(ROOT / page, lambda partial: partial.write_text(text))
    print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
