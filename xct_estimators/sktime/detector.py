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
    ErrorScale,
    check_scoring,
    step_scores,
)
from ..nn import DEFAULT_MAX_ATTENTION_BYTES
from ..nn.hyperparameters import RECONSTRUCTION_DEFAULTS
from ..nn.requirements import MIN_TORCH_TEXT
from ..reconstruction import (
    DEFAULT_LEARNING_RATE,
    DEFAULT_MAX_EPOCHS,
    DEFAULT_PATIENCE,
    DEFAULT_VALIDATION_FRACTION,
    preset_params,
)
from ._engine_params import TEST_PARAMS, FittedNetwork, build_engine


class XCTFormerAnomalyDetector(FittedNetwork, BaseDetector):
    """Unsupervised anomaly detection by XCTFormer reconstruction error.

    ``fit`` trains the network to reconstruct windows of (mostly normal) data. The score of a
    time step comes from its squared reconstruction errors: each channel's standardised by its
    mean and spread on the training data (``error_scaling``), then aggregated over the channels
    (``channel_aggregation``); ``error_scaling="none"`` with ``"mean"`` is the paper's score, the
    raw errors averaged over the channels. The threshold is
    fixed at ``fit``: the ``1 - alpha`` quantile of the training scores (``threshold_``), and
    ``predict`` flags the steps whose score exceeds it, so a short batch gets the same labels
    as the whole series would (``alpha`` is the expected anomaly ratio, the paper uses 1 %,
    0.5 % on SMD; the paper's benchmark threshold over train and test scores together is in
    ``xct-bench detect``).

    Parameters
    ----------
    alpha : float, default=0.01
        Expected share of anomalous steps; sets the threshold quantile ``1 - alpha``.
    error_scaling : {"standardize", "none"}, default="standardize"
        ``"standardize"``: each channel's error minus its mean, divided by its standard deviation,
        both over the training series' errors, so that channels that are hard to reconstruct do not
        drown the others. ``"none"``: raw squared errors (the paper). The default was fixed from
        the training data's view alone (no test labels): it puts every channel on one scale.
    channel_aggregation : {"mean", "max"} or int, default="mean"
        How a step's channel scores become one: their mean (the paper), their maximum (one
        unusual channel suffices), or an integer ``k``: the mean of the ``k`` largest.
    window_length : int, default=96
        Length of the reconstructed windows (the paper: 100). ``X`` in ``fit`` must be at least
        this long; shorter batches later are scored as the continuation of the training data
        (with a warning).
    patch_len : int, default=16
        Length of each patch (token) cut from every channel.
    stride : int, default=8
        Step between the starts of consecutive patches (the paper: ``patch_len / 2``).
    d_model : int, default=32
        Width of every token; must be divisible by ``n_heads``.
    n_heads : int, default=2
        Number of attention heads.
    d_ff : int, default=64
        Width of the hidden layer of each encoder layer's feed-forward block.
    e_layers : int, default=2
        Number of encoder layers.
    dropout : float, default=0.1
        Dropout on the patch tokens (after the positional embedding).
    fc_dropout : float, default=0.05
        Dropout on the attention output (before its residual) and in the feed-forward block.
    attn_dropout : float, default=0.3
        Dropout on the attention weights (after AbsAct, before they multiply V).
    decop_k : int or None, default=None
        ``None`` for full CRAB attention over all N = channels x patches tokens; an integer ``k``
        compresses the N x N attention to N x k with DeCoP (no learnable mask then).
    use_mask : bool, default=True
        Ablation switch: ``False`` removes CRAB's learnable mask and its min-shift.
    activation : {"absact", "softmax", "absact_clipped"}, default='absact'
        ``"absact"`` (the paper), ``"softmax"`` (ablation; scores scaled by 1/sqrt(d)) or
        ``"absact_clipped"`` (ablation: AbsAct's negative weights set to zero).
    mixing : {"full", "time", "channel"}, default='full'
        ``"full"`` (every token attends to every token), ``"time"`` (only to tokens of its own
        channel) or ``"channel"`` (only to tokens of its own patch index); the last two are the
        paper's ablations.
    max_attention_bytes : int or None, default=16 GiB
        Bound on the estimated memory of full CRAB attention, checked for one sample when the model
        is built and for a training batch at ``fit``; above it an error names the largest batch that
        fits and suggests ``decop_k``. ``None`` disables the check.
    fused_attention : bool, default=True
        Run CRAB's chain from Q, K, V to the weighted values as one autograd function that keeps no N x
        N tensor for the backward pass (a C++ kernel on a CPU, Triton kernels on a GPU; gradients equal
        plain autograd's). ``False``: the plain path of PyTorch operations, which keeps the N x N
        weights; where they fit in memory it can be the faster one on a GPU (see docs/scaling.md).
    n_epochs : int, default=50
        Maximum number of training epochs; early stopping on the validation loss ends training
        sooner (see ``patience``).
    batch_size : int, default=32
        Training batch size.
    learning_rate : float, default=0.005
        Peak learning rate of Adam's per-batch one-cycle schedule (``pct_start=0.4``, spread over
        ``n_epochs``); Adam runs torch's fused implementation where the device has one.
    patience : int or None, default=3
        Epochs without a lower validation loss before training stops (the paper's code: 6); the best
        validation epoch's weights are restored at the end. ``None`` trains all ``n_epochs`` (the
        best epoch's weights are still restored when there is validation data).
    validation_fraction : float, default=0.1
        Share of the training data, taken from its end, held out as validation windows (never
        trained on) when ``fit`` gets no validation data; enlarged to one window when shorter.
        ``0``: no validation, no early stopping, the last epoch's weights.
    patience_after_warmup : bool, default=True
        Count ``patience`` only once the one-cycle learning rate has peaked (after 40 % of
        ``n_epochs``): the validation loss often rises while the rate warms up. ``False``: count
        from the first epoch, as the paper's code does (``xct-bench`` uses this).
    window_stride : int or None, default=None
        Step between inference windows; overlapping reconstructions are averaged. ``None``:
        ``window_length // 2``.
    train_stride : int, default=1
        Step between training (and validation) windows.
    random_state : int or None, default=None
        Seed for weights, training order and masks.
    accelerator : str, default='auto'
        Lightning accelerator: ``"auto"``, ``"cpu"`` or ``"gpu"``.
    devices : int, str or list, default='auto'
        Lightning devices; several train data-parallel (``ddp_spawn``) and reconstruct on one.
    precision : str, default='32'
        Lightning precision: ``"32"``, or ``"bf16-mixed"`` / ``"16-mixed"`` for mixed precision
        (sums in float32).
    progress_bar : bool, default=False
        Show Lightning's progress bar while training.
    inference_device : str or None, default=None
        Where reconstruction and scoring run (e.g. ``"cpu"``, ``"cuda:1"``). ``None``: the device
        training ran on, as Lightning chose it; a saved engine loaded where that device is missing
        falls back to the CPU with a warning.
    pl_trainer_kwargs : dict or None, default=None
        More keyword arguments for the Lightning ``Trainer`` (e.g. ``{"strategy": "ddp"}`` or
        ``{"gradient_clip_val": 1.0}``); they win over ``accelerator``, ``devices`` and
        ``precision``, and their ``callbacks`` are added to the engine's own (best weights, early
        stopping).
    compile : bool or dict, default=False
        Compile the network with ``torch.compile`` for training and prediction (in place: saved
        weights are the same either way). A dict passes its arguments to ``torch.compile`` (e.g.
        ``{"mode": "max-autotune"}``). Worth it on a GPU, together with ``bf16-mixed`` precision; on
        a CPU the fused attention is already compiled code and the first steps pay the compilation
        (see docs/scaling.md).

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
        window_stride=None,
        train_stride=1,
        random_state=None,
        accelerator="auto",
        devices="auto",
        precision="32",
        progress_bar=False,
        max_attention_bytes=DEFAULT_MAX_ATTENTION_BYTES,
        fused_attention=True,
        inference_device=None,
        pl_trainer_kwargs=None,
        compile=False,
    ):
        self.alpha = alpha
        self.error_scaling = error_scaling
        self.channel_aggregation = channel_aggregation
        self.window_length = window_length
        self.patch_len = patch_len
        self.stride = stride
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_ff = d_ff
        self.e_layers = e_layers
        self.dropout = dropout
        self.fc_dropout = fc_dropout
        self.attn_dropout = attn_dropout
        self.decop_k = decop_k
        self.use_mask = use_mask
        self.activation = activation
        self.mixing = mixing
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.patience_after_warmup = patience_after_warmup
        self.window_stride = window_stride
        self.train_stride = train_stride
        self.random_state = random_state
        self.accelerator = accelerator
        self.devices = devices
        self.precision = precision
        self.progress_bar = progress_bar
        self.max_attention_bytes = max_attention_bytes
        self.fused_attention = fused_attention
        self.inference_device = inference_device
        self.pl_trainer_kwargs = pl_trainer_kwargs
        self.compile = compile
        super().__init__()
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be a number in (0, 1) (the expected anomaly share), got {alpha!r}.")
        check_scoring(error_scaling, channel_aggregation)

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
        errors = self.engine_.score(values)
        self.error_scale_ = ErrorScale.of(errors)
        self.train_scores_ = step_scores(errors, self.error_scale_, self.error_scaling, self.channel_aggregation)
        self.threshold_ = float(np.nanquantile(self.train_scores_, 1.0 - self.alpha))
        return self

    def _step_scores(self, X) -> np.ndarray:
        errors = self.engine_.score(X.to_numpy(np.float64))  # NaN where unobserved: left out
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
