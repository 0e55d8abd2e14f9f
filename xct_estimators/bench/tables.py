"""What every results table is built from: a markdown table, a number's cell, and the settings
that tell two runs of one model apart."""

from __future__ import annotations


def fmt(value, spec=".3f") -> str:
    return "-" if value is None else format(value, spec)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=False)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def compact_table(header: list[str], rows: list[list]) -> str:
    """A markdown table without padding (the docs' generated blocks), ending in a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows]) + "\n"


def forecast_setting(record: dict) -> str:
    """What tells two runs of one model apart in a table: features, look-back, epochs, future covariates."""
    if "features" not in record:
        return "-"
    epochs = record.get("epochs", "?")
    training = "untrained" if epochs is None else f"{epochs} ep"
    covariates = f", +{record['covariates']}" if record.get("covariates") else ""
    return f"{record['features']}, L={record.get('seq_len', '?')}, {training}{covariates}"


def imputation_setting(record: dict) -> list:
    """Protocol, strides, epochs, peak learning rate, the epochs a rollback undid (``-``: trained
    without one; ``none``: none diverged), windows."""
    cells = [record.get(key) or "-" for key in ("train_stride", "eval_stride", "epochs")]
    settings = record.get("settings") or {}
    peak = settings.get("learning_rate")  # what trains: XCTFormer, SAITS
    rollback = "-"
    if "rollback_on_divergence" in settings:
        rollback = ", ".join(f"epoch {e + 1}" for e in settings.get("rolled_back_at", [])) or "none"
    peak_cell = f"{peak:g}" if peak else "-"
    return [record.get("protocol", "series"), *cells, peak_cell, rollback, record.get("n_windows") or "-"]
