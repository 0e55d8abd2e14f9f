"""What an imputation run records: MSE and MAE over the hidden points, and how they were hidden."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ..record import Record


@dataclass(frozen=True, kw_only=True)
class ImputeRecord(Record):
    TASK: ClassVar[str] = "impute"
    WHERE: ClassVar[str] = "mask_rate"

    mask_rate: float  # "avg" in a table's average over the paper's mask rates
    mse: float
    mae: float
    protocol: str = "series"  # the records before the tslib protocol ran the series one
    eval_stride: Optional[int] = None
    train_stride: Optional[int] = None  # None: a model that trains nothing
    window_length: Optional[int] = None
    epochs: Optional[int] = None
    n_hidden: Optional[int] = None

    def describe(self) -> str:
        return f"mask rate {self.mask_rate:g}, {self.protocol}" if self.mask_rate != "avg" else "average"
