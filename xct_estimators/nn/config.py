"""Typed configuration of the XCTFormer network, with validation and the memory guard."""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Literal, Optional

MIXINGS = ("full", "time", "channel")
DECOP_VARIANTS = ("paper", "authors")
ACTIVATIONS = ("absact", "softmax", "absact_clipped")

#: The paper's rule (App. C): DeCoP replaces full CRAB above this many channels.
DECOP_CHANNEL_THRESHOLD = 60

#: Default bound for a training batch's full-CRAB attention memory (``attention_memory_bytes``):
#: the constructor checks one sample against it, the adapters their batch. It admits every
#: configuration of the paper at the paper's batch size on the plain path too (the largest,
#: weather imputation with N = 2688 tokens at batch 32, needs about 13 GiB there) and rejects
#: e.g. Traffic without DeCoP (about 22 GB for its masks alone on the fused path) or a
#: 2.2 GB-per-sample plain-path configuration at batch 32 (70 GB).
DEFAULT_MAX_ATTENTION_BYTES = 16 * 1024**3

# N x N float32 tensors kept per layer and sample during training: scores, shifted scores,
# masked scores, AbsAct weights, dropped-out weights.
_ACTIVATIONS_PER_LAYER = 5
# Copies of the mask M held during training with Adam: the weights, the gradient, two moments.
_MASK_COPIES = 4
# The fused path keeps no score tensor for the backward pass; its working buffers: four of a
# chunk of about 2^20 scores, or of one (sample, head) matrix when that is larger (fused.py).
# On an accelerator chunks hold up to 2^24 scores (fewer launches): the estimate, made for the
# CPU, can then be up to 4 x 2^24 x 4 bytes = 256 MiB short, far inside the default bound.
_FUSED_WORKING_BUFFERS = 4
_FUSED_CHUNK_SCORES = 2**20
_FUSED_ACCELERATOR_CHUNK_SCORES = 2**24
FUSED_ACTIVATIONS = ("absact", "absact_clipped")
# AbsAct's stabilisers (the paper's App. A): (a + eps) / (sum |a + eps| + delta).
ABSACT_EPS = 1e-4
ABSACT_DELTA = 1e-8
_FLOAT_BYTES = 4


def is_positive_int(value) -> bool:
    """Any integer type (``int``, ``np.int64`` from a grid, ...) >= 1; never a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def plain_number(value):
    """numpy scalars (``np.int64`` from a grid, ``np.float32``) as Python ``int``/``float``; all
    else unchanged. Bools stay bools."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def positive_int(value, name: str) -> int:
    """``value`` as a plain ``int``, or a ValueError naming ``name``."""
    if not is_positive_int(value):
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


# The ablations of the paper's Sec. 5 / App. E, as field overrides.
ABLATIONS: dict[str, dict] = {
    "no_mask": {"use_mask": False},
    "softmax": {"activation": "softmax"},
    "vanilla": {"use_mask": False, "activation": "softmax", "decop_k": None},
    "time": {"mixing": "time"},
    "channel": {"mixing": "channel"},
    "clipped": {"activation": "absact_clipped"},  # AbsAct, then negative weights set to 0 (ReLU)
}


def patch_count(seq_len: int, patch_len: int, stride: int) -> int:
    """Number of patches per channel after padding the end of the window by ``stride``."""
    return (seq_len - patch_len) // stride + 2


def auto_decop_k(n_channels: int, k: int = 64) -> Optional[int]:
    """The paper's rule: full CRAB up to 60 channels, DeCoP with ``k`` columns above."""
    return k if n_channels > DECOP_CHANNEL_THRESHOLD else None


def _format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


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
    patch_len, stride
        Patch length and stride of the tokenizer (the paper uses ``stride = patch_len / 2``).
    d_model, n_heads, d_ff, e_layers
        Token width, attention heads, feed-forward width and number of encoder layers.
        ``d_model`` must be divisible by ``n_heads``.
    dropout
        Dropout on the patch tokens (after the positional embedding).
    fc_dropout
        Dropout on the attention output (before its residual) and inside the feed-forward block.
    attn_dropout
        Dropout on the attention weights (after AbsAct, before they multiply V).
    head_dropout
        Dropout on the flattened tokens in the output head.
    decop_k
        ``None`` for full CRAB attention; an integer ``k`` compresses the N x N attention to
        N x k with DeCoP (no learnable mask then).
    use_mask
        Ablation switch: ``False`` removes the learnable mask (and the min-shift it needs).
    activation
        ``"absact"`` (the paper), ``"softmax"`` (ablation; scores scaled by 1/sqrt(d)) or
        ``"absact_clipped"`` (ablation: AbsAct followed by ReLU, the paper's clipped negative weights).
    mixing
        ``"full"`` (every token attends to every token), ``"time"`` (only to tokens of its own
        channel, as PatchTST) or ``"channel"`` (only to tokens of its own patch index, as
        iTransformer-like channel mixing).
    decop_variant
        DeCoP only. ``"paper"`` (default): the paper's equations, values compressed over tokens
        and then split into heads along the features, compressor He-normal (std sqrt(2 / N)).
        ``"authors"``: the authors' code, which reshapes the (B, D, k) compressed values to
        (B, k, D) without a transpose (each slot mixes feature rows) and initialises the
        compressor with ``kaiming_uniform_`` (std sqrt(2 / (H k))). See docs/decop.md.
    fused_attention
        Run CRAB's chain from Q, K, V to the weighted values (DeCoP's too) as one autograd
        function that keeps no N x N (N x k) tensor for the backward pass, with a C++ kernel
        on CPU (AbsAct and its clipped variant, outside autocast; gradients equal plain
        autograd's). ``False``: the plain path, for debugging and the gradient tests.
    max_attention_bytes
        Bound on the estimated memory of one sample's full CRAB attention; above it the
        config is rejected with a suggestion to set ``decop_k``. ``None`` disables the guard.
    """

    seq_len: int
    n_channels: int
    out_len: int
    patch_len: int = 16
    stride: int = 8
    d_model: int = 16
    n_heads: int = 1
    d_ff: int = 32
    e_layers: int = 1
    dropout: float = 0.1
    fc_dropout: float = 0.05
    attn_dropout: float = 0.5
    head_dropout: float = 0.0
    decop_k: Optional[int] = None
    use_mask: bool = True
    activation: Literal["absact", "softmax"] = "absact"
    mixing: Literal["full", "time", "channel"] = "full"
    decop_variant: Literal["paper", "authors"] = "paper"
    fused_attention: bool = True
    max_attention_bytes: Optional[int] = DEFAULT_MAX_ATTENTION_BYTES

    def __post_init__(self) -> None:
        for name in (
            "seq_len",
            "n_channels",
            "out_len",
            "patch_len",
            "stride",
            "d_model",
            "n_heads",
            "d_ff",
            "e_layers",
        ):
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
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}.")
        if self.mixing not in MIXINGS:
            raise ValueError(f"mixing must be one of {MIXINGS}, got {self.mixing!r}.")
        if self.decop_variant not in DECOP_VARIANTS:
            raise ValueError(f"decop_variant must be one of {DECOP_VARIANTS}, got {self.decop_variant!r}.")
        if self.decop_k is not None and not self.use_mask:
            raise ValueError(
                "use_mask=False has no effect with DeCoP (decop_k is set), which never uses "
                "the learnable mask: leave use_mask=True or set decop_k=None."
            )
        self._check_attention_memory()

    # -- derived sizes -------------------------------------------------------------------
    @property
    def patch_num(self) -> int:
        """Patches per channel: ``(seq_len - patch_len) // stride + 2``."""
        return patch_count(self.seq_len, self.patch_len, self.stride)

    @property
    def n_tokens(self) -> int:
        """Tokens in the flattened (patch, channel) sequence: ``patch_num * n_channels``."""
        return self.patch_num * self.n_channels

    @property
    def attention_len(self) -> int:
        """Length of the sequences attention runs over (depends on ``mixing``)."""
        return {"full": self.n_tokens, "time": self.patch_num, "channel": self.n_channels}[self.mixing]

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def fused_path(self) -> bool:
        """Whether full CRAB runs the fused function (``fused_attention``, AbsAct or its clipped
        variant; under autocast the plain path runs instead)."""
        return self.fused_attention and self.decop_k is None and self.activation in FUSED_ACTIVATIONS

    def attention_memory_bytes(self, batch_size: int = 1, autocast: bool = False) -> int:
        """Estimated bytes of full CRAB's N x N tensors for training on ``batch_size`` samples.

        The plain path (``fused_attention=False``, softmax variants, or under ``autocast``) keeps,
        per layer, ``batch_size x n_heads x N^2`` score-shaped activations for the backward pass;
        the fused path keeps none, only its chunk-sized working buffers while a layer runs. Both
        count the ``n_heads x N^2`` mask with its gradient and Adam moments per layer (float32).
        Returns 0 with DeCoP, which never forms an N x N tensor.
        """
        if self.decop_k is not None:
            return 0
        groups = self.n_tokens // self.attention_len  # sequences per sample under `mixing`
        square = self.n_heads * self.attention_len**2
        per_layer = square * _MASK_COPIES if self.use_mask else 0
        if self.fused_path and not autocast:
            chunk = min(batch_size * groups * square, max(_FUSED_CHUNK_SCORES, self.attention_len**2))
            return (self.e_layers * per_layer + _FUSED_WORKING_BUFFERS * chunk) * _FLOAT_BYTES
        per_layer += batch_size * groups * square * _ACTIVATIONS_PER_LAYER
        return self.e_layers * per_layer * _FLOAT_BYTES

    def _check_attention_memory(self) -> None:
        if self.max_attention_bytes is None:
            return
        needed = self.attention_memory_bytes()
        if needed > self.max_attention_bytes:
            raise ValueError(
                f"Too many tokens for full CRAB attention: N = {self.n_tokens} tokens "
                f"({self.n_channels} channels x {self.patch_num} patches) need about "
                f"{_format_bytes(needed)} for one training sample's N x N scores and mask, "
                f"above max_attention_bytes = {_format_bytes(self.max_attention_bytes)}. "
                f"Set decop_k (e.g. decop_k=64) to compress the attention to N x k with DeCoP "
                f"(the paper uses DeCoP above {DECOP_CHANNEL_THRESHOLD} channels), use fewer "
                "channels or a larger patch_len/stride, or raise max_attention_bytes."
            )

    def check_attention_memory(self, batch_size: int, autocast: bool = False) -> None:
        """Refuse a training batch whose N x N attention tensors exceed ``max_attention_bytes``,
        naming the largest batch that fits and the other knobs (the constructor checks one sample).
        ``autocast``: training runs under mixed precision, where CRAB takes the plain path."""
        if self.max_attention_bytes is None or self.decop_k is not None:
            return
        needed = self.attention_memory_bytes(batch_size, autocast)
        if needed <= self.max_attention_bytes:
            return
        bound = self.max_attention_bytes
        fits = [b for b in range(1, batch_size + 1) if self.attention_memory_bytes(b, autocast) <= bound]
        lower = f"Lower batch_size to {fits[-1]} or less, set" if fits else "Set"
        path = " on the plain path (mixed precision)" if autocast and self.fused_path else ""
        raise ValueError(
            f"A training batch of {batch_size} windows needs about {_format_bytes(needed)} for full CRAB "
            f"attention{path} (N = {self.n_tokens} tokens: {self.n_channels} channels x {self.patch_num} patches, "
            f"{self.e_layers} layer(s), {self.n_heads} head(s)), above max_attention_bytes = "
            f"{_format_bytes(self.max_attention_bytes)}. {lower} decop_k (e.g. "
            "decop_k=64) to compress the attention with DeCoP, use a larger patch_len/stride, or raise "
            "max_attention_bytes (None turns the guard off)."
        )

    # -- helpers -------------------------------------------------------------------------
    def replace(self, **changes) -> XCTFormerConfig:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def ablation(self, name: str) -> XCTFormerConfig:
        """This config with one of the paper's ablations applied (see ``ABLATIONS``)."""
        if name not in ABLATIONS:
            raise ValueError(f"Unknown ablation {name!r}; choose one of {sorted(ABLATIONS)}.")
        return self.replace(**ABLATIONS[name])
