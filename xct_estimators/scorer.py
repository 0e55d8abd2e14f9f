"""XCTFormerScorer: XCTFormer's reconstruction error as a Darts anomaly scorer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any, Optional

import numpy as np
from darts import TimeSeries
from darts.ad.scorers.scorers import FittableAnomalyScorer

from .channel_scores import (
    DEFAULT_CHANNEL_AGGREGATION,
    DEFAULT_ERROR_SCALING,
    PAPER_SCORE,
    SCORING_PARAMETERS,
    Aggregation,
    ErrorScale,
    check_scoring,
    scaled,
    step_scores,
)
from .nn import DEFAULT_MAX_ATTENTION_BYTES
from .nn.compiling import CompileOption
from .nn.hyperparameters import RECONSTRUCTION_DEFAULTS, documented
from .reconstruction import (
    DEFAULT_FILL,
    DEFAULT_LEARNING_RATE,
    DEFAULT_MAX_EPOCHS,
    DEFAULT_PATIENCE,
    DEFAULT_VALIDATION_FRACTION,
    TRAINING_PARAMETERS,
    ReconstructionEngine,
    preset_params,
)
from .reconstruction_inference import check_hidden_passes


@documented("darts", more={**TRAINING_PARAMETERS, **SCORING_PARAMETERS})
class XCTFormerScorer(FittableAnomalyScorer):
    """Darts anomaly scorer: XCTFormer's per-step reconstruction error.

    ``fit(series)`` trains the network to reconstruct windows of (anomaly-free) series;
    ``score(series)`` returns a TimeSeries of squared reconstruction errors, each component's
    standardised by its mean and spread on the fitted series (``error_scaling``), then aggregated
    over the components (``channel_aggregation``; ``component_wise=True``: one per component).
    ``error_scaling="none"`` with ``"mean"`` is the paper's score; with ``mask_rate`` and
    ``hidden_passes`` each point's error is taken where it was hidden from the network. Use it with ``darts.ad``
    detectors (``QuantileDetector``, ``ThresholdDetector``) and ``eval_metric``.

    Parameters
    ----------
    window_length
        Length of the windows the network reconstructs; see :class:`ReconstructionEngine`.
    {parameters}
    component_wise
        Whether to score each component separately (scaled, not aggregated). Default: ``False``.

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
        mask_rate: Optional[float] = None,
        fill: str = DEFAULT_FILL,
        window_stride: Optional[int] = None,
        train_stride: int = 1,
        random_state: Optional[int] = None,
        accelerator: str = "auto",
        devices: Any = "auto",
        precision: str = "32",
        progress_bar: bool = False,
        max_attention_bytes: Optional[int] = DEFAULT_MAX_ATTENTION_BYTES,
        fused_attention: Optional[bool] = None,
        inference_device: Optional[str] = None,
        pl_trainer_kwargs: Optional[dict[str, Any]] = None,
        compile: CompileOption = False,
        component_wise: bool = False,
        error_scaling: str = DEFAULT_ERROR_SCALING,
        channel_aggregation: Aggregation = DEFAULT_CHANNEL_AGGREGATION,
        hidden_passes: Optional[int] = None,
    ):
        arguments = locals()
        super().__init__(is_univariate=not component_wise, window=1, window_agg=False)
        check_scoring(error_scaling, channel_aggregation)
        check_hidden_passes(hidden_passes)
        self.component_wise, self.hidden_passes = component_wise, hidden_passes
        self.error_scaling, self.channel_aggregation = error_scaling, channel_aggregation
        engine = {field.name for field in fields(ReconstructionEngine)}  # every other argument is the engine's
        self.engine = ReconstructionEngine(**{name: value for name, value in arguments.items() if name in engine})

    @classmethod
    def from_preset(cls, dataset: str, **overrides) -> XCTFormerScorer:
        """A scorer with the paper's anomaly-detection hyperparameters for ``dataset``."""
        return cls(**{**preset_params(dataset, "anomaly"), **overrides})

    def __setstate__(self, state: dict) -> None:
        if "error_scaling" not in state:  # saved before the choice existed: the paper's score
            state = {**PAPER_SCORE, "error_scale_": None, **state}
        state = {"hidden_passes": None, **state}  # saved before hidden passes: every point seen
        vars(self).update(state)

    def __str__(self):
        return "XCTFormerScorer"

    def _fit_core(self, series: Sequence[TimeSeries], *args, **kwargs):
        # The concatenation of the sequence, as Darts' fittable scorers do.
        values = np.concatenate([s.values(copy=False) for s in series])
        self.engine.fit(values)
        self._components = [str(c) for c in series[0].components]
        self.error_scale_ = ErrorScale.of(self.engine.score(values, self.hidden_passes))

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
            errors = self.engine.score(s.values(copy=False), self.hidden_passes)
            if self.component_wise:
                errors = scaled(errors, self.error_scale_, self.error_scaling)
            else:
                errors = step_scores(errors, self.error_scale_, self.error_scaling, self.channel_aggregation)[:, None]
            components = list(s.components) if self.component_wise else ["reconstruction_error"]
            out.append(TimeSeries.from_times_and_values(s.time_index, errors, columns=components))
        return out
