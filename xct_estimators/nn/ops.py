"""The fused CRAB chain and the hashed dropout as opaque PyTorch operators (``torch.library``).

``torch.compile`` and ``torch.export`` see one operator with a shape-only ("fake") version and
a registered backward instead of Python loops, chunk buffers and C++ calls they cannot trace, so
whole networks compile and export as one graph. The dropout seed is an input tensor, drawn by a
traceable ``torch.randint``, never a Python number read back from a tensor.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from . import crab_gpu, crab_kernel, fused
from .absact import FUSED_ACTIVATIONS

_EMPTY = (0,)


def seed_tensor(p: float, seed: Optional[int] = None, device: Optional[torch.device] = None) -> Tensor:
    """The dropout seed as a one-element int64 tensor on ``device`` (made there: no copy, so no
    wait for the GPU): ``seed``, else drawn from the device's generator when ``p > 0``
    (``torch.manual_seed`` makes runs repeatable), else 0."""
    if seed is not None:
        return torch.full((1,), seed, dtype=torch.int64, device=device)
    if p > 0.0:
        return torch.randint(0, 2**62, (1,), dtype=torch.int64, device=device)
    return torch.zeros(1, dtype=torch.int64, device=device)


def _or_none(t: Tensor) -> Optional[Tensor]:
    return None if t.numel() == 0 and t.dim() == 1 else t


# -- fused CRAB ----------------------------------------------------------------------------------
_HALF = (torch.float16, torch.bfloat16)


def _stats_dtype(q: Tensor) -> torch.dtype:
    """The minimum's and the denominators' dtype: float32 for half-precision inputs."""
    return torch.float32 if q.dtype in _HALF else q.dtype


def _float32(*tensors: Optional[Tensor]) -> list[Optional[Tensor]]:
    """Half-precision tensors in float32 (the CPU path computes in float32 under autocast)."""
    return [t.float() if t is not None and t.dtype in _HALF else t for t in tensors]


def _no_place(q: Tensor, mask: Optional[Tensor]) -> Tensor:
    """The minimum's place where a path does not record it (the CPU's backward finds it again)."""
    return q.new_zeros(q.shape[:2], dtype=torch.int64) if mask is not None else q.new_empty(_EMPTY, dtype=torch.int64)


def _forward_chunked(q, k, v, mask, scale, clipped, p, seed):
    out, minimum, denominator = fused.crab_forward(*_float32(q, k, v, mask), scale, clipped, p, int(seed.item()))
    minimum = q.new_empty(_EMPTY) if minimum is None else minimum
    return out.to(q.dtype), minimum, denominator, _no_place(q, mask)


@torch.library.custom_op("xct::crab_forward", mutates_args=())
def crab_forward(
    q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], scale: float, clipped: bool, p: float, seed: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """O, the minimum score, the AbsAct denominators, and where the minimum is (row * N + column,
    int64; the Triton kernels route its gradient there)."""
    return _forward_chunked(q, k, v, mask, scale, clipped, p, seed)


@crab_forward.register_kernel("cuda")
def _forward_cuda(q, k, v, mask, scale, clipped, p, seed):
    if crab_gpu.usable(q):
        return crab_gpu.module().forward(q, k, v, mask, scale, clipped, p, seed)
    return _forward_chunked(q, k, v, mask, scale, clipped, p, seed)


@crab_forward.register_fake
def _(q, k, v, mask, scale, clipped, p, seed):
    batch, heads, n, _ = q.shape
    stats = _stats_dtype(q)
    minimum = q.new_empty(_EMPTY) if mask is None else q.new_empty(batch, heads, 1, 1, dtype=stats)
    out = q.new_empty(batch, heads, n, v.shape[-1])
    return out, minimum, q.new_empty(batch, heads, n, 1, dtype=stats), _no_place(q, mask)


def _backward_chunked(grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs):
    del out, place  # the chunked path recomputes the row terms and finds the minimum's ties again
    grads = fused.crab_backward(
        *_float32(grad_out, q, k, v, mask), _or_none(minimum), denominator, scale, clipped, p, int(seed.item()), needs
    )
    return tuple(
        q.new_empty(_EMPTY) if g is None else g.to(t.dtype) for g, t in zip(grads, (q, k, v, mask), strict=True)
    )


@torch.library.custom_op("xct::crab_backward", mutates_args=())
def crab_backward(
    grad_out: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Optional[Tensor],
    out: Tensor,
    minimum: Tensor,
    denominator: Tensor,
    place: Tensor,
    scale: float,
    clipped: bool,
    p: float,
    seed: Tensor,
    needs: list[bool],
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    args = (grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs)
    return _backward_chunked(*args)


@crab_backward.register_kernel("cuda")
def _backward_cuda(grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs):
    args = (grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs)
    if not crab_gpu.usable(q):
        return _backward_chunked(*args)
    grads = crab_gpu.module().backward(*args)
    return tuple(q.new_empty(_EMPTY) if g is None else g for g in grads)


@crab_backward.register_fake
def _(grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs):
    wanted = zip((q, k, v, mask), needs, strict=True)
    return tuple(t.new_empty(t.shape) if want and t is not None else q.new_empty(_EMPTY) for t, want in wanted)


def _crab_setup(ctx, inputs, output) -> None:
    q, k, v, mask, scale, clipped, p, seed = inputs
    out, minimum, denominator, place = output
    ctx.save_for_backward(q, k, v, mask, out, minimum, denominator, place, seed)
    ctx.scale, ctx.clipped, ctx.p = scale, clipped, p


def _crab_grad(ctx, grad_out, _grad_minimum, _grad_denominator, _grad_place):
    q, k, v, mask, out, minimum, denominator, place, seed = ctx.saved_tensors
    needs = [bool(n) for n in ctx.needs_input_grad[:4]]
    needs[3] = needs[3] and mask is not None
    grads = crab_backward(
        grad_out, q, k, v, mask, out, minimum, denominator, place, ctx.scale, ctx.clipped, ctx.p, seed, needs
    )
    return *(g if want else None for g, want in zip(grads, needs, strict=True)), None, None, None, None


crab_forward.register_autograd(_crab_grad, setup_context=_crab_setup)


def crab(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], scale: float, clipped: bool, p: float, seed: Tensor):
    """The weighted values of the fused chain (see :func:`fused_crab`)."""
    return crab_forward(q, k, v, mask, scale, clipped, p, seed)[0]


def fused_crab(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Optional[Tensor],
    scale: float = 1.0,
    activation: str = "absact",
    p: float = 0.0,
    seed: Optional[int] = None,
) -> Tensor:
    """CRAB's weighted values, (B, H, N, d), from Q (B, H, N, d), K and V (B, H, M, d) and the
    (H, N, N) mask (M = N), or no mask (DeCoP: K holds the k compressed keys, M = k).

    ``p``: attention-weight dropout (give it only in training); ``seed`` fixes its mask (default:
    drawn from torch's global generator, so ``torch.manual_seed`` makes runs repeatable).
    Without autograd (inference, ``torch.no_grad``) nothing is saved.
    """
    if activation not in FUSED_ACTIVATIONS:
        raise ValueError(f"fused CRAB supports {FUSED_ACTIVATIONS}, got {activation!r}.")
    if mask is not None and (k.shape[-2] != q.shape[-2] or tuple(mask.shape[-2:]) != (q.shape[-2],) * 2):
        raise ValueError(
            f"CRAB's mask needs N x N scores and an (H, N, N) mask: got {q.shape[-2]} queries, {k.shape[-2]} keys "
            f"and a mask of shape {tuple(mask.shape)}."
        )
    return crab(q, k, v, mask, float(scale), activation == "absact_clipped", float(p), seed_tensor(p, seed, q.device))


# -- hashed activation dropout -------------------------------------------------------------------
@torch.library.custom_op("xct::scaled_keep", mutates_args=())
def scaled_keep(x: Tensor, p: float, seed: Tensor) -> Tensor:
    """Entry i kept (and scaled by 1 / (1 - p)) when the hash of (seed, i) clears p; see :mod:`.dropout`."""
    return crab_kernel.load().scaled_keep(x.contiguous(), p, int(seed.item()))


@scaled_keep.register_fake
def _(x, p, seed):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _keep_setup(ctx, inputs, output) -> None:
    _, ctx.p, seed = inputs
    ctx.save_for_backward(seed)


def _keep_grad(ctx, grad):
    # d(x * keep / (1 - p)) / dx = keep / (1 - p): the same operator on the gradient
    (seed,) = ctx.saved_tensors
    return scaled_keep(grad, ctx.p, seed), None, None


scaled_keep.register_autograd(_keep_grad, setup_context=_keep_setup)


# -- the known-future decoder's pairwise hidden layer --------------------------------------------
@torch.library.custom_op("xct::pairwise_relu", mutates_args=())
def pairwise_relu(a: Tensor, c: Tensor, w: Tensor) -> Tensor:
    """``relu(a[b, t] + c[b, j]) . w`` for every step t and channel j: a (B, T, H), c (B, C, H) and
    w (H,) give (B, T, C), in the C++ kernel (:func:`known_future.pairwise` calls it only where it
    loaded), the (B, T, C, H) hidden values never stored. First derivatives only."""
    return crab_kernel.load().pairwise_forward(a.contiguous(), c.contiguous(), w.contiguous())


@pairwise_relu.register_fake
def _(a, c, w):
    return a.new_empty(a.shape[0], a.shape[1], c.shape[1])


@torch.library.custom_op("xct::pairwise_relu_backward", mutates_args=())
def pairwise_relu_backward(grad: Tensor, a: Tensor, c: Tensor, w: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The gradients of :func:`pairwise_relu`'s a, c and w, the hidden values recomputed."""
    return tuple(crab_kernel.load().pairwise_backward(*(t.contiguous() for t in (grad, a, c, w))))


@pairwise_relu_backward.register_fake
def _(grad, a, c, w):
    return tuple(torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in (a, c, w))  # contiguous, as the kernel's


def _pairwise_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _pairwise_grad(ctx, grad):
    return pairwise_relu_backward(grad, *ctx.saved_tensors)


pairwise_relu.register_autograd(_pairwise_grad, setup_context=_pairwise_setup)
