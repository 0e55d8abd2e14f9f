"""``xct-bench impute``'s options."""

from __future__ import annotations

from dataclasses import dataclass

from ...nn.presets import IMPUTATION_MASK_RATES
from ..catalog import DEFAULT_IMPUTATION_MODELS, IMPUTATION_MODELS, IMPUTATION_PROTOCOLS
from ..option_types import csv, csv_of, mask_rates, positive_int
from ..settings import BackendSettings, CommonSettings, ComputeSettings, TrainingSettings, option


@dataclass(frozen=True, kw_only=True)
class ImputeSettings(TrainingSettings, CommonSettings, ComputeSettings, BackendSettings):
    dataset: list[str] = option(["ETTh1"], "comma-separated forecasting datasets or CSV paths", type=csv(str))
    models: list[str] = option(
        list(DEFAULT_IMPUTATION_MODELS), "comma-separated, see models below", type=csv_of(tuple(IMPUTATION_MODELS))
    )
    protocol: str = option(
        "tslib",
        "tslib: every test window with a fresh mask, the paper's table; series: one mask over the test split, "
        "each point imputed once",
        choices=IMPUTATION_PROTOCOLS,
    )
    eval_stride: int = option(
        1, "tslib protocol: evaluate every S-th test window", type=positive_int, shown="1, every window as the paper"
    )
    mask_rates: list[float] = option(list(IMPUTATION_MASK_RATES), "comma-separated mask rates", type=mask_rates)
    paper_recipe: bool = option(
        False,
        "train XCTFormer as the paper does, at the preset's peak learning rate with nothing undone",
        shown="off: an epoch whose validation loss diverges is undone and training goes on at a lower rate, "
        "as xct_estimators.RollBackOnDivergence does by default",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.paper_recipe and self.learning_rate:
            raise ValueError(
                "--paper-recipe trains at the preset's peak rate and --learning-rate sets another: give one of them."
            )
