"""What a forecasting run records: MSE and MAE over every test window, and the data it saw."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ..record import Record


@dataclass(frozen=True, kw_only=True)
class ForecastRecord(Record):
    TASK: ClassVar[str] = "forecast"
    WHERE: ClassVar[str] = "horizon"

    horizon: int  # "avg" in a table's average over the paper's horizons
    mse: float
    mae: float
    features: Optional[str] = None  # M: every column a target; MS: one target, the rest past covariates
    seq_len: Optional[int] = None
    epochs: Optional[int] = None  # None: a model that trains nothing
    covariates: Optional[str] = None  # the future covariates, where any
    ms_mode: Optional[str] = None  # MS for a model without past covariates: how it ran
    noise_floor: Optional[float] = None  # a generated dataset's: the MSE of a forecast that misses only the noise
    recipe: Optional[dict] = None  # a searched recipe's: {"searched_at": the horizon its search ran at}

    def describe(self) -> str:
        where = f"horizon {self.horizon}" if self.horizon != "avg" else "average"
        return where + (f", +{self.covariates}" if self.covariates else "")
