"""Typed configuration of the XCTFormer network, with validation."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, Optional

from .._checks import is_positive_int, positive_int
from . import memory
from .absact import FUSED_ACTIVATIONS
from .hyperparameters import ABLATIONS, defaults, documented

MIXINGS = ("full", "time", "channel")
DECOP_VARIANTS = ("paper", "authors")
ACTIVATIONS = ("absact", "softmax", "absact_clipped")
_DEFAULT = defaults()
#: The sizes of the covariate inputs (0: none), set from the data like ``n_channels``.
COVARIATE_FIELDS = ("n_future_channels", "future_len", "n_static_tokens", "static_features")
_POSITIVE_INTS = ("seq_len", "n_channels", "out_len", "patch_len", "stride", "d_model", "n_heads", "d_ff", "e_layers")


def patch_count(seq_len: int, patch_len: int, stride: int) -> int:
    """Number of patches per channel after padding the end of the window by ``stride``."""
    return (seq_len - patch_len) // stride + 2


@documented("darts")
@dataclass(frozen=True)
class XCTFormerConfig:
    """Hyperparameters of :class:`~xct_estimators.nn.XCTFormerNet`.

    Parameters
    ----------
    seq_len
        Length of the input window (look-back length).
    n_channels
        Number of channels (variates) in the input window.
    out_len
        Length of the output: the horizon for forecasting, ``seq_len`` for reconstruction.
    {parameters}
    n_future_channels
        How many of the last input channels are known over the forecast horizon too (future
        covariates): the known-future decoder reads them over window and horizon; they are not cut
        into tokens. Default: 0.
    future_len
        Length of the future covariates' horizon (the forecast's output chunk). Default: 0.
    n_static_tokens, static_features
        Static covariates: ``n_static_tokens`` rows (one per target component, or one shared)
        of ``static_features`` numbers, each row one token. Default: 0 (none).
    """

    seq_len: int
    n_channels: int
    out_len: int
    patch_len: int = _DEFAULT["patch_len"]
    stride: int = _DEFAULT["stride"]
    d_model: int = _DEFAULT["d_model"]
    n_heads: int = _DEFAULT["n_heads"]
    d_ff: int = _DEFAULT["d_ff"]
    e_layers: int = _DEFAULT["e_layers"]
    dropout: float = _DEFAULT["dropout"]
    fc_dropout: float = _DEFAULT["fc_dropout"]
    attn_dropout: float = _DEFAULT["attn_dropout"]
    head_dropout: float = _DEFAULT["head_dropout"]
    decop_k: Optional[int] = _DEFAULT["decop_k"]
    use_mask: bool = _DEFAULT["use_mask"]
    activation: Literal["absact", "softmax", "absact_clipped"] = _DEFAULT["activation"]
    mixing: Literal["full", "time", "channel"] = _DEFAULT["mixing"]
    decop_variant: Literal["paper", "authors"] = _DEFAULT["decop_variant"]
    fused_attention: Optional[bool] = _DEFAULT["fused_attention"]
    max_attention_bytes: Optional[int] = _DEFAULT["max_attention_bytes"]
    n_future_channels: int = 0
    future_len: int = 0
    n_static_tokens: int = 0
    static_features: int = 0

    def __post_init__(self) -> None:
        for name in _POSITIVE_INTS:
            object.__setattr__(self, name, positive_int(getattr(self, name), name))
        if self.patch_len > self.seq_len:
            raise ValueError(
                f"patch_len={self.patch_len} is longer than seq_len={self.seq_len}: "
                "use a shorter patch_len or a longer input window."
            )
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: "
                "each head gets d_model / n_heads features."
            )
        for name in ("dropout", "fc_dropout", "attn_dropout", "head_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}.")
        if self.decop_k is not None:
            if not is_positive_int(self.decop_k):
                raise ValueError(f"decop_k must be None (full CRAB) or a positive integer, got {self.decop_k!r}.")
            object.__setattr__(self, "decop_k", int(self.decop_k))
        for name, allowed in (("activation", ACTIVATIONS), ("mixing", MIXINGS), ("decop_variant", DECOP_VARIANTS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}.")
        if self.decop_k is not None and not self.use_mask:
            raise ValueError(
                "use_mask=False has no effect with DeCoP (decop_k is set), which never uses "
                "the learnable mask: leave use_mask=True or set decop_k=None."
            )
        self._check_covariates()
        memory.check_sample(self)

    def _check_covariates(self) -> None:
        for name in COVARIATE_FIELDS:
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}.")
        if self.n_future_channels >= self.n_channels:
            raise ValueError(
                f"n_future_channels={self.n_future_channels} leaves none of n_channels={self.n_channels} to cut into "
                "tokens: the future covariates' past values are the last input channels, after the targets."
            )
        if bool(self.n_future_channels) != bool(self.future_len):
            raise ValueError("n_future_channels and future_len are both set (future covariates) or both 0.")
        if self.future_len and self.out_len % self.future_len:
            raise ValueError(
                f"out_len={self.out_len} is not a multiple of future_len={self.future_len}: with future covariates "
                "the outputs are the horizon's steps, one or more (e.g. quantiles) per step."
            )
        if bool(self.n_static_tokens) != bool(self.static_features):
            raise ValueError("n_static_tokens and static_features are both set (static covariates) or both 0.")
        if self.n_static_tokens and self.mixing != "full":
            raise ValueError(
                f"mixing={self.mixing!r} regroups the (patch, channel) grid, which static covariates' tokens are not "
                "part of: use mixing='full' with static covariates."
            )

    # -- derived sizes -------------------------------------------------------------------
    @property
    def patch_num(self) -> int:
        """Patches per channel: ``(seq_len - patch_len) // stride + 2``."""
        return patch_count(self.seq_len, self.patch_len, self.stride)

    @property
    def has_covariates(self) -> bool:
        """Whether the network takes future or static covariates."""
        return bool(self.n_future_channels or self.n_static_tokens)

    @property
    def n_token_channels(self) -> int:
        """Channels cut into tokens: all but the future covariates, which the known-future decoder reads."""
        return self.n_channels - self.n_future_channels

    @property
    def n_grid_tokens(self) -> int:
        """Tokens of the input window: ``patch_num * n_token_channels``, patch-major."""
        return self.patch_num * self.n_token_channels

    @property
    def n_tokens(self) -> int:
        """Tokens attention runs over: the input window's, then one per static covariate row."""
        return self.n_grid_tokens + self.n_static_tokens

    @property
    def attention_len(self) -> int:
        """Length of the sequences attention runs over (depends on ``mixing``)."""
        return {"full": self.n_tokens, "time": self.patch_num, "channel": self.n_token_channels}[self.mixing]

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def fused_path(self) -> bool:
        """Whether full CRAB may run the fused function (``fused_attention`` True, or None: it does
        wherever the plain path's N x N weights would not fit; AbsAct or its clipped variant; under
        mixed precision too): the path whose memory bounds a batch."""
        return self.fused_attention is not False and self.decop_k is None and self.activation in FUSED_ACTIVATIONS

    def attention_memory_bytes(self, batch_size: int = 1) -> int:
        """Estimated bytes of full CRAB's N x N tensors for training (:func:`.memory.attention_memory_bytes`)."""
        return memory.attention_memory_bytes(self, batch_size)

    def check_attention_memory(self, batch_size: int) -> None:
        """Refuse a training batch whose attention exceeds ``max_attention_bytes`` (:func:`.memory.check_batch`)."""
        memory.check_batch(self, batch_size)

    # -- helpers -------------------------------------------------------------------------
    def architecture(self) -> dict:
        """The hyperparameters: every field but the data's sizes (``seq_len``, ``n_channels``,
        ``out_len`` and the covariates')."""
        data = ("seq_len", "n_channels", "out_len", *COVARIATE_FIELDS)
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in data}

    def replace(self, **changes) -> XCTFormerConfig:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def ablation(self, name: str) -> XCTFormerConfig:
        """This config with one of the paper's ablations applied (see ``hyperparameters.ABLATIONS``)."""
        if name not in ABLATIONS:
            raise ValueError(f"Unknown ablation {name!r}; choose one of {sorted(ABLATIONS)}.")
        return self.replace(**ABLATIONS[name])
