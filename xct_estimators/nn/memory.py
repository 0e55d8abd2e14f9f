"""The memory model of full CRAB attention: training and inference batch sizing, chunk sizes.

Torch-free: configurations are checked, and batches sized, before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Optional

from .hyperparameters import DECOP_CHANNEL_THRESHOLD

if TYPE_CHECKING:
    from .config import XCTFormerConfig


FLOAT_BYTES = 4
# N x N float32 tensors kept per layer and sample during training on the plain path: scores,
# shifted scores, masked scores, AbsAct weights, dropped-out weights.
_ACTIVATIONS_PER_LAYER = 5
# Copies of the mask M held during training with Adam: the weights, the gradient, two moments.
_MASK_COPIES = 4
# The fused path keeps no score tensor for the backward pass, only its working buffers: four of
# a chunk, or of one (sample, head) matrix when that is larger (fused.py).
_FUSED_WORKING_BUFFERS = 4
# Score matrices held at once at inference (scores, weights, dropout-free product).
_INFERENCE_COPIES = 3
#: Bound on one inference batch's attention tensors.
INFERENCE_ATTENTION_BYTES = 256 * 1024**2
#: How many times the training batch an inference batch may hold.
INFERENCE_BATCH_FACTOR = 4

# Scores per chunk of the fused path. CPU: a chunk and its working buffers stay in the last-level
# cache. Accelerators: each chunk costs a few dozen kernel launches and one wait for the device,
# so larger chunks amortise them (benchmarks/gpu_check.py measures the choice).
_chunk_scores = {"cpu": 2**20, "accelerator": 2**24}


def chunk_scores(device_type: str = "cpu") -> int:
    """Scores per chunk of the fused CRAB path on a device of ``device_type`` (``"cpu"``,
    ``"cuda"``, ...). Chunks are whole (sample, head) matrices, never smaller."""
    return _chunk_scores["cpu" if device_type == "cpu" else "accelerator"]


def set_chunk_scores(cpu: Optional[int] = None, accelerator: Optional[int] = None) -> dict[str, int]:
    """Set the fused path's chunk size (scores) on CPU and/or accelerators; returns the previous
    sizes. Results do not depend on it; speed and working memory do."""
    previous = dict(_chunk_scores)
    for key, value in (("cpu", cpu), ("accelerator", accelerator)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} chunk size must be a positive integer (scores), got {value!r}.")
            _chunk_scores[key] = value
    return previous


@contextmanager
def using_chunk_scores(cpu: Optional[int] = None, accelerator: Optional[int] = None) -> Iterator[None]:
    """:func:`set_chunk_scores` for the ``with`` block only."""
    previous = set_chunk_scores(cpu, accelerator)
    try:
        yield
    finally:
        _chunk_scores.update(previous)


def _format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def attention_memory_bytes(config: XCTFormerConfig, batch_size: int = 1) -> int:
    """Estimated bytes of full CRAB's N x N tensors for training on ``batch_size`` samples.

    The plain path (``fused_attention=False`` or the softmax variant) keeps,
    per layer, ``batch_size x n_heads x N^2`` score-shaped activations for the backward pass;
    the fused path keeps none, only its chunk-sized working buffers while a layer runs (counted
    at the CPU's chunk size). Both count the ``n_heads x N^2`` mask with its gradient and Adam
    moments per layer (float32). Returns 0 with DeCoP, which never forms an N x N tensor.
    """
    if config.decop_k is not None:
        return 0
    groups = config.n_tokens // config.attention_len  # sequences per sample under `mixing`
    square = config.n_heads * config.attention_len**2
    per_layer = square * _MASK_COPIES if config.use_mask else 0
    if config.fused_path:
        chunk = min(batch_size * groups * square, max(chunk_scores("cpu"), config.attention_len**2))
        return (config.e_layers * per_layer + _FUSED_WORKING_BUFFERS * chunk) * FLOAT_BYTES
    per_layer += batch_size * groups * square * _ACTIVATIONS_PER_LAYER
    return config.e_layers * per_layer * FLOAT_BYTES


def plain_bytes_per_sequence(config: XCTFormerConfig) -> int:
    """Bytes the plain path keeps for the backward pass per attended sequence, all layers together."""
    return config.e_layers * config.n_heads * config.attention_len**2 * _ACTIVATIONS_PER_LAYER * FLOAT_BYTES


def check_sample(config: XCTFormerConfig) -> None:
    """Refuse a configuration whose attention for one training sample exceeds ``max_attention_bytes``."""
    if config.max_attention_bytes is None:
        return
    needed = attention_memory_bytes(config)
    if needed > config.max_attention_bytes:
        raise ValueError(
            f"Too many tokens for full CRAB attention: N = {config.n_tokens} tokens "
            f"({config.n_token_channels} channels x {config.patch_num} patches) need about "
            f"{_format_bytes(needed)} for one training sample's N x N scores and mask, "
            f"above max_attention_bytes = {_format_bytes(config.max_attention_bytes)}. "
            f"Set decop_k (e.g. decop_k=64) to compress the attention to N x k with DeCoP "
            f"(the paper uses DeCoP above {DECOP_CHANNEL_THRESHOLD} channels), use fewer "
            "channels or a larger patch_len/stride, or raise max_attention_bytes."
        )


def check_batch(config: XCTFormerConfig, batch_size: int) -> None:
    """Refuse a training batch whose N x N attention tensors exceed ``max_attention_bytes``,
    naming the largest batch that fits and the other knobs."""
    bound = config.max_attention_bytes
    if bound is None or config.decop_k is not None:
        return
    needed = attention_memory_bytes(config, batch_size)
    if needed <= bound:
        return
    fits = [b for b in range(1, batch_size + 1) if attention_memory_bytes(config, b) <= bound]
    lower = f"Lower batch_size to {fits[-1]} or less, set" if fits else "Set"
    raise ValueError(
        f"A training batch of {batch_size} windows needs about {_format_bytes(needed)} for full CRAB "
        f"attention (N = {config.n_tokens} tokens: {config.n_token_channels} channels x {config.patch_num} "
        f"patches, {config.e_layers} layer(s), {config.n_heads} head(s)), above max_attention_bytes = "
        f"{_format_bytes(bound)}. {lower} decop_k (e.g. decop_k=64) to compress the attention with DeCoP, "
        "use a larger patch_len/stride, or raise max_attention_bytes (None turns the guard off)."
    )


def inference_batch_size(config: XCTFormerConfig, training_batch: int) -> int:
    """Windows per inference batch: up to ``INFERENCE_BATCH_FACTOR`` x the training batch, but few
    enough that their attention weights stay within ``INFERENCE_ATTENTION_BYTES`` (a wide
    dataset's full CRAB needs tens of MB per window)."""
    if config.decop_k is not None:
        per_window = config.n_heads * config.n_tokens * config.decop_k
    else:
        per_window = config.n_heads * config.attention_len**2 * (config.n_tokens // config.attention_len)
    per_window *= _INFERENCE_COPIES * FLOAT_BYTES
    return int(max(1, min(training_batch * INFERENCE_BATCH_FACTOR, INFERENCE_ATTENTION_BYTES // max(per_window, 1))))
