"""The forecasting table: per run MSE and MAE beside the paper's, then the averages over horizons."""

from __future__ import annotations

from collections import defaultdict

from ...nn.presets import get_preset
from .. import paper
from ..comparison import covariate_sentence, winner_sentence
from ..models import preset_name
from ..tables import (
    ERROR_HEADER,
    MIXED,
    TIME_HEADER,
    compute_cells,
    compute_header,
    compute_label,
    error_cells,
    fmt,
    forecast_setting,
    markdown_table,
    mixed_settings,
    time_cells,
)
from .record import ForecastRecord


def forecast_table(records: list[ForecastRecord]) -> str:
    """Per (dataset, horizon, model): measured MSE/MAE, the paper's XCTFormer numbers and the gaps;
    then the average over horizons for every (dataset, model) with all its horizons run."""
    records = sorted(records, key=lambda r: (r.dataset, r.horizon, r.model))
    rows = []
    for r in records:
        ref = paper.forecast_reference(r.dataset, r.horizon, r.model)
        run = [r.dataset, r.horizon, r.model, forecast_setting(r), *compute_cells([r], records), r.seed]
        rows.append([*run, *error_cells(r.mse, r.mae, ref), *time_cells(r)])
    header = ["dataset", "horizon", "model", "settings", *compute_header(records), "seed", *ERROR_HEADER]
    covariates = covariate_sentence(records)
    out = winner_sentence(records) + (f" {covariates}" if covariates else "")
    out += "\n\n" + markdown_table(header + TIME_HEADER, rows)
    out += shortened_training_note(records)
    averages, averaged = average_rows(records)
    if averages:
        out += "\n\nAverage over horizons " + ", ".join(map(str, paper.HORIZONS)) + ". "
        out += winner_sentence(averaged) + "\n\n" + averages
    return out


def shortened_training_note(records: list[ForecastRecord]) -> str:
    """A line under the table for each dataset whose XCTFormer trained fewer epochs than the
    paper's preset: its gap to the paper's numbers is not the model's alone."""
    notes = []
    for dataset in sorted({r.dataset for r in records}):
        preset = get_preset(preset_name(dataset), ForecastRecord.TASK)
        trained = sorted(
            {r.epochs for r in records if r.dataset == dataset and r.model.startswith("xctformer") and r.epochs}
        )
        if trained and trained[0] < preset.epochs:
            notes.append(
                f"{dataset}: XCTFormer trained {', '.join(map(str, trained))} epochs here, the paper's preset "
                f"({preset.dataset}) {preset.epochs}, so the gap to the paper's numbers is partly the shorter "
                f"training; `--full` or `--epochs {preset.epochs}` trains the preset's epochs."
            )
    return "".join(f"\n\n{note}" for note in notes)


def average_rows(records: list[ForecastRecord]) -> tuple[str, list[ForecastRecord]]:
    """The table of averages over the paper's horizons, and the averages as records (horizon "avg")."""
    groups: dict[tuple, dict[int, ForecastRecord]] = defaultdict(dict)
    for r in records:
        groups[(r.dataset, r.model, forecast_setting(r), compute_label(r), r.seed)][r.horizon] = r
    rows, averaged = [], []
    for (dataset, model, setting, _, seed), by_horizon in sorted(groups.items()):
        if not set(paper.HORIZONS) <= set(by_horizon):
            continue
        mse = sum(by_horizon[h].mse for h in paper.HORIZONS) / len(paper.HORIZONS)
        mae = sum(by_horizon[h].mae for h in paper.HORIZONS) / len(paper.HORIZONS)
        first = by_horizon[paper.HORIZONS[0]]
        averaged.append(first.replace(run=None, horizon="avg", mse=mse, mae=mae))
        ref = paper.forecast_reference(dataset, "avg", model)
        seconds = sum(by_horizon[h].fit_seconds + by_horizon[h].eval_seconds for h in paper.HORIZONS)
        cells = [by_horizon[h] for h in paper.HORIZONS]
        setting += MIXED if mixed_settings(cells, ("horizon", "output_chunk_length")) else ""
        errors = error_cells(mse, mae, ref)
        rows.append([dataset, model, setting, *compute_cells(cells, records), seed, *errors, fmt(seconds, ".0f")])
    if not rows:
        return "", []
    header = ["dataset", "model", "settings", *compute_header(records), "seed"]
    header += "avg MSE|avg MAE|paper MSE|paper MAE|gap MSE|gap MAE|total s".split("|")
    return markdown_table(header, rows), averaged
