"""XCTFormerScorer: XCTFormer's reconstruction error as a Darts anomaly scorer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
from darts import TimeSeries
from darts.ad.scorers.scorers import FittableAnomalyScorer

from .channel_scores import (
    DEFAULT_CHANNEL_AGGREGATION,
    DEFAULT_ERROR_SCALING,
    PAPER_SCORE,
    Aggregation,
    ErrorScale,
    check_scoring,
    scaled,
    step_scores,
)
from .nn import DEFAULT_MAX_ATTENTION_BYTES
from .nn.compiling import CompileOption
from .nn.hyperparameters import RECONSTRUCTION_DEFAULTS
from .reconstruction import (
    DEFAULT_LEARNING_RATE,
    DEFAULT_MAX_EPOCHS,
    DEFAULT_PATIENCE,
    DEFAULT_VALIDATION_FRACTION,
    ReconstructionEngine,
    preset_params,
)


class XCTFormerScorer(FittableAnomalyScorer):
    """Darts anomaly scorer: XCTFormer's per-step reconstruction error.

    ``fit(series)`` trains the network to reconstruct windows of (anomaly-free) series;
    ``score(series)`` returns a TimeSeries of squared reconstruction errors, each component's
    standardised by its mean and spread on the fitted series (``error_scaling``), then aggregated
    over the components (``channel_aggregation``; ``component_wise=True``: one per component).
    ``error_scaling="none"`` with ``"mean"`` is the paper's score. Use it with ``darts.ad``
    detectors (``QuantileDetector``, ``ThresholdDetector``) and ``eval_metric``.

    Parameters
    ----------
    window_length
        Length of the windows the network reconstructs; see :class:`ReconstructionEngine`.
    patch_len
        Length of each patch (token) cut from every channel. Default: ``16``.
    stride
        Step between the starts of consecutive patches (the paper: ``patch_len / 2``). Default:
        ``8``.
    d_model
        Width of every token; must be divisible by ``n_heads``. Default: ``32``.
    n_heads
        Number of attention heads. Default: ``2``.
    d_ff
        Width of the hidden layer of each encoder layer's feed-forward block. Default: ``64``.
    e_layers
        Number of encoder layers. Default: ``2``.
    dropout
        Dropout on the patch tokens (after the positional embedding). Default: ``0.1``.
    fc_dropout
        Dropout on the attention output (before its residual) and in the feed-forward block.
        Default: ``0.05``.
    attn_dropout
        Dropout on the attention weights (after AbsAct, before they multiply V). Default: ``0.3``.
    decop_k
        ``None`` for full CRAB attention over all N = channels x patches tokens; an integer ``k``
        compresses the N x N attention to N x k with DeCoP (no learnable mask then). Default:
        ``None``.
    use_mask
        Ablation switch: ``False`` removes CRAB's learnable mask and its min-shift. Default:
        ``True``.
    activation
        ``"absact"`` (the paper), ``"softmax"`` (ablation; scores scaled by 1/sqrt(d)) or
        ``"absact_clipped"`` (ablation: AbsAct's negative weights set to zero). Default:
        ``'absact'``.
    mixing
        ``"full"`` (every token attends to every token), ``"time"`` (only to tokens of its own
        channel) or ``"channel"`` (only to tokens of its own patch index); the last two are the
        paper's ablations. Default: ``'full'``.
    max_attention_bytes
        Bound on the estimated memory of full CRAB attention, checked for one sample when the model
        is built and for a training batch at ``fit``; above it an error names the largest batch that
        fits and suggests ``decop_k``. ``None`` disables the check. Default: ``16 GiB``.
    fused_attention
        Run CRAB's chain from Q, K, V to the weighted values as one autograd function that keeps no N x
        N tensor for the backward pass (a C++ kernel on a CPU, Triton kernels on a GPU; gradients equal
        plain autograd's). ``False``: the plain path of PyTorch operations, which keeps the N x N
        weights; where they fit in memory it can be the faster one on a GPU (see docs/scaling.md).
        Default: ``True``.
    n_epochs
        Maximum number of training epochs; early stopping on the validation loss ends training
        sooner (see ``patience``). Default: ``50``.
    batch_size
        Training batch size. Default: ``32``.
    learning_rate
        Peak learning rate of Adam's per-batch one-cycle schedule (``pct_start=0.4``, spread over
        ``n_epochs``); Adam runs torch's fused implementation where the device has one. Default:
        ``0.005``.
    patience
        Epochs without a lower validation loss before training stops (the paper's code: 6); the best
        validation epoch's weights are restored at the end. ``None`` trains all ``n_epochs`` (the
        best epoch's weights are still restored when there is validation data). Default: ``3``.
    validation_fraction
        Share of the training data, taken from its end, held out as validation windows (never
        trained on) when ``fit`` gets no validation data; enlarged to one window when shorter.
        ``0``: no validation, no early stopping, the last epoch's weights. Default: ``0.1``.
    patience_after_warmup
        Count ``patience`` only once the one-cycle learning rate has peaked (after 40 % of
        ``n_epochs``): the validation loss often rises while the rate warms up. ``False``: count
        from the first epoch, as the paper's code does (``xct-bench`` uses this). Default: ``True``.
    window_stride
        Step between inference windows; overlapping reconstructions are averaged. ``None``:
        ``window_length // 2``. Default: ``None``.
    train_stride
        Step between training (and validation) windows. Default: ``1``.
    random_state
        Seed for weights, training order and masks. Default: ``None``.
    accelerator
        Lightning accelerator: ``"auto"``, ``"cpu"`` or ``"gpu"``. Default: ``'auto'``.
    devices
        Lightning devices; several train data-parallel (``ddp_spawn``) and reconstruct on one.
        Default: ``'auto'``.
    precision
        Lightning precision: ``"32"``, or ``"bf16-mixed"`` / ``"16-mixed"`` for mixed precision
        (sums in float32). Default: ``'32'``.
    progress_bar
        Show Lightning's progress bar while training. Default: ``False``.
    inference_device
        Where reconstruction and scoring run (e.g. ``"cpu"``, ``"cuda:1"``). ``None``: the device
        training ran on, as Lightning chose it; a saved engine loaded where that device is missing
        falls back to the CPU with a warning. Default: ``None``.
    pl_trainer_kwargs
        More keyword arguments for the Lightning ``Trainer`` (e.g. ``{"strategy": "ddp"}`` or
        ``{"gradient_clip_val": 1.0}``); they win over ``accelerator``, ``devices`` and
        ``precision``, and their ``callbacks`` are added to the engine's own (best weights, early
        stopping). Default: ``None``.
    compile
        Compile the network with ``torch.compile`` for training and prediction (in place: saved
        weights are the same either way). A dict passes its arguments to ``torch.compile`` (e.g.
        ``{"mode": "max-autotune"}``). Worth it on a GPU, together with ``bf16-mixed`` precision; on
        a CPU the fused attention is already compiled code and the first steps pay the compilation
        (see docs/scaling.md). Default: ``False``.
    component_wise
        Whether to score each component separately. Default: ``False``.
    error_scaling
        ``"standardize"``: each component's error minus its mean, divided by its standard
        deviation, both over the fitted series' errors, so that components that are hard to
        reconstruct do not drown the others. ``"none"``: raw squared errors (the paper). The
        default was fixed from the training data's view alone (no test labels). Default:
        ``'standardize'``.
    channel_aggregation
        With ``component_wise=False``, how a step's component scores become one: ``"mean"`` (the
        paper), ``"max"`` (one unusual component suffices), or an integer ``k``: the mean of the
        ``k`` largest. Default: ``'mean'``.

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
        fused_attention: bool = True,
        inference_device: Optional[str] = None,
        pl_trainer_kwargs: Optional[dict[str, Any]] = None,
        compile: CompileOption = False,
        component_wise: bool = False,
        error_scaling: str = DEFAULT_ERROR_SCALING,
        channel_aggregation: Aggregation = DEFAULT_CHANNEL_AGGREGATION,
    ):
        super().__init__(is_univariate=not component_wise, window=1, window_agg=False)
        check_scoring(error_scaling, channel_aggregation)
        self.component_wise = component_wise
        self.error_scaling, self.channel_aggregation = error_scaling, channel_aggregation
        network = dict(window_length=window_length, patch_len=patch_len, stride=stride, d_model=d_model)
        network.update(n_heads=n_heads, d_ff=d_ff, e_layers=e_layers, dropout=dropout, fc_dropout=fc_dropout)
        network.update(attn_dropout=attn_dropout, decop_k=decop_k, use_mask=use_mask, activation=activation)
        network.update(mixing=mixing, max_attention_bytes=max_attention_bytes, fused_attention=fused_attention)
        training = dict(n_epochs=n_epochs, batch_size=batch_size, learning_rate=learning_rate, patience=patience)
        training.update(validation_fraction=validation_fraction, patience_after_warmup=patience_after_warmup)
        training.update(window_stride=window_stride, train_stride=train_stride, random_state=random_state)
        hardware = dict(accelerator=accelerator, devices=devices, precision=precision, progress_bar=progress_bar)
        hardware.update(inference_device=inference_device, pl_trainer_kwargs=pl_trainer_kwargs, compile=compile)
        self.engine = ReconstructionEngine(**network, **training, **hardware)

    @classmethod
    def from_preset(cls, dataset: str, **overrides) -> XCTFormerScorer:
        """A scorer with the paper's anomaly-detection hyperparameters for ``dataset``."""
        return cls(**{**preset_params(dataset, "anomaly"), **overrides})

    def __setstate__(self, state: dict) -> None:
        if "error_scaling" not in state:  # saved before the choice existed: the paper's score
            state = {**PAPER_SCORE, "error_scale_": None, **state}
        vars(self).update(state)

    def __str__(self):
        return "XCTFormerScorer"

    def _fit_core(self, series: Sequence[TimeSeries], *args, **kwargs):
        # The concatenation of the sequence, as Darts' fittable scorers do.
        values = np.concatenate([s.values(copy=False) for s in series])
        self.engine.fit(values)
        self._components = [str(c) for c in series[0].components]
        self.error_scale_ = ErrorScale.of(self.engine.score(values))

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
            if self.component_wise:
                errors = scaled(errors, self.error_scale_, self.error_scaling)
            else:
                errors = step_scores(errors, self.error_scale_, self.error_scaling, self.channel_aggregation)[:, None]
            components = list(s.components) if self.component_wise else ["reconstruction_error"]
            out.append(TimeSeries.from_times_and_values(s.time_index, errors, columns=components))
        return out
