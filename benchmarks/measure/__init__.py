"""Measurement code behind the lab's scripts (``gpu_check``, ``paper_scale``, ``step_time``): the
scripts parse their options and call these modules."""


def compact_table(header: list[str], rows: list[list]) -> str:
    """A markdown table without padding (the docs' generated blocks), ending in a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows]) + "\n"
