"""What every results table is built from: a markdown table, a number's and a row's cells, and the
settings that tell two runs of one model apart."""

from __future__ import annotations

import json

from . import paper
from .forecast.record import ForecastRecord
from .impute.record import ImputeRecord
from .record import Record


def fmt(value, spec=".3f") -> str:
    return "-" if value is None else format(value, spec)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=False)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def forecast_setting(record: ForecastRecord) -> str:
    """What tells two runs of one model apart in a table: features, look-back, epochs, future covariates."""
    if record.features is None:
        return "-"
    training = "untrained" if record.epochs is None else f"{record.epochs} ep"
    covariates = f", +{record.covariates}" if record.covariates else ""
    return f"{record.features}, L={record.seq_len or '?'}, {training}{covariates}"


def imputation_setting(record: ImputeRecord) -> list:
    """Protocol, strides, epochs, peak learning rate, the epochs a rollback undid (``-``: trained
    without one; ``none``: none diverged), windows."""
    cells = [getattr(record, key) or "-" for key in ("train_stride", "eval_stride", "epochs")]
    settings = record.settings
    peak = settings.get("learning_rate")  # what trains: XCTFormer, SAITS
    rollback = "-"
    if "rollback_on_divergence" in settings:
        rollback = ", ".join(f"epoch {e + 1}" for e in settings.get("rolled_back_at", [])) or "none"
    peak_cell = f"{peak:g}" if peak else "-"
    return [record.protocol, *cells, peak_cell, rollback, record.n_windows or "-"]


def compute_label(record: Record) -> str:
    """How the record's network computed, when not the default float32 eager run."""
    precision = record.precision
    return ", ".join([precision] * (precision != "32") + ["compiled"] * bool(record.compile))


def _gap(value) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def error_cells(mse: float, mae: float, reference) -> list[str]:
    """MSE, MAE, the paper's MSE and MAE, and the relative gaps."""
    paper_mse, paper_mae = reference or (None, None)
    gaps = (paper.relative_gap(mse, paper_mse), paper.relative_gap(mae, paper_mae))
    return [*map(fmt, (mse, mae, paper_mse, paper_mae)), *map(_gap, gaps)]


ERROR_HEADER = ["MSE", "MAE", "paper MSE", "paper MAE", "gap MSE", "gap MAE"]
TIME_HEADER = ["fit s", "eval s"]


def time_cells(record: Record) -> list[str]:
    return [fmt(record.fit_seconds, ".0f"), fmt(record.eval_seconds, ".1f")]


#: What can tell rows of one table apart beyond their settings: the code, and how the network computed.
_ORIGINS = {
    "commit": lambda r: (r.git_commit or "not recorded")[:7],
    "compute": lambda r: compute_label(r) or "fp32",
}


def _origins(records: list[Record]) -> list[str]:
    return [name for name, part in _ORIGINS.items() if len({part(r) for r in records}) > 1]


def compute_header(records: list[Record]) -> list[str]:
    """One column for the commit and for precision and compile, when the table's rows differ in them."""
    return [" / ".join(_origins(records))] if _origins(records) else []


def compute_cells(cells: list[Record], records: list[Record]) -> list[str]:
    """The commit and compute of a row made of ``cells`` (one run, or every run its average is over)."""
    names = _origins(records)
    return [", ".join(" + ".join(sorted({_ORIGINS[name](r) for r in cells})) for name in names)] if names else []


def mixed_settings(records: list[Record], varying: tuple[str, ...]) -> bool:
    """Whether ``records`` (one average's cells) were run with different settings, apart from
    the ``varying`` fields (the horizon or mask rate the average is over)."""

    def rest(record):
        run = dict(record.run or {})
        for key in varying:
            run.pop(key, None)
        settings = {k: v for k, v in (run.pop("settings", None) or {}).items() if k not in varying}
        return json.dumps([run, settings], sort_keys=True)

    return len({rest(r) for r in records}) > 1


MIXED = " (mixed settings!)"
