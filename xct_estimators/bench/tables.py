"""What every results table is built from: a markdown table and a number's cell."""

from __future__ import annotations


def fmt(value, spec=".3f") -> str:
    return "-" if value is None else format(value, spec)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=False)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])
