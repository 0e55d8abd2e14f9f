"""A results folder's report, ``report.md``: the folder's results page (:mod:`.results_page`),
then every run's measures, with the forecast plots."""

from __future__ import annotations

from pathlib import Path

from .forecast_plots import plot_forecasts
from .option_types import REPORT_OPENING
from .page_tables import runs_table
from .record import Record
from .results import ResultStore
from .results_page import results_page
from .runs import write_atomically
from .tasks import TASKS


def full_report(records: list[Record]) -> str:
    """Every run of each task in ``records``."""
    sections = []
    for task in TASKS.values():
        mine = [r for r in records if r.task == task.name]
        if mine:
            sections.append(f"## Every {task.title} run\n\n{runs_table(mine)}")
    return "\n\n".join(sections)


def write_report(output: Path) -> tuple[str, list[Path]]:
    """Write ``report.md`` and the plots for everything in ``output``; return the text and the files."""
    output = Path(output)
    records = ResultStore(output).latest()
    if records:
        page = results_page([output], f"xct-bench report --output {output}", read={output: records})
        text = page.removeprefix("# Results\n\n") + "\n" + full_report(records)
    else:
        text = "No results yet."
    output.mkdir(parents=True, exist_ok=True)
    report = output / "report.md"
    if report.exists() and not (report.is_file() and report.read_text(errors="replace").startswith(REPORT_OPENING)):
        raise ValueError(
            f"{report} is not a report xct-bench wrote (one opens with {REPORT_OPENING.strip()!r}), and the report "
            "would overwrite it: move it, or give another --output folder."
        )
    write_atomically(report, lambda path: path.write_text(REPORT_OPENING + text + "\n"))
    plots = plot_forecasts(output, records)
    return text, [output / "report.md", *plots]


def print_report(output: Path) -> int:
    """Write the folder's report and plots, print the report and name the files."""
    text, files = write_report(output)
    print(text)
    print(f"\nResults: {output / 'results.jsonl'}")
    for path in files:
        print(f"Wrote {path}")
    return 0
