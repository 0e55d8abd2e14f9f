"""What an anomaly-detection run records: F1 with and without point adjustment, the
threshold-free measures, and the threshold rule's inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ..record import Record


@dataclass(frozen=True, kw_only=True)
class DetectRecord(Record):
    TASK: ClassVar[str] = "detect"
    WHERE: ClassVar[str] = "protocol"

    protocol: str
    f1: float
    f1_adjusted: float
    auc_pr: float
    auc_roc: Optional[float] = None
    vus_pr: Optional[float] = None  # None: written before VUS
    vus_roc: Optional[float] = None
    precision_unadjusted: Optional[float] = None  # None: written when "precision" named it
    recall: Optional[float] = None
    precision_adjusted: Optional[float] = None
    recall_adjusted: Optional[float] = None
    threshold: Optional[float] = None
    anomaly_ratio: Optional[float] = None  # percent: the threshold is the (100 - ratio) percentile
    arch: Optional[dict] = None  # the preset's network settings --arch changed
    train_stride: Optional[int] = None
    window_length: Optional[int] = None
    n_train_windows: Optional[int] = None
    n_entities: Optional[int] = None  # the entity protocol: entities with an anomaly, averaged over
    per_entity: Optional[dict] = None  # the entity protocol: each entity's VUS-PR, AUC-PR and AUC-ROC

    def describe(self) -> str:
        return f"{self.protocol} protocol"
