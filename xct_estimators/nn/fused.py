"""CRAB's chain from Q, K, V to the weighted values as one autograd function.

Plain autograd keeps several B x H x N x N tensors per layer for the backward pass (the shifted
scores, the masked scores, their absolute values, the weights, the dropout mask, the dropped
weights) and allocates a new one for every elementwise step. This function keeps only Q, K, V,
the mask, the per-(sample, head) minimum, the per-row AbsAct denominators and the dropout seed;
the backward pass recomputes the scores with one matrix product and regenerates the dropout mask
from its seed. The elementwise steps run in place on one or two N x N buffers.

Gradients (derivation in the comments of ``backward``) equal plain autograd's on the unfused
formula, including the minimum's (it flows to the arg-min scores, split equally among ties as
``amin`` does) and the mask's; ``tests/nn/test_fused.py`` checks both in float64.
"""

from __future__ import annotations

from typing import Optional

import torch

from .attention import ABSACT_DELTA, ABSACT_EPS

FUSED_ACTIVATIONS = ("absact", "absact_clipped")


def dropout_keep(like: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """The boolean keep mask that ``seed`` gives for a tensor like ``like`` (each entry kept with
    probability 1 - p, to 1/65536). Drawn as 16-bit integers, four from every 64 random bits:
    about 4x cheaper than ``bernoulli_`` on CPU, and the backward pass redraws it instead of
    storing it."""
    generator = torch.Generator(device=like.device).manual_seed(seed)
    n = like.numel()
    bits = torch.empty(n // 4 + 1, dtype=torch.int64, device=like.device).random_(-(2**63), None, generator=generator)
    threshold = round(p * 65536) - 32768  # int16 values are uniform on [-32768, 32767]
    return bits.view(torch.int16)[:n].view(like.shape) >= threshold


def _scores(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    scores = torch.matmul(q, k.transpose(-2, -1))
    return scores.mul_(scale) if scale != 1.0 else scores


#: Below this many scores a temporary |S| summed is faster than ``vector_norm(ord=1)``, which runs
#: on one thread on CPU here; above it the temporary's page faults cost more (measured, 2 threads:
#: 0.14 vs 1.36 ms at 32x4x84x84, 2.0 vs 4.2 ms at 8x896x896, 20 vs 6.8 ms at 8x4x660x660).
_TEMPORARY_ABS_MAX = 2**23


def _row_l1(scores: torch.Tensor) -> torch.Tensor:
    if scores.numel() <= _TEMPORARY_ABS_MAX:
        return scores.abs().sum(dim=-1, keepdim=True)
    return torch.linalg.vector_norm(scores, ord=1, dim=-1, keepdim=True)


def _weights_in_place(scores: torch.Tensor, mask: Optional[torch.Tensor], minimum, clipped: bool, p: float):
    """Turn ``scores`` into AbsAct weights in place, already scaled by dropout's 1 / (1 - p);
    returns them and the row denominators D (unscaled)."""
    if mask is not None:
        scores.sub_(minimum).mul_(mask)
    scores.add_(ABSACT_EPS)
    denominator = _row_l1(scores).add_(ABSACT_DELTA)
    scores.div_(denominator * (1.0 - p))
    if clipped:
        scores.clamp_min_(0.0)
    return scores, denominator


class FusedCRAB(torch.autograd.Function):
    """O = dropout(AbsAct(M o (S - min S))) V with S = scale Q K^T, per sample and head."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale: float, clipped: bool, p: float, seed: int):
        scores = _scores(q, k, scale)
        minimum = scores.amin(dim=(-2, -1), keepdim=True) if mask is not None else None
        weights, denominator = _weights_in_place(scores, mask, minimum, clipped, p)
        if p > 0.0:
            weights.mul_(dropout_keep(weights, p, seed))
        out = torch.matmul(weights, v)
        ctx.save_for_backward(q, k, v, mask, minimum, denominator)
        ctx.scale, ctx.clipped, ctx.p, ctx.seed = scale, clipped, p, seed
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, mask, minimum, denominator = ctx.saved_tensors
        scale, p = ctx.scale, ctx.p
        keep_scale = 1.0 / (1.0 - p)
        # Recompute Sh = S - m (kept for the mask's gradient) and W = (M o Sh + eps) / D, the
        # weights before clipping and dropout (D was saved: no second norm).
        shifted = _scores(q, k, scale)
        if mask is not None:
            shifted.sub_(minimum)
            weights = torch.mul(shifted, mask)
        else:
            weights = shifted.clone()
        weights.add_(ABSACT_EPS).div_(denominator)
        keep = dropout_keep(weights, p, ctx.seed) if p > 0.0 else None
        grad_v = None
        if ctx.needs_input_grad[2]:  # V saw dropout(clip(W)) / (1 - p)
            seen = weights.clamp_min(0.0) if ctx.clipped else weights
            if keep is not None:
                seen = seen.mul_(keep) if ctx.clipped else seen * keep
            grad_v = torch.matmul(seen.transpose(-2, -1), grad_out)
            if p > 0.0:
                grad_v.mul_(keep_scale)
            del seen
        # dW' = (dO V^T) o keep; the true dW is dW' / (1 - p), folded into D below. The clip
        # passes the gradient where W >= 0 (as clamp_min's backward does).
        grad_w = torch.matmul(grad_out, v.transpose(-2, -1))
        if keep is not None:
            grad_w.mul_(keep)
            del keep
        if ctx.clipped:
            grad_w.mul_(weights >= 0)
        # AbsAct, W = Z / D with D = sum |Z| + delta:  dZ = (dW - sign(Z) <dW, W>) / D
        # (sign(Z) = sign(W), as D > 0).
        row_dot = torch.linalg.vecdot(grad_w, weights, dim=-1).unsqueeze(-1)
        grad_z = grad_w.addcmul_(weights.sign_(), row_dot, value=-1.0).div_(denominator * (1.0 - p))
        del weights
        grad_mask = None
        if mask is not None:
            # Sh = S - min(S): the minimum's gradient, minus the sum of dSh, goes to the arg-min
            # scores, split equally among ties as amin's backward does.
            at_min = shifted == 0
            # Z = M o Sh + eps:  dM = sum over samples of dZ o Sh,  dSh = dZ o M.
            if ctx.needs_input_grad[3]:
                grad_mask = shifted.mul_(grad_z).sum(dim=0)
            del shifted
            grad_scores = grad_z.mul_(mask)
            total = grad_scores.sum(dim=(-2, -1), keepdim=True)
            if at_min.numel() <= _TEMPORARY_ABS_MAX:  # few scores: fewer, whole-tensor ops
                grad_scores.sub_(at_min * total.div_(at_min.sum(dim=(-2, -1), keepdim=True)))
            else:  # many scores: touch only the arg-min positions
                where = at_min.nonzero(as_tuple=True)
                ties = torch.zeros_like(total).index_put_(
                    where[:2] + (torch.zeros_like(where[0]),) * 2, torch.ones_like(where[0], dtype=total.dtype),
                    accumulate=True,
                )
                grad_scores.index_put_(where, -(total / ties)[where[:2]][:, 0, 0], accumulate=True)
        else:
            del shifted
            grad_scores = grad_z
        if scale != 1.0:
            grad_scores.mul_(scale)
        grad_q = torch.matmul(grad_scores, k) if ctx.needs_input_grad[0] else None
        grad_k = torch.matmul(grad_scores.transpose(-2, -1), q) if ctx.needs_input_grad[1] else None
        return grad_q, grad_k, grad_v, grad_mask, None, None, None, None


def fused_crab(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: Optional[torch.Tensor],
    scale: float = 1.0,
    activation: str = "absact",
    p: float = 0.0,
    seed: Optional[int] = None,
) -> torch.Tensor:
    """CRAB's weighted values, (B, H, N, d), from Q, K, V (B, H, N, d) and the (H, N, N) mask.

    ``p``: attention-weight dropout (give it only in training); ``seed`` fixes its mask (default:
    drawn from torch's global generator, so ``torch.manual_seed`` makes runs repeatable).
    Without autograd (inference, ``torch.no_grad``) nothing is saved.
    """
    if activation not in FUSED_ACTIVATIONS:
        raise ValueError(f"fused CRAB supports {FUSED_ACTIVATIONS}, got {activation!r}.")
    if p > 0.0 and seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item())
    return FusedCRAB.apply(q, k, v, mask, float(scale), activation == "absact_clipped", float(p), seed or 0)
