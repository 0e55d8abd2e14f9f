"""sktime anomaly detector: XCTFormer reconstruction error, thresholded at a quantile."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from sktime.detection.base import BaseDetector

from ..channel_scores import (
    DEFAULT_CHANNEL_AGGREGATION,
    DEFAULT_ERROR_SCALING,
    PAPER_SCORE,
    SCORING_PARAMETERS,
    ErrorScale,
    check_scoring,
    step_scores,
)
from ..nn import DEFAULT_MAX_ATTENTION_BYTES
from ..nn.hyperparameters import RECONSTRUCTION_DEFAULTS, documented
from ..nn.requirements import MIN_TORCH_TEXT
from ..reconstruction import (
    DEFAULT_FILL,
    DEFAULT_LEARNING_RATE,
    DEFAULT_MAX_EPOCHS,
    DEFAULT_PATIENCE,
    DEFAULT_VALIDATION_FRACTION,
    TRAINING_PARAMETERS,
    preset_params,
)
from ..reconstruction_inference import check_hidden_passes
from ._engine_params import TEST_PARAMS, FittedNetwork, build_engine, store_parameters
from ._frames import in_fitted_order


@documented("sktime", more={**TRAINING_PARAMETERS, **SCORING_PARAMETERS})
class XCTFormerAnomalyDetector(FittedNetwork, BaseDetector):
    """Unsupervised anomaly detection by XCTFormer reconstruction error.

    ``fit`` trains the network to reconstruct windows of (mostly normal) data. The score of a
    time step comes from its squared reconstruction errors: each channel's standardised by its
    mean and spread on the training data (``error_scaling``), then aggregated over the channels
    (``channel_aggregation``); ``error_scaling="none"`` with ``"mean"`` is the paper's score, the
    raw errors averaged over the channels. With ``mask_rate`` and ``hidden_passes`` the network learns
    to fill hidden points and each point's error is taken where it was hidden, so an anomaly cannot
    be copied from the input (``xct-bench detect --models xctformer_masked``). The threshold is
    fixed at ``fit``: the ``1 - alpha`` quantile of the training scores (``threshold_``), and
    ``predict`` flags the steps whose score exceeds it, so a short batch gets the same labels
    as the whole series would (``alpha`` is the expected anomaly ratio, the paper uses 1 %,
    0.5 % on SMD; the paper's benchmark threshold over train and test scores together is in
    ``xct-bench detect``).

    Parameters
    ----------
    alpha : float, default=0.01
        Expected share of anomalous steps; sets the threshold quantile ``1 - alpha``.
    window_length : int, default=96
        Length of the reconstructed windows (the paper: 100). ``X`` in ``fit`` must be at least
        this long; shorter batches later are scored as the continuation of the training data
        (with a warning).
    {parameters}

    Attributes
    ----------
    engine_ : ReconstructionEngine
        The trained reconstruction engine.
    error_scale_ : ErrorScale
        Each channel's error mean and standard deviation on the training series.
    train_scores_ : np.ndarray
        Per-step scores of the training series.
    threshold_ : float
        The score above which ``predict`` flags a step: the ``1 - alpha`` quantile of
        ``train_scores_``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from xct_estimators import XCTFormerAnomalyDetector
    >>> t = np.arange(2000)
    >>> X = pd.DataFrame({"a": np.sin(t / 8), "b": np.cos(t / 8)})
    >>> detector = XCTFormerAnomalyDetector(window_length=48, n_epochs=3)  # doctest: +SKIP
    >>> detector.fit(X.iloc[:1500]).predict(X.iloc[1500:])  # doctest: +SKIP
    """

    _tags = {
        "authors": ["xct-estimators developers"],
        "maintainers": ["xct-estimators developers"],
        "task": "anomaly_detection",
        "learning_type": "unsupervised",
        "capability:multivariate": True,
        "capability:missing_values": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "fit_is_empty": False,
        "X_inner_mtype": "pd.DataFrame",
        "python_dependencies": [f"torch>={MIN_TORCH_TEXT}", "pytorch-lightning"],
    }

    def __init__(
        self,
        alpha=0.01,
        error_scaling=DEFAULT_ERROR_SCALING,
        channel_aggregation=DEFAULT_CHANNEL_AGGREGATION,
        hidden_passes=None,
        window_length=96,
        patch_len=16,
        stride=8,
        d_model=32,
        n_heads=2,
        d_ff=64,
        e_layers=2,
        dropout=0.1,
        fc_dropout=0.05,
        attn_dropout=RECONSTRUCTION_DEFAULTS["attn_dropout"],
        decop_k=None,
        use_mask=True,
        activation="absact",
        mixing="full",
        n_epochs=DEFAULT_MAX_EPOCHS,
        batch_size=32,
        learning_rate=DEFAULT_LEARNING_RATE,
        patience=DEFAULT_PATIENCE,
        validation_fraction=DEFAULT_VALIDATION_FRACTION,
        patience_after_warmup=True,
        mask_rate=None,
        fill=DEFAULT_FILL,
        window_stride=None,
        train_stride=1,
        random_state=None,
        accelerator="auto",
        devices="auto",
        precision="32",
        progress_bar=False,
        max_attention_bytes=DEFAULT_MAX_ATTENTION_BYTES,
        fused_attention=None,
        inference_device=None,
        pl_trainer_kwargs=None,
        compile=False,
    ):
        store_parameters(self, locals())
        super().__init__()
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be a number in (0, 1) (the expected anomaly share), got {alpha!r}.")
        check_scoring(error_scaling, channel_aggregation)
        check_hidden_passes(hidden_passes)

    def __setstate__(self, state: dict) -> None:
        if "engine_" in state and "error_scale_" not in state:  # fitted before the choice: the paper's score
            state = {**PAPER_SCORE, "error_scale_": None, **state}
        super().__setstate__(state)

    @classmethod
    def from_preset(cls, dataset, **overrides):
        """A detector with the paper's anomaly-detection hyperparameters for ``dataset``."""
        alpha = overrides.pop("alpha", 0.005 if dataset.upper() == "SMD" else 0.01)
        return cls(alpha=alpha, **{**preset_params(dataset, "anomaly"), **overrides})

    def _fit(self, X, y=None):
        self.columns_ = list(X.columns)
        values = X.to_numpy(np.float64)
        self.engine_ = build_engine(self).fit(values)
        errors = self.engine_.score(values, self.hidden_passes)
        self.error_scale_ = ErrorScale.of(errors)
        self.train_scores_ = step_scores(errors, self.error_scale_, self.error_scaling, self.channel_aggregation)
        self.threshold_ = float(np.nanquantile(self.train_scores_, 1.0 - self.alpha))
        return self

    def _step_scores(self, X) -> np.ndarray:
        X = in_fitted_order(X, self.columns_, "the detector")
        errors = self.engine_.score(X.to_numpy(np.float64), self.hidden_passes)  # NaN where unobserved: left out
        return step_scores(errors, self.error_scale_, self.error_scaling, self.channel_aggregation)

    def _transform_scores(self, X):
        return pd.DataFrame({"score": self._step_scores(X)}, index=X.index)

    def _predict(self, X):
        scores = self._step_scores(X)
        return pd.Series(np.flatnonzero(scores > self.threshold_), dtype="int64")

    def _predict_scores(self, X):
        scores = self._step_scores(X)
        return pd.Series(scores[scores > self.threshold_])

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Tiny settings (one epoch, short windows) for sktime's estimator checks."""
        return [dict(TEST_PARAMS), dict(TEST_PARAMS, alpha=0.1, decop_k=4, error_scaling="none", channel_aggregation=2)]
