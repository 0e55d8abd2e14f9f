"""CRAB attention (learnable mask + AbsAct), its ablations, and the DeCoP compression."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Optional

import torch
from torch import nn

from . import ops as _ops
from .absact import FUSED_ACTIVATIONS, abs_act
from .dropout import WeightDropout  # also the name pickles from before the dropout module have


def normalise(scores: torch.Tensor, activation: str) -> torch.Tensor:
    """Attention weights from scores: AbsAct, softmax, or AbsAct with negative weights clipped
    to zero (the paper's ablation of signed weights)."""
    if activation == "softmax":
        return scores.softmax(dim=-1)
    weights = abs_act(scores)
    return weights.clamp_min(0.0) if activation == "absact_clipped" else weights


_HALF = (torch.float16, torch.bfloat16)


def weights_in_float32(scores: torch.Tensor, mask, activation: str) -> torch.Tensor:
    """Attention weights from raw scores, with CRAB's shift and mask when ``mask`` is given.

    Under mixed precision the scores arrive in bf16/fp16; the shift, the mask product and the
    normalisation's sums and division run in float32 (AbsAct's 1e-4 and 1e-8 vanish next to
    bf16's 8-bit mantissa, and a row of 900 weights summed in bf16 loses its last digits), and
    the weights go back in the scores' dtype.
    """
    low = scores.dtype in _HALF
    with torch.autocast(device_type=scores.device.type, enabled=False):
        s = scores.float() if low else scores
        if mask is not None:
            # Per-sample, per-head shift: a batch-wide min would couple samples of a batch.
            s = mask.to(s.dtype) * (s - s.amin(dim=(-2, -1), keepdim=True))
        weights = normalise(s, activation)
    return weights.to(scores.dtype) if low else weights


@contextlib.contextmanager
def plain_attention(module: nn.Module) -> Iterator[nn.Module]:
    """Within the block, every CRAB and DeCoP attention in ``module`` takes the plain path (PyTorch
    operations only: what an exporter without the fused operator, such as ONNX, can translate)."""
    attentions = [m for m in module.modules() if isinstance(m, (CRABAttention, DeCoPAttention))]
    fused = [m.fused for m in attentions]
    try:
        for m in attentions:
            m.fused = False
        yield module
    finally:
        for m, flag in zip(attentions, fused, strict=True):
            m.fused = flag


def compiled_on_gpu(x: torch.Tensor) -> bool:
    """Whether ``x`` is on a GPU in a run that ``torch.compile`` traces."""
    return x.is_cuda and torch.compiler.is_compiling()


def _split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, L, H*d) -> (B, H, L, d)."""
    b, length, _ = x.shape
    return x.view(b, length, n_heads, -1).transpose(1, 2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, L, d) -> (B, L, H*d)."""
    b, h, length, d = x.shape
    return x.transpose(1, 2).reshape(b, length, h * d)


class CRABAttention(nn.Module):
    """Full N x N attention: CRAB, or one of its ablations.

    CRAB (``use_mask=True, activation="absact"``) per sample and head::

        S  = Q K^T                       (no 1/sqrt(d): AbsAct is scale invariant)
        A+ = S - min(S)                  (min over this sample's and head's N x N scores)
        W  = AbsAct(M o A+)              (M: learnable H x N x N mask, He-normal init)
        O  = dropout(W) V

    ``use_mask=False`` drops the shift and the mask (``W = AbsAct(S)``);
    ``activation="softmax"`` scales by 1/sqrt(d) and uses softmax instead of AbsAct, so both
    switches together give vanilla attention.

    ``fused=True`` runs the chain from Q, K, V to the weighted values as one autograd function
    (:mod:`xct_estimators.nn.fused`: no N x N tensors kept for the backward pass) for AbsAct and
    its clipped variant, under mixed precision too (its statistics stay in float32); softmax
    takes the plain path.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        seq_len: int,
        attn_dropout: float = 0.0,
        use_mask: bool = True,
        activation: str = "absact",
        fused: Optional[bool] = False,
        plain_bytes_per_sequence: Optional[int] = None,
        max_attention_bytes: Optional[int] = None,
    ) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.activation = activation
        self.fused = (fused if fused is None else bool(fused)) if activation in FUSED_ACTIVATIONS else False
        self.plain_bytes_per_sequence, self.max_attention_bytes = plain_bytes_per_sequence, max_attention_bytes
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = WeightDropout(attn_dropout)
        self.scale = 1.0 / math.sqrt(d_model // n_heads) if activation == "softmax" else 1.0
        if use_mask:
            he_std = math.sqrt(2.0 / seq_len)
            self.mask = nn.Parameter(torch.randn(n_heads, seq_len, seq_len) * he_std)
        else:
            self.register_parameter("mask", None)

    def attention_weights(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The (B, H, N, N) attention weights before dropout, and V as (B, H, N, d)."""
        q = _split_heads(self.q_proj(x), self.n_heads)
        k = _split_heads(self.k_proj(x), self.n_heads)
        v = _split_heads(self.v_proj(x), self.n_heads)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        return weights_in_float32(scores, self.mask, self.activation), v

    def uses_fused(self, x: torch.Tensor) -> bool:
        """This call's path: as ``fused`` says, or (``None``) the plain formula on a GPU in a compiled run
        where the batch's N x N weights fit in ``max_attention_bytes``, the fused function otherwise
        (also where the bound or the weights' size is ``None``); the GPU's step records: plain +
        compile is the faster where it fits (docs/forecasting.md, GPU)."""
        if self.fused is not None:
            return self.fused
        if not compiled_on_gpu(x):
            return True
        bound, per_sequence = self.max_attention_bytes, self.plain_bytes_per_sequence
        if bound is None or per_sequence is None:  # no bound to check the plain path's memory against
            return True
        return x.shape[0] * per_sequence > bound

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.uses_fused(x):
            q, k, v = (_split_heads(proj(x), self.n_heads) for proj in (self.q_proj, self.k_proj, self.v_proj))
            p = self.attn_dropout.p if self.training else 0.0
            return self.out_proj(_merge_heads(_ops.fused_crab(q, k, v, self.mask, self.scale, self.activation, p)))
        weights, v = self.attention_weights(x)
        return self.out_proj(_merge_heads(self.attn_dropout(weights) @ v))


class DeCoPAttention(nn.Module):
    """CRAB with the Dependency Compression Plugin: N x k attention, never N x N.

    Per head h, with a learnable compressor C_h in R^{N x k} (He-normal init)::

        A_c = Q_h (K_h^T C_h)            (equals (Q_h K_h^T) C_h by associativity)
        V   = W_v X                      (W_v: Linear over the token axis, N -> k)
        O_h = dropout(AbsAct(A_c)) V_h   (V split into heads along the feature axis)

    There is no mask and no min-shift: A_c has lost the pairwise token structure.

    ``variant="authors"`` follows the authors' code instead: the compressed values W_v X,
    (B, D, k), are reinterpreted as (B, k, D) without a transpose (slot j then holds a mix of
    feature rows, not the j-th compressed token), and C starts from ``kaiming_uniform_``.

    ``fused=True``: the chain from A_c to the weighted values runs as CRAB's fused function
    without a mask (:mod:`xct_estimators.nn.fused`, rectangular N x k scores).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        seq_len: int,
        k: int,
        attn_dropout: float = 0.0,
        activation: str = "absact",
        variant: str = "paper",
        fused: Optional[bool] = False,
    ) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.activation = activation
        self.variant = variant
        self.fused = fused is not False and activation in FUSED_ACTIVATIONS  # None: N x k needs no choice
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.token_compressor = nn.Linear(seq_len, k)  # W_v in R^{k x N}, along tokens
        self.out_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = WeightDropout(attn_dropout)
        self.scale = 1.0 / math.sqrt(d_model // n_heads) if activation == "softmax" else 1.0
        self.compressor = nn.Parameter(torch.randn(seq_len, n_heads, k) * math.sqrt(2.0 / seq_len))
        if variant == "authors":
            nn.init.kaiming_uniform_(self.compressor)  # fan_in = H * k for an (N, H, k) tensor

    def _scores_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Q (B, H, N, d), K^T C (B, H, d, k) and the compressed values V (B, H, k, d)."""
        q = _split_heads(self.q_proj(x), self.n_heads)
        k = _split_heads(self.k_proj(x), self.n_heads)
        key_summary = torch.einsum("bhnd,nhk->bhdk", k, self.compressor)  # K^T C: (B, H, d, k)
        compressed = self.token_compressor(x.transpose(1, 2))  # (B, N, D) -> (B, D, N) -> (B, D, k)
        if self.variant == "authors":
            b, d, k = compressed.shape
            compressed = compressed.reshape(b, k, d)  # the authors' view: no transpose
        else:
            compressed = compressed.transpose(1, 2)  # (B, k, D): slot j = j-th compressed token
        return q, key_summary, _split_heads(compressed, self.n_heads)

    def attention_weights(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The (B, H, N, k) compressed attention weights before dropout, and V as (B, H, k, d)."""
        q, key_summary, v = self._scores_inputs(x)
        scores = (q @ key_summary) * self.scale
        return weights_in_float32(scores, None, self.activation), v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused:
            q, key_summary, v = self._scores_inputs(x)
            p = self.attn_dropout.p if self.training else 0.0
            weighted = _ops.fused_crab(q, key_summary.transpose(-2, -1), v, None, self.scale, self.activation, p)
            return self.out_proj(_merge_heads(weighted))
        weights, v = self.attention_weights(x)
        return self.out_proj(_merge_heads(self.attn_dropout(weights) @ v))
