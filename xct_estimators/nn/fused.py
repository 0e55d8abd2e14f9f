"""CRAB's chain from Q, K, V to the weighted values as one autograd function.

Plain autograd keeps several B x H x N x N tensors per layer for the backward pass (the shifted
scores, the masked scores, their absolute values, the weights, the dropout mask, the dropped
weights) and allocates a new one for every elementwise step. This function keeps only Q, K, V,
the mask, the per-(sample, head) minimum, the per-row AbsAct denominators and the dropout seed;
the backward pass recomputes the scores with one matrix product and redraws the dropout mask
from its seed (a counter-based hash: :func:`keep_masks`).

Both passes walk the (sample, head) score matrices in chunks of about
:func:`.memory.chunk_scores` scores (:func:`.memory.set_chunk_scores` changes it),
so no score tensor for the whole batch is ever allocated (on CPU a fresh tensor of that size
costs more in page faults than the arithmetic done on it). Between the matrix products (BLAS),
the elementwise chain runs in the C++ kernel (:mod:`.crab_kernel`: one pass over each row, in
L1) on CPU, or as PyTorch operations in place on chunk-sized buffers where the kernel cannot be
built, and on a GPU where the Triton kernels (:mod:`.triton_crab`) cannot run; all give the same
results and the same dropout masks. The row
normalisation is applied to the N x d products instead of the N x N weights:
W V = diag(1/D) (Z V).

The scores may be rectangular, N x M, without a mask: DeCoP's N x k compressed attention.

Gradients (derivation in the comments of ``backward``) equal plain autograd's on the unfused
formula, including the minimum's (it flows to the arg-min scores, split equally among ties as
``amin`` does) and the mask's; ``tests/nn/test_fused.py`` checks both in float64, on both paths.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Optional

import torch

from . import crab_kernel
from .absact import ABSACT_DELTA, ABSACT_EPS
from .memory import chunk_scores


def _chunk_limit(device: torch.device) -> int:
    return chunk_scores(device.type)


_GOLDEN = 0x9E3779B9


def _mix32(x: int) -> int:
    """The 32-bit avalanche mix of the C++ kernel ("lowbias32"), on a Python integer."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


def _signed32(x: int) -> int:
    return x - (1 << 32) if x >= 1 << 31 else x


def _mix32_(x: torch.Tensor) -> torch.Tensor:
    """:func:`_mix32` in place on an int32 tensor (products wrap; right shifts are made logical)."""
    x.bitwise_xor_(torch.bitwise_right_shift(x, 16).bitwise_and_(0xFFFF)).mul_(_signed32(0x7FEB352D))
    x.bitwise_xor_(torch.bitwise_right_shift(x, 15).bitwise_and_(0x1FFFF)).mul_(_signed32(0x846CA68B))
    return x.bitwise_xor_(torch.bitwise_right_shift(x, 16).bitwise_and_(0xFFFF))


def keep_masks(
    like: torch.Tensor,
    p: float,
    seed: int,
    first_sample: int = 0,
    first_head: int = 0,
    all_heads: Optional[int] = None,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Attention-dropout keep masks (0/1 in ``like``'s dtype) for the (sample, head) matrices of
    ``like`` (S, H, N, N), a chunk that starts at ``first_sample`` and ``first_head`` of a batch
    with ``all_heads`` heads.

    Counter-based: entry (i, j) of matrix (b, h) is kept when the top 16 bits of
    mix32(key(seed, b * H + h) + (i N + j) * 0x9E3779B9) reach round(p * 65536), so each entry is
    kept with probability 1 - p (to 1/65536), any chunk of the batch is drawn on its own, and the
    backward pass redraws the forward pass's masks from the seed. The C++ kernel computes the same
    hash inline; this is the PyTorch operations' path and the tests' reference.
    """
    samples, heads, n, cols = like.shape
    all_heads = heads if all_heads is None else all_heads
    lo, hi = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    base = _mix32(lo ^ _mix32(hi))
    keys = [
        _signed32(_mix32(base ^ ((first_sample + b) * all_heads + first_head + h) & 0xFFFFFFFF))
        for b in range(samples)
        for h in range(heads)
    ]
    keys = torch.tensor(keys, dtype=torch.int32, device=like.device).view(samples, heads, 1, 1)
    index = torch.arange(n * cols, dtype=torch.int32, device=like.device).view(n, cols).mul_(_signed32(_GOLDEN))
    bits = _mix32_(keys + index)
    top = torch.bitwise_right_shift(bits, 16).bitwise_and_(0xFFFF)
    out = torch.empty_like(like) if out is None else out
    return torch.ge(top, round(p * 65536), out=out)


def dropout_keep(like: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """The boolean keep mask that ``seed`` gives for attention weights like ``like``
    (B, H, N, N): the mask the fused function applies with that seed."""
    return keep_masks(like, p, seed).bool()


def _chunks(batch: int, heads: int, per_matrix: int, limit: int) -> Iterator[tuple[slice, slice]]:
    """(sample, head) slices in row-major order, each about ``limit`` scores: several samples
    with all their heads, or one sample with a group of heads (a divisor of H, so that the
    mask's slice is a view)."""
    if heads * per_matrix <= limit:
        samples = max(1, limit // (heads * per_matrix))
        for b in range(0, batch, samples):
            yield slice(b, min(b + samples, batch)), slice(0, heads)
        return
    group = max(g for g in range(1, heads + 1) if heads % g == 0 and (g == 1 or g * per_matrix <= limit))
    for b in range(batch):
        for h in range(0, heads, group):
            yield slice(b, b + 1), slice(h, h + group)


def _scores_into(buffer: torch.Tensor, q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    scores = torch.matmul(q, k.transpose(-2, -1), out=buffer[: q.shape[0]])
    return scores.mul_(scale) if scale != 1.0 else scores


class _Workspace(threading.local):
    """The chunk buffers of this thread's last call on CPU, reused by the next call with the same
    chunk shape. A fresh buffer of this size costs its page faults on every call (glibc hands
    blocks this large back to the system when they are freed), most of the fused path's cost at
    the forecasting presets' sizes (docs/dev/history.md). The buffers never leave a call (nothing returned or
    saved for the backward pass lives in them), and calls on one thread do not overlap."""

    def __init__(self) -> None:
        self.key: Optional[tuple] = None
        self.buffers: list[torch.Tensor] = []


_workspace = _Workspace()


def workspace_bytes() -> int:
    """Bytes of chunk buffers this thread keeps between calls (CPU)."""
    return sum(b.numel() * b.element_size() for b in _workspace.buffers)


def _buffers(count: int, q: torch.Tensor, k: torch.Tensor) -> list[torch.Tensor]:
    (batch, heads, n, _), cols = q.shape, k.shape[-2]
    layout = _chunks(batch, heads, n * cols, _chunk_limit(q.device))
    samples, group = max((s.stop - s.start, h.stop - h.start) for s, h in layout)
    shape = (samples, group, n, cols)
    if q.device.type != "cpu":  # the device's caching allocator already reuses blocks
        return [torch.empty(shape, dtype=q.dtype, device=q.device) for _ in range(count)]
    # Inference-mode tensors cannot be written outside inference mode: separate buffers.
    key = (shape, q.dtype, torch.is_inference_mode_enabled())
    if _workspace.key != key:
        _workspace.key, _workspace.buffers = key, []
    while len(_workspace.buffers) < count:
        _workspace.buffers.append(torch.empty(shape, dtype=q.dtype))
    return _workspace.buffers[:count]


def _zeros_of(shifted: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Indices (sample, head, row, column) of the zeros of ``shifted`` >= 0 (the arg-min
    scores): a row-minimum pass finds their rows, and only those rows are searched (a whole
    comparison of every score costs ten times more)."""
    rows = (shifted.amin(dim=-1) == 0).nonzero(as_tuple=True)
    hit, column = (shifted[rows] == 0).nonzero(as_tuple=True)
    return tuple(index[hit] for index in rows) + (column,)


def _kernel_for(q: torch.Tensor):
    if q.device.type != "cpu" or q.dtype not in (torch.float32, torch.float64):
        return None
    return crab_kernel.load()


def crab_forward(q, k, v, mask, scale: float, clipped: bool, p: float, seed: int):
    """O = dropout(AbsAct(M o (S - min S))) V with S = scale Q K^T, per sample and head; also the
    per-(sample, head) minimum (None without a mask) and the row denominators the backward needs."""
    batch, heads, n, _ = q.shape
    kernel = _kernel_for(q)
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
    minimum = torch.empty(batch, heads, 1, 1, dtype=q.dtype, device=q.device) if mask is not None else None
    denominator = torch.empty(batch, heads, n, 1, dtype=q.dtype, device=q.device)
    buffers = _buffers(1 if kernel is not None else 2, q, k)
    for rows, group in _chunks(batch, heads, n * k.shape[-2], _chunk_limit(q.device)):
        z = _scores_into(buffers[0], q[rows, group], k[rows, group], scale)
        d = denominator[rows, group]
        chunk = (rows.start, group.start, heads)
        if kernel is not None:
            if mask is None:
                kernel.forward(z, None, z.new_empty(0), d, p, seed, *chunk, clipped)
            else:
                kernel.forward(z, mask[group].contiguous(), minimum[rows, group], d, p, seed, *chunk, clipped)
        else:
            _forward_ops(z, mask, minimum, d, buffers[1], rows, group, p, seed, chunk, clipped)
        o = torch.matmul(z, v[rows, group], out=out[rows, group])
        o.div_(d * (1.0 - p))
    return out, minimum, denominator


def crab_backward(grad_out, q, k, v, mask, minimum, denominator, scale, clipped, p, seed, needs):
    """Gradients at Q, K, V and the mask (None where ``needs`` says it is not wanted)."""
    batch, heads, n, _ = q.shape
    kernel = _kernel_for(q)
    need_q, need_k, need_v, need_mask = needs
    # Contiguous gradients, whatever the inputs' strides: what the operator's fake version says.
    grad_q, grad_k, grad_v = (
        t.new_empty(t.shape) if need else None for t, need in ((q, need_q), (k, need_k), (v, need_v))
    )
    grad_mask = mask.new_zeros(mask.shape) if need_mask and mask is not None else None
    # With W = Z / D, dropout keep mask K and O = (K o W / (1 - p)) V, every product below
    # takes the row factor 1 / (D (1 - p)) on an N x d matrix instead of an N x N one.
    grad_scaled = grad_out / (denominator * (1.0 - p))
    scores_buf, grad_buf, seen_buf, *keep_buf = _buffers(3 if kernel is not None else 4, q, k)
    for rows, group in _chunks(batch, heads, n * k.shape[-2], _chunk_limit(q.device)):
        qc, kc, vc, g = q[rows, group], k[rows, group], v[rows, group], grad_scaled[rows, group]
        scores = _scores_into(scores_buf, qc, kc, scale)
        # G = K o (dO / (D (1 - p))) V^T is dW / D, the gradient at W over D; the clip passes
        # it where W >= 0 (as clamp_min's backward does). AbsAct, W = Z / D with
        # D = sum |Z| + delta:  dZ = (dW - sign(Z) <dW, W>) / D = G - sign(Z) <G, Z> / D.
        grad_w = torch.matmul(g, vc.transpose(-2, -1), out=grad_buf[: scores.shape[0]])
        seen = seen_buf[: scores.shape[0]]  # V saw K o clamp(Z) / (D (1 - p))
        args = (scores, mask, minimum, denominator, grad_w, seen, grad_mask, rows, group, p, seed, clipped)
        if kernel is not None:
            grad_scores = _backward_kernel(kernel, *args, heads, need_v)
        else:
            grad_scores = _backward_ops(*args, heads, need_v, keep_buf[0][: scores.shape[0]])
        if need_v:
            torch.matmul(seen.transpose(-2, -1), g, out=grad_v[rows, group])
        if need_q:
            torch.matmul(grad_scores, kc, out=grad_q[rows, group])
        if need_k:
            torch.matmul(grad_scores.transpose(-2, -1), qc, out=grad_k[rows, group])
    if scale != 1.0:  # S = scale Q K^T: the scale goes on the N x d products
        for grad in (grad_q, grad_k):
            if grad is not None:
                grad.mul_(scale)
    return grad_q, grad_k, grad_v, grad_mask


def _forward_ops(z, mask, minimum, d, spare, rows, group, p, seed, chunk, clipped) -> None:
    """The kernel's forward, as PyTorch operations in place on the chunk ``z``."""
    if mask is not None:  # Z = M o (S - min S) + eps
        m = torch.amin(z, dim=(-2, -1), keepdim=True, out=minimum[rows, group])
        torch.addcmul(z.new_tensor(ABSACT_EPS), z.sub_(m), mask[group], out=z)
    else:
        z.add_(ABSACT_EPS)
    spare = spare[: z.shape[0]]
    torch.sum(torch.abs(z, out=spare), dim=-1, keepdim=True, out=d).add_(ABSACT_DELTA)
    if clipped:  # clamp(Z / D) = clamp(Z) / D as D > 0
        z.clamp_min_(0.0)
    if p > 0.0:
        z.mul_(keep_masks(z, p, seed, *chunk, out=spare))


def _backward_kernel(
    kernel, scores, mask, minimum, denominator, grad_w, seen, grad_mask, rows, group, p, seed, clipped, heads, need_v
) -> torch.Tensor:
    samples, n = scores.shape[0], scores.shape[-2]
    row_total = scores.new_empty(samples, scores.shape[1], n)
    row_ties = torch.empty(row_total.shape, dtype=torch.int32, device=scores.device)
    kernel.backward(
        scores,
        None if mask is None else mask[group].contiguous(),
        scores.new_empty(0) if mask is None else minimum[rows, group],
        denominator[rows, group],
        grad_w,
        seen if need_v else None,
        None if grad_mask is None else grad_mask[group],
        row_total,
        row_ties,
        p,
        seed,
        rows.start,
        group.start,
        heads,
        clipped,
    )
    if mask is not None:
        # The minimum's gradient, minus the sum of dSh, goes to the arg-min scores (S = min S),
        # split equally among ties as amin's backward does; the kernel counted them per row.
        tie_rows = (row_ties > 0).nonzero(as_tuple=True)
        low = minimum[rows, group].view(samples, -1)
        hit, column = (scores[tie_rows] == low[tie_rows[:2]].unsqueeze(-1)).nonzero(as_tuple=True)
        where = tuple(index[hit] for index in tie_rows) + (column,)
        share = row_total.sum(dim=-1).div_(row_ties.sum(dim=-1))
        grad_w.index_put_(where, share[where[:2]].neg_(), accumulate=True)
    return grad_w


def _backward_ops(
    scores, mask, minimum, denominator, grad_w, seen, grad_mask, rows, group, p, seed, clipped, heads, need_v, keep_buf
) -> torch.Tensor:
    """The kernel's backward as PyTorch operations: ``scores`` becomes Sh = S - m and ``seen``
    holds Z (then, for V, K o clamp(Z)); returns the gradient at S, in ``grad_w``."""
    d = denominator[rows, group]
    shifted, z = scores, seen
    if mask is not None:  # Sh = S - m kept for the mask's gradient; Z = M o Sh + eps
        torch.addcmul(z.new_tensor(ABSACT_EPS), shifted.sub_(minimum[rows, group]), mask[group], out=z)
    else:
        torch.add(shifted, ABSACT_EPS, out=z)
    keep = keep_masks(z, p, seed, rows.start, group.start, heads, out=keep_buf) if p > 0.0 else None
    if keep is not None:
        grad_w.mul_(keep)
    if clipped:
        grad_w.mul_(torch.ge(z, 0.0, out=torch.empty_like(z)))
    row_dot = torch.linalg.vecdot(grad_w, z, dim=-1).unsqueeze(-1).div_(d)
    sign = torch.sign(z)
    if need_v:
        if clipped:
            z.clamp_min_(0.0)
        if keep is not None:
            z.mul_(keep)
    grad_z = grad_w.addcmul_(sign, row_dot, value=-1.0)
    del sign
    if mask is None:
        return grad_z
    # Sh = S - min(S): the minimum's gradient, minus the sum of dSh, goes to the arg-min
    # scores, split equally among ties as amin's backward does.
    at_min = _zeros_of(shifted)
    if grad_mask is not None:  # dM = sum over samples of dZ o Sh
        grad_mask[group] += shifted.mul_(grad_z).sum(dim=0)
    grad_scores = grad_z.mul_(mask[group])  # dSh = dZ o M
    total = grad_scores.sum(dim=(-2, -1))
    ties = torch.zeros_like(total).index_put_(
        at_min[:2], torch.ones_like(at_min[0], dtype=total.dtype), accumulate=True
    )
    return grad_scores.index_put_(at_min, (total / ties)[at_min[:2]].neg_(), accumulate=True)
