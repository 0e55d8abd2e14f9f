"""The imputation table: per run MSE and MAE beside the paper's, with the protocol and training
that produced them, then the averages over mask rates beside the paper's best baseline."""

from __future__ import annotations

from collections import defaultdict

from ...nn.presets import IMPUTATION_MASK_RATES
from .. import paper
from ..comparison import winner_sentence
from ..tables import (
    ERROR_HEADER,
    MIXED,
    TIME_HEADER,
    compute_cells,
    compute_header,
    compute_label,
    error_cells,
    fmt,
    imputation_setting,
    markdown_table,
    mixed_settings,
    time_cells,
)
from .record import ImputeRecord


def imputation_table(records: list[ImputeRecord]) -> str:
    """Per run: our MSE/MAE beside the paper's XCTFormer numbers for that dataset and mask rate
    (Table 3's full version), with the protocol and strides that produced them; then averages
    over the four mask rates beside the paper's XCTFormer and best-baseline averages."""
    records = sorted(records, key=lambda r: (r.dataset, r.protocol or "", r.mask_rate, r.model))
    rows = []
    for r in records:
        ref = paper.IMPUTATION.get(paper.dataset_key(r.dataset), {}).get(r.mask_rate)
        run = [r.dataset, r.mask_rate, r.model, *imputation_setting(r), *compute_cells([r], records)]
        rows.append([*run, _best_epoch(r), r.seed, *error_cells(r.mse, r.mae, ref), *time_cells(r)])
    header = ["dataset", "mask rate", "model", *IMPUTATION_SETTING_HEADER, *compute_header(records), "best epoch"]
    header += ["seed", *ERROR_HEADER, *TIME_HEADER]
    out = (
        winner_sentence(records)
        + " Paper columns: XCTFormer's published numbers (every row is compared with them).\n\n"
    )
    out += markdown_table(header, rows)
    averages, averaged = imputation_averages(records)
    if averages:
        out += "\n\nAverage over mask rates " + ", ".join(map(str, IMPUTATION_MASK_RATES)) + ". "
        out += winner_sentence(averaged) + "\n\n" + averages
    return out


IMPUTATION_SETTING_HEADER = ["protocol", "train stride", "eval stride", "epochs", "peak lr", "rolled back", "windows"]


def _best_epoch(record: ImputeRecord):
    """The epoch whose weights were kept (1 = the first), so a run that stopped improving early shows."""
    best = record.settings.get("best_epoch")
    return "-" if best is None else best + 1


def imputation_averages(records: list[ImputeRecord]) -> tuple[str, list[ImputeRecord]]:
    """The table of averages over the paper's mask rates, and the averages as records."""
    groups: dict[tuple, dict[float, ImputeRecord]] = defaultdict(dict)
    for r in records:
        setting = tuple(imputation_setting(r)[:6])  # all but the windows
        groups[(r.dataset, r.model, setting, compute_label(r), r.seed)][r.mask_rate] = r
    rows, averaged = [], []
    for (dataset, model, setting, _, seed), by_rate in sorted(groups.items(), key=lambda item: str(item[0])):
        if not set(IMPUTATION_MASK_RATES) <= set(by_rate):
            continue
        mse, mae = (sum(getattr(by_rate[m], key) for m in IMPUTATION_MASK_RATES) / 4 for key in ("mse", "mae"))
        averaged.append(by_rate[IMPUTATION_MASK_RATES[0]].replace(run=None, mask_rate="avg", mse=mse, mae=mae))
        published = paper.IMPUTATION.get(paper.dataset_key(dataset))
        ours = published and tuple(sum(published[m][i] for m in IMPUTATION_MASK_RATES) / 4 for i in (0, 1))
        best = paper.best_imputation_baseline(dataset)
        cells = [by_rate[m] for m in IMPUTATION_MASK_RATES]
        mixed = MIXED if mixed_settings(cells, ("mask_rate",)) else ""
        baseline = f"{best[0]} ({paper.imputation_group(dataset)})" if best else "-"
        numbers = [*map(fmt, (mse, mae, ours and ours[0], ours and ours[1])), baseline]
        rows.append(
            [dataset, model + mixed, *setting, *compute_cells(cells, records), seed, *numbers]
            + [fmt(best and best[1][0]), fmt(best and best[1][1])]
        )
    if not rows:
        return "", []
    numbers = "avg MSE|avg MAE|paper XCTFormer MSE|paper XCTFormer MAE|paper best baseline|its MSE|its MAE".split("|")
    header = ["dataset", "model", *IMPUTATION_SETTING_HEADER[:6], *compute_header(records), "seed", *numbers]
    return markdown_table(header, rows), averaged
