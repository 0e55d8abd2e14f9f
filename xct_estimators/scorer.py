"""XCTFormerScorer: XCTFormer's reconstruction error as a Darts anomaly scorer."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
from darts import TimeSeries
from darts.ad.scorers.scorers import FittableAnomalyScorer

from .nn import DEFAULT_MAX_ATTENTION_BYTES
from .nn.compiling import CompileOption
from .nn.hyperparameters import RECONSTRUCTION_DEFAULTS, with_network_parameters
from .reconstruction import (
    DEFAULT_LEARNING_RATE,
    DEFAULT_MAX_EPOCHS,
    DEFAULT_PATIENCE,
    DEFAULT_VALIDATION_FRACTION,
    TRAINING_PARAMETERS,
    ReconstructionEngine,
    preset_params,
)


@with_network_parameters("darts", more=TRAINING_PARAMETERS)
class XCTFormerScorer(FittableAnomalyScorer):
    """Darts anomaly scorer: XCTFormer's per-step reconstruction error.

    ``fit(series)`` trains the network to reconstruct windows of (anomaly-free) series;
    ``score(series)`` returns a TimeSeries of squared reconstruction errors, averaged over the
    components (``component_wise=False``) or one per component (``component_wise=True``). Use it
    with ``darts.ad`` detectors (``QuantileDetector``, ``ThresholdDetector``) and ``eval_metric``.

    Parameters
    ----------
    window_length
        Length of the windows the network reconstructs; see :class:`ReconstructionEngine`.
    <network parameters>
    <training parameters>
    component_wise
        Whether to score each component separately. Default: ``False``.

    Examples
    --------
    >>> from darts.ad import QuantileDetector
    >>> scorer = XCTFormerScorer(window_length=48, n_epochs=5).fit(train)
    >>> threshold = QuantileDetector(high_quantile=0.99).fit(scorer.score(train))  # training scores
    >>> anomalies = threshold.detect(scorer.score(test))
    """

    def __init__(
        self,
        window_length: int = 96,
        patch_len: int = 16,
        stride: int = 8,
        d_model: int = 32,
        n_heads: int = 2,
        d_ff: int = 64,
        e_layers: int = 2,
        dropout: float = 0.1,
        fc_dropout: float = 0.05,
        attn_dropout: float = RECONSTRUCTION_DEFAULTS["attn_dropout"],
        decop_k: Optional[int] = None,
        use_mask: bool = True,
        activation: str = "absact",
        mixing: str = "full",
        n_epochs: int = DEFAULT_MAX_EPOCHS,
        batch_size: int = 32,
        learning_rate: float = DEFAULT_LEARNING_RATE,
        patience: Optional[int] = DEFAULT_PATIENCE,
        validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
        patience_after_warmup: bool = True,
        window_stride: Optional[int] = None,
        train_stride: int = 1,
        random_state: Optional[int] = None,
        accelerator: str = "auto",
        devices: Any = "auto",
        precision: str = "32",
        progress_bar: bool = False,
        max_attention_bytes: Optional[int] = DEFAULT_MAX_ATTENTION_BYTES,
        inference_device: Optional[str] = None,
        pl_trainer_kwargs: Optional[dict[str, Any]] = None,
        compile: CompileOption = False,
        component_wise: bool = False,
    ):
        super().__init__(is_univariate=not component_wise, window=1, window_agg=False)
        self.component_wise = component_wise
        arguments = locals()
        self.engine = ReconstructionEngine(**{name: arguments[name] for name in _ENGINE_ARGUMENTS})

    @classmethod
    def from_preset(cls, dataset: str, **overrides) -> XCTFormerScorer:
        """A scorer with the paper's anomaly-detection hyperparameters for ``dataset``."""
        return cls(**{**preset_params(dataset, "anomaly"), **overrides})

    def __str__(self):
        return "XCTFormerScorer"

    def _fit_core(self, series: Sequence[TimeSeries], *args, **kwargs):
        # The concatenation of the sequence, as Darts' fittable scorers do.
        values = np.concatenate([s.values(copy=False) for s in series])
        self.engine.fit(values)
        self._components = [str(c) for c in series[0].components]

    @property
    def network_(self):
        """The trained :class:`~xct_estimators.nn.XCTFormerNet` (after ``fit``)."""
        return self.engine.network_

    @property
    def channel_names_(self) -> list[str]:
        """The components of the series the scorer was fitted on."""
        self.network_  # noqa: B018 (raises before fit)
        return list(getattr(self, "_components", None) or self.engine.channel_names_)

    def _score_core(self, series: Sequence[TimeSeries], *args, **kwargs) -> Sequence[TimeSeries]:
        out = []
        for s in series:
            errors = self.engine.score(s.values(copy=False))
            if not self.component_wise:
                errors = errors.mean(axis=1, keepdims=True)
            components = list(s.components) if self.component_wise else ["reconstruction_error"]
            out.append(TimeSeries.from_times_and_values(s.time_index, errors, columns=components))
        return out


#: Every constructor argument but ``component_wise`` goes to the engine.
_ENGINE_ARGUMENTS = [
    name for name in inspect.signature(XCTFormerScorer.__init__).parameters if name not in ("self", "component_wise")
]
