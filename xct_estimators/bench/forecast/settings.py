"""``xct-bench forecast``'s options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..catalog import COVARIATE_MODES, DEFAULT_MODELS, FORECAST_DATASETS, MODELS
from ..option_types import csv, csv_of, csv_positive_ints, positive_int
from ..settings import BackendSettings, CommonSettings, ComputeSettings, listed, option


@dataclass(frozen=True, kw_only=True)
class ForecastSettings(CommonSettings, ComputeSettings, BackendSettings):
    dataset: list[str] = option(
        ["synthetic"], f"comma-separated: {listed(FORECAST_DATASETS)} or a CSV path", type=csv(str)
    )
    horizons: Optional[list[int]] = option(
        help="comma-separated horizons", type=csv_positive_ints, shown="96; with --full: 96,192,336,720"
    )
    models: list[str] = option(list(DEFAULT_MODELS), "comma-separated, see models below", type=csv_of(MODELS))
    features: Optional[str] = option(
        help="M: every column a target; MS: last column the target, others past covariates",
        choices=("M", "MS"),
        shown="MS for synthetic, M otherwise",
    )
    seq_len: int = option(96, "look-back window (xctformer_searched reads its recipe's own)", type=positive_int)
    full: bool = option(False, "the paper's four horizons, 96,192,336,720")
    covariates: list[str] = option(
        ["none"],
        "comma-separated, each a run of every model that takes future covariates: "
        + "; ".join(f"{name}: {text}" for name, text in COVARIATE_MODES.items()),
        type=csv_of(tuple(COVARIATE_MODES)),
    )
