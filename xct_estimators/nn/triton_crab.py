"""CRAB's fused chain as Triton kernels: the CUDA implementation of ``xct::crab_forward`` and
``xct::crab_backward`` (:mod:`.ops`), computing what :mod:`.fused` computes on the CPU.

Per (sample, head), with S = scale Q K^T (N x M), Z = M o (S - min S) + eps (or S + eps without a
mask), D = rowsum |Z| + delta and the hashed keep mask K of :func:`.fused.keep_masks`::

    O = (K o clamp(Z)) V / (D (1 - p))

The numerator and D are sums over keys, so a program that owns a tile of query rows walks the
key tiles once and accumulates both, with no rescaling; the global minimum is one more pass
(:func:`_min_kernel`). No score matrix is ever written to memory.

Backward (FlashAttention-2's shape, scores recomputed tile by tile). With G = dO / (D (1 - p))
and r = rowsum(dO o O) / D (the AbsAct row term <G V^T o K, clamp(Z)> / D, read off the output):

    dZ  = K o [Z >= 0 if clipped] o (G V^T) - sign(Z) r
    dSh = dZ o M,  dM = sum over samples of dZ o (S - min S),  dV = (K o clamp(Z))^T G

and the minimum's gradient, -sum dSh, goes to the minimum's first place (i*, j*) in row-major
order, as ``torch.min``'s does (the CPU operator splits it among exact ties, as ``amin`` does):
dQ[i*] += scale c K[j*] and dK[j*] += scale c Q[i*] with c = -sum dSh. The kernel that finds the
minimum records that place, and every later kernel takes the score there to be the minimum
itself, so no kernel compares its own rounding of a score with another kernel's. One kernel owns
key tiles (dK, dV) and works on transposed tiles, one owns query tiles (dQ and the per-tile sums
of dSh), and one owns a (query, key) tile of the mask and loops over the batch, so dM is summed in
registers without a B x N x N buffer.

Half-precision inputs: bf16 is multiplied on the tensor cores and accumulates in float32; fp16 is
computed in float32 (its range cannot hold the unnormalised weights) with TF32 products. The
minimum, the denominators and every elementwise step are float32. Float32 products use TF32
where torch's switch allows it (:mod:`.tf32`), as PyTorch's own products do.

Tests run these kernels on the CPU under Triton's interpreter (``TRITON_INTERPRET=1``).
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from . import tf32
from .absact import ABSACT_DELTA, ABSACT_EPS

#: Dtypes the kernels take (float64 runs the PyTorch path of :mod:`.fused`).
DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Compiled kernels read only constexpr globals (the interpreter reads any).
_EPS = tl.constexpr(ABSACT_EPS)
_DELTA = tl.constexpr(ABSACT_DELTA)


@triton.jit
def _mix32(x):
    # The 32-bit avalanche mix of csrc/crab.cpp and fused._mix32 ("lowbias32").
    x ^= x >> 16
    x = x * 0x7FEB352D
    x ^= x >> 15
    x = x * 0x846CA68B
    x ^= x >> 16
    return x


@triton.jit
def _keep(seed_ptr, matrix, index, threshold):
    """The keep mask of the entries at ``index`` (row * columns + column) of matrix ``matrix``
    (sample * H + head)."""
    seed = tl.load(seed_ptr)
    lo = (seed & 0xFFFFFFFF).to(tl.uint32)
    hi = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    key = _mix32(_mix32(lo ^ _mix32(hi)) ^ matrix.to(tl.uint32))
    return (_mix32(key + index.to(tl.uint32) * 0x9E3779B9) >> 16) >= threshold


@triton.jit
def _tile(ptr, rows, cols, stride_r, stride_c, n_rows, n_cols):
    """A (rows, cols) tile, zero outside the matrix."""
    inside = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    at = rows[:, None].to(tl.int64) * stride_r + cols[None, :].to(tl.int64) * stride_c  # past 2**31 elements
    return tl.load(ptr + at, mask=inside, other=0.0)


@triton.jit
def _mask_tile(Mask, h, rows, cols, sm_h, sm_n, sm_c, N, M, HAS_MASK: tl.constexpr):
    if HAS_MASK:
        m_tile = _tile(Mask + h * sm_h, rows, cols, sm_n, sm_c, N, M).to(tl.float32)
    else:
        m_tile = tl.zeros((rows.shape[0], cols.shape[0]), tl.float32)
    return m_tile


@triton.jit
def _low(Low, bh, HAS_MASK: tl.constexpr):
    if HAS_MASK:
        low = tl.load(Low + bh)
    else:
        low = 0.0
    return low


@triton.jit
def _place(Place, bh, HAS_MASK: tl.constexpr):
    """Where the minimum is (row * columns + column), recorded by the kernel that found it."""
    if HAS_MASK:
        place = tl.load(Place + bh)
    else:
        place = -1
    return place


@triton.jit
def _scores(q, k, scale, PRECISION: tl.constexpr):
    return tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale


@triton.jit
def _sliced_dot(A, B, rows, cols, sa_n, sa_d, sb_n, sb_d, n_rows, n_cols, width,
                BLOCK_C: tl.constexpr, PRECISION: tl.constexpr):  # fmt: skip
    """A[rows] B[cols]^T in float32, a slice of BLOCK_C columns of the width at a time, so that no
    two whole-width tiles are live at once, and no slice lies wholly past the width (a head of 192
    takes three slices of 64, not the four of its padded width)."""
    acc = tl.zeros((rows.shape[0], cols.shape[0]), tl.float32)
    for start in range(0, width, BLOCK_C):
        dims = start + tl.arange(0, BLOCK_C)
        a = _tile(A, rows, dims, sa_n, sa_d, n_rows, width)
        b = _tile(B, cols, dims, sb_n, sb_d, n_cols, width)
        acc = tl.dot(a, tl.trans(b), acc, input_precision=PRECISION)
    return acc


@triton.jit
def _weights(s, m_tile, low, place, index, inside, HAS_MASK: tl.constexpr):
    """Z = M o (S - min S) + eps (S + eps without a mask), zero outside the matrix. The entry at the
    minimum's recorded ``place`` (``index``: each entry's row * columns + column) is the minimum
    itself, however this kernel's tiles round its score."""
    if HAS_MASK:
        s = tl.where(index == place, low, s)
        z = m_tile * (s - low) + _EPS
    else:
        z = s + _EPS
    return tl.where(inside, z, 0.0)


@triton.jit
def _min_kernel(
    Q, K, partial, places, sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, H, N, M, D, scale, TILES,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    bh, tile = tl.program_id(0).to(tl.int64), tl.program_id(1)
    b, h = bh // H, bh % H
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    q = _tile(Q + b * sq_b + h * sq_h, rows, dims, sq_n, sq_d, N, D)
    low = tl.full((BLOCK_M,), float("inf"), tl.float32)
    column = tl.zeros((BLOCK_M,), tl.int32)  # where each row's minimum is: its first column
    for start in range(0, M, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        k = _tile(K + b * sk_b + h * sk_h, cols, dims, sk_n, sk_d, M, D)
        s = tl.where((rows[:, None] < N) & (cols[None, :] < M), _scores(q, k, scale, PRECISION), float("inf"))
        tile_low = tl.min(s, axis=1)
        lower = tile_low < low  # strictly: an equal minimum further right is not the first
        column = tl.where(lower, tl.argmin(s, axis=1) + start, column)
        low = tl.where(lower, tile_low, low)
    least = tl.min(low, axis=0)
    row = tl.min(tl.where(low == least, rows, N + BLOCK_M), axis=0)  # the first row holding it
    at = row.to(tl.int64) * M + tl.sum(tl.where(rows == row, column, 0), axis=0)
    tl.store(partial + bh * TILES + tile, least)
    tl.store(places + bh * TILES + tile, at)


@triton.jit
def _forward_kernel(
    Q, K, V, Mask, Low, Place, Seed, Out, Den,
    sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d, sm_h, sm_n, sm_c,
    so_b, so_h, so_n, so_d, H, N, M, D, DV, scale, threshold, inv_keep,
    HAS_MASK: tl.constexpr, CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    bh, tile = tl.program_id(0).to(tl.int64), tl.program_id(1)
    b, h = bh // H, bh % H
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    dims, vdims = tl.arange(0, BLOCK_D), tl.arange(0, BLOCK_DV)
    q = _tile(Q + b * sq_b + h * sq_h, rows, dims, sq_n, sq_d, N, D)
    low, place = _low(Low, bh, HAS_MASK), _place(Place, bh, HAS_MASK)
    acc = tl.zeros((BLOCK_M, BLOCK_DV), tl.float32)
    den = tl.zeros((BLOCK_M,), tl.float32)
    for start in range(0, M, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        inside = (rows[:, None] < N) & (cols[None, :] < M)
        index = rows[:, None] * M + cols[None, :]
        k = _tile(K + b * sk_b + h * sk_h, cols, dims, sk_n, sk_d, M, D)
        m_tile = _mask_tile(Mask, h, rows, cols, sm_h, sm_n, sm_c, N, M, HAS_MASK)
        z = _weights(_scores(q, k, scale, PRECISION), m_tile, low, place, index, inside, HAS_MASK)
        den += tl.sum(tl.abs(z), axis=1)
        if CLIPPED:
            z = tl.maximum(z, 0.0)
        if DROPOUT:
            z = tl.where(_keep(Seed, bh, index, threshold), z, 0.0)
        v = _tile(V + b * sv_b + h * sv_h, cols, vdims, sv_n, sv_d, M, DV)
        acc += tl.dot(z.to(v.dtype), v, input_precision=PRECISION)
    den += _DELTA
    out = acc * (inv_keep / den)[:, None]
    inside_out = (rows[:, None] < N) & (vdims[None, :] < DV)
    o_ptr = Out + b * so_b + h * so_h + rows[:, None].to(tl.int64) * so_n + vdims[None, :] * so_d
    tl.store(o_ptr, out.to(Out.dtype.element_ty), mask=inside_out)
    tl.store(Den + bh * N + rows, den, mask=rows < N)


@triton.jit
def _grad_weights(
    s, grad, delta, m_tile, low, place, inside, Seed, bh, index, threshold,
    HAS_MASK: tl.constexpr, CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
):  # fmt: skip
    """dZ and the dropped, clipped weights V saw, from a tile's S and G V^T; ``delta`` and the
    entries' ``index`` are laid out as the tile is (queries x keys, or transposed)."""
    z = _weights(s, m_tile, low, place, index, inside, HAS_MASK)
    seen = tl.maximum(z, 0.0) if CLIPPED else z
    if CLIPPED:
        grad = tl.where(z >= 0.0, grad, 0.0)
    if DROPOUT:
        keep = _keep(Seed, bh, index, threshold)
        seen = tl.where(keep, seen, 0.0)
        grad = tl.where(keep, grad, 0.0)
    sign = tl.where(z > 0.0, 1.0, tl.where(z < 0.0, -1.0, 0.0))
    grad_z = tl.where(inside, grad - sign * delta, 0.0)
    return grad_z, seen


@triton.jit
def _key_kernel(
    Q, K, V, Mask, Low, Place, Seed, G, Delta, GK, GV,
    sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d, sm_h, sm_n, sm_c,
    sg_b, sg_h, sg_n, sg_d, H, N, M, D, DV, scale, threshold,
    HAS_MASK: tl.constexpr, CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    """dK (before the scale and the tie term) and dV for one tile of keys. Its tiles are
    transposed (keys x queries), so the weights and their gradient enter the products as computed,
    with no tile transposed in registers."""
    bh, tile = tl.program_id(0).to(tl.int64), tl.program_id(1)
    b, h = bh // H, bh % H
    cols = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    dims, vdims = tl.arange(0, BLOCK_D), tl.arange(0, BLOCK_DV)
    k = _tile(K + b * sk_b + h * sk_h, cols, dims, sk_n, sk_d, M, D)
    v = _tile(V + b * sv_b + h * sv_h, cols, vdims, sv_n, sv_d, M, DV)
    low, place = _low(Low, bh, HAS_MASK), _place(Place, bh, HAS_MASK)
    grad_k = tl.zeros((BLOCK_N, BLOCK_D), tl.float32)
    grad_v = tl.zeros((BLOCK_N, BLOCK_DV), tl.float32)
    inside_k = (cols[:, None] < M) & (dims[None, :] < D)
    at = bh * M * D + cols[:, None] * D + dims[None, :]
    for start in range(0, N, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        inside = (cols[:, None] < M) & (rows[None, :] < N)
        q_t = _tile(Q + b * sq_b + h * sq_h, dims, rows, sq_d, sq_n, D, N)
        g = _tile(G + b * sg_b + h * sg_h, rows, vdims, sg_n, sg_d, N, DV)
        delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)
        m_tile = _mask_tile(Mask, h, cols, rows, sm_h, sm_c, sm_n, M, N, HAS_MASK)  # the mask's transpose
        s = tl.dot(k, q_t, input_precision=PRECISION) * scale
        grad = tl.dot(v, tl.trans(g), input_precision=PRECISION)
        index = rows[None, :] * M + cols[:, None]
        grad_z, seen = _grad_weights(s, grad, delta[None, :], m_tile, low, place, inside, Seed, bh, index, threshold,
                                     HAS_MASK, CLIPPED, DROPOUT)  # fmt: skip
        grad_v += tl.dot(seen.to(g.dtype), g, input_precision=PRECISION)
        grad_s = grad_z * m_tile if HAS_MASK else grad_z
        grad_k += tl.dot(grad_s.to(k.dtype), tl.trans(q_t), input_precision=PRECISION)
    tl.store(GK + at, grad_k, mask=inside_k)
    inside_v = (cols[:, None] < M) & (vdims[None, :] < DV)
    tl.store(GV + bh * M * DV + cols[:, None] * DV + vdims[None, :], grad_v.to(GV.dtype.element_ty), mask=inside_v)


@triton.jit
def _query_kernel(
    Q, K, V, Mask, Low, Place, Seed, G, Delta, GQ, Total,
    sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d, sm_h, sm_n, sm_c,
    sg_b, sg_h, sg_n, sg_d, H, N, M, D, DV, scale, threshold, TILES,
    HAS_MASK: tl.constexpr, CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    """dQ (before the scale and the minimum's term) and this tile's sum of dSh (the minimum's
    gradient, which the caller routes to its recorded place)."""
    bh, tile = tl.program_id(0).to(tl.int64), tl.program_id(1)
    b, h = bh // H, bh % H
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    dims, vdims = tl.arange(0, BLOCK_D), tl.arange(0, BLOCK_DV)
    q = _tile(Q + b * sq_b + h * sq_h, rows, dims, sq_n, sq_d, N, D)
    g = _tile(G + b * sg_b + h * sg_h, rows, vdims, sg_n, sg_d, N, DV)
    delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)
    low, place = _low(Low, bh, HAS_MASK), _place(Place, bh, HAS_MASK)
    grad_q = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
    inside_q = (rows[:, None] < N) & (dims[None, :] < D)
    total = tl.zeros((BLOCK_M,), tl.float32)
    for start in range(0, M, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        inside = (rows[:, None] < N) & (cols[None, :] < M)
        k = _tile(K + b * sk_b + h * sk_h, cols, dims, sk_n, sk_d, M, D)
        v = _tile(V + b * sv_b + h * sv_h, cols, vdims, sv_n, sv_d, M, DV)
        m_tile = _mask_tile(Mask, h, rows, cols, sm_h, sm_n, sm_c, N, M, HAS_MASK)
        s = _scores(q, k, scale, PRECISION)
        grad = tl.dot(g, tl.trans(v), input_precision=PRECISION)
        grad_z, _ = _grad_weights(s, grad, delta[:, None], m_tile, low, place, inside, Seed, bh,
                                  rows[:, None] * M + cols[None, :], threshold, HAS_MASK, CLIPPED, DROPOUT)  # fmt: skip
        grad_s = grad_z * m_tile if HAS_MASK else grad_z
        grad_q += tl.dot(grad_s.to(k.dtype), k, input_precision=PRECISION)
        if HAS_MASK:
            total += tl.sum(grad_s, axis=1)
    tl.store(GQ + bh * N * D + rows[:, None] * D + dims[None, :], grad_q, mask=inside_q)
    if HAS_MASK:
        tl.store(Total + bh * TILES + tile, tl.sum(total, axis=0))


@triton.jit
def _mask_kernel(
    Q, K, V, Mask, Low, Place, Seed, G, Delta, GM, B,
    sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d, sm_h, sm_n, sm_c,
    sg_b, sg_h, sg_n, sg_d, H, N, D, DV, scale, threshold,
    CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    """dM for one (query, key) tile of one head's mask, summed over the batch in registers."""
    row_tile, col_tile, h = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    rows = row_tile * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = col_tile * BLOCK_N + tl.arange(0, BLOCK_N)
    inside = (rows[:, None] < N) & (cols[None, :] < N)
    index = rows[:, None] * N + cols[None, :]
    m_tile = _tile(Mask + h * sm_h, rows, cols, sm_n, sm_c, N, N).to(tl.float32)
    grad_m = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for b in range(0, B):
        bh = b * H + h  # 64-bit, as h is
        sample = bh // H
        # A wide head's four whole-width tiles would not fit in registers next to the sum over samples
        q_at, k_at = Q + sample * sq_b + h * sq_h, K + sample * sk_b + h * sk_h
        g_at, v_at = G + sample * sg_b + h * sg_h, V + sample * sv_b + h * sv_h
        s = _sliced_dot(q_at, k_at, rows, cols, sq_n, sq_d, sk_n, sk_d, N, N, D, BLOCK_C, PRECISION) * scale
        grad = _sliced_dot(g_at, v_at, rows, cols, sg_n, sg_d, sv_n, sv_d, N, N, DV, BLOCK_C, PRECISION)
        delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)
        low, place = tl.load(Low + bh), tl.load(Place + bh)
        grad_z, _ = _grad_weights(s, grad, delta[:, None], m_tile, low, place, inside, Seed, bh, index, threshold,
                                  True, CLIPPED, DROPOUT)  # fmt: skip
        s = tl.where(index == place, low, s)
        grad_m += grad_z * (s - low)
    at = h * N * N + rows[:, None] * N + cols[None, :]
    tl.store(GM + at, grad_m.to(GM.dtype.element_ty), mask=inside)


#: The widest slice of a head the mask kernel multiplies at a time.
_SLICE = 64


def _block(size: int) -> int:
    return max(16, triton.next_power_of_2(size))


def _slice(d: int, dv: int) -> int:
    """The mask kernel's slice width: it divides both padded head widths (powers of two)."""
    return min(_SLICE, _block(d), _block(dv))


def _tiling(head_width: int, block) -> dict:
    """Tile sizes and warps: narrower tiles and more warps for wide heads, so that a program's
    accumulators stay in registers. ``block`` overrides the tile size (tests use small ones)."""
    wide = _block(head_width) > 64
    block = block or (32 if wide else 64)
    return dict(BLOCK_M=block, BLOCK_N=block, num_warps=8 if wide else 4, num_stages=2)


#: Square tiles, warps and pipeline stages the autotuner times on the GPU, once per shape and
#: dtype (it skips those that do not fit the device); the fixed :func:`_tiling` is among them.
#: No 128-row tiles: compiled for an H100, their programs spill registers at every head width, and
#: a wide head's do not fit its shared memory (the project's kernel resource records).
_CANDIDATES = [(32, 4, 2), (32, 8, 2), (64, 4, 2), (64, 8, 2), (64, 4, 3)]
_SMALLEST = min(block for block, _, _ in _CANDIDATES)


def _tuned(kernel, key: list[str], restored: tuple[str, ...] = ()):
    configs = [
        triton.Config({"BLOCK_M": block, "BLOCK_N": block}, num_warps=warps, num_stages=stages)
        for block, warps, stages in _CANDIDATES
    ]
    # Buffers put back after every timed run: those the kernel adds to, so that the real run adds
    # once, and per-tile sums, where another tiling's timed run leaves tiles the real one lacks.
    return triton.autotune(configs=configs, key=key, restore_value=list(restored) or None)(kernel)


# Compiled kernels only: the interpreter cannot time configurations, and tests pick their tiles.
_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
_TUNED = {
    "min": _tuned(_min_kernel, ["N", "M", "D"]),  # another tiling's minima are minima of the same scores
    "forward": _tuned(_forward_kernel, ["N", "M", "D", "DV"]),
    "key": _tuned(_key_kernel, ["N", "M", "D", "DV"]),
    "query": _tuned(_query_kernel, ["N", "M", "D", "DV"], restored=("Total",)),
    "mask": _tuned(_mask_kernel, ["N", "D", "DV"]),
}
_RAW = {name: tuner.fn for name, tuner in _TUNED.items()}


def _most_tiles(size: int, tiling: dict) -> int:
    """Tiles along ``size`` of the given tiling, or of the finest one the autotuner may pick: the
    width of a per-tile buffer."""
    return triton.cdiv(size, tiling.get("BLOCK_M", _SMALLEST))


def _launcher(block, head_width: int):
    """(kernel by name, the tiling to pass, tiles along a dimension of ``size``): autotuned on a GPU,
    else the fixed :func:`_tiling` (or ``block``)."""
    if block is None and not _INTERPRETED:
        return _TUNED, {}, lambda size, meta: triton.cdiv(size, meta["BLOCK_M"])
    tiling = _tiling(head_width, block)
    return _RAW, tiling, lambda size, meta: triton.cdiv(size, tiling["BLOCK_M"])


def _precision(q: torch.Tensor) -> str:
    if q.dtype == torch.float32 and q.is_cuda and tf32.allowed():
        return "tf32"
    return "ieee"


def _in_float32(*tensors):
    """fp16 tensors in float32: fp16 cannot hold the unnormalised weights and sums (past 65,504),
    and TF32 products keep fp16's mantissa; others as they are."""
    return [t.float() if t is not None and t.dtype == torch.float16 else t for t in tensors]


def forward(q, k, v, mask, scale: float, clipped: bool, p: float, seed: torch.Tensor, block=None):
    """The operator's outputs: O in Q's dtype; the float32 minimum (B, H, 1, 1) and where it is,
    row * N + column (B, H) int64 (both empty, in Q's dtype and int64 as the operator's other paths
    give them, without a mask); the denominators (B, H, N, 1)."""
    precision = "tf32" if q.dtype == torch.float16 and q.is_cuda else _precision(q)
    out, minimum, place, denominator = _forward(*_in_float32(q, k, v), mask, scale, clipped, p, seed, block, precision)
    if mask is None:
        minimum, place = q.new_empty(0), place.new_empty(0)
    return out.to(q.dtype), minimum, denominator, place


def backward(grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs, block=None):
    """Gradients at Q, K, V and the mask (each in its input's dtype), or None where ``needs``
    says it is not wanted."""
    precision = "tf32" if q.dtype == torch.float16 and q.is_cuda else _precision(q)
    grad_out, q32, k32, v32, out = _in_float32(grad_out, q, k, v, out)
    grads = _backward(grad_out, q32, k32, v32, mask, out, minimum, denominator, place, scale, clipped, p, seed,
                      needs, block, precision)  # fmt: skip
    return tuple(None if g is None else g.to(t.dtype) for g, t in zip(grads, (q, k, v, mask), strict=True))


def _threshold(p: float) -> int:
    return round(p * 65536)


def _strides(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.stride())


def _mask_strides(mask) -> tuple[int, int, int]:
    return (0, 0, 0) if mask is None else _strides(mask)


def _forward(q, k, v, mask, scale, clipped, p, seed, block, precision):
    batch, heads, n, d = q.shape
    cols, dv = k.shape[-2], v.shape[-1]
    stats = dict(dtype=torch.float32, device=q.device)
    kernels, tiling, tiles = _launcher(block, max(d, dv))
    common = dict(**tiling, BLOCK_D=_block(d), PRECISION=precision)
    grid = lambda meta: (batch * heads, tiles(n, meta))  # noqa: E731
    low = torch.empty(batch * heads, **stats)
    place = torch.full((batch * heads,), -1, dtype=torch.int64, device=q.device)
    if mask is not None:
        width = _most_tiles(n, tiling)
        partial = torch.full((batch * heads, width), float("inf"), **stats)
        places = torch.zeros(batch * heads, width, dtype=torch.int64, device=q.device)
        kernels["min"][grid](q, k, partial, places, *_strides(q), *_strides(k), heads, n, cols, d, scale, width,
                             **common)  # fmt: skip
        first = partial.argmin(dim=1, keepdim=True)  # of equal minima, the first tile's: the first place
        low, place = partial.gather(1, first).view(-1), places.gather(1, first).view(-1)
    out = torch.empty(batch, heads, n, dv, dtype=q.dtype, device=q.device)
    denominator = torch.empty(batch, heads, n, 1, **stats)
    kernels["forward"][grid](
        q, k, v, mask, low, place, seed.to(q.device), out, denominator,
        *_strides(q), *_strides(k), *_strides(v), *_mask_strides(mask), *_strides(out),
        heads, n, cols, d, dv, scale, _threshold(p), 1.0 / (1.0 - p),
        HAS_MASK=mask is not None, CLIPPED=clipped, DROPOUT=p > 0.0, BLOCK_DV=_block(dv), **common,
    )  # fmt: skip
    return out, low.view(batch, heads, 1, 1), place.view(batch, heads), denominator


def _backward(grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs, block,
              precision):  # fmt: skip
    batch, heads, n, d = q.shape
    cols, dv = k.shape[-2], v.shape[-1]
    has_mask = mask is not None
    seed = seed.to(q.device)
    grad_out = grad_out.float()
    delta = (grad_out * out.float()).sum(-1).div_(denominator.squeeze(-1))  # r, (B, H, N)
    g = (grad_out / (denominator * (1.0 - p))).to(v.dtype)
    low = minimum.view(-1) if has_mask else delta.new_empty(1)
    place = place.view(-1) if has_mask else torch.full((1,), -1, dtype=torch.int64, device=q.device)
    stats = dict(dtype=torch.float32, device=q.device)
    kernels, tiling, tiles = _launcher(block, max(d, dv))
    flags = dict(CLIPPED=clipped, DROPOUT=p > 0.0, PRECISION=precision, **tiling)
    widths = dict(BLOCK_D=_block(d), BLOCK_DV=_block(dv))
    strides = (*_strides(q), *_strides(k), *_strides(v), *_mask_strides(mask), *_strides(g))
    sizes = (heads, n, cols, d, dv, scale, _threshold(p))
    grad_k = torch.empty(batch, heads, cols, d, **stats)
    grad_v = torch.empty(batch, heads, cols, dv, dtype=v.dtype, device=q.device)
    kernels["key"][lambda meta: (batch * heads, tiles(cols, meta))](
        q, k, v, mask, low, place, seed, g, delta, grad_k, grad_v, *strides, *sizes,
        HAS_MASK=has_mask, **flags, **widths,
    )  # fmt: skip
    width = _most_tiles(n, tiling)  # tiles the chosen tiling lacks stay 0
    grad_q = torch.empty(batch, heads, n, d, **stats)
    total = torch.zeros(batch * heads, width, **stats)
    kernels["query"][lambda meta: (batch * heads, tiles(n, meta))](
        q, k, v, mask, low, place, seed, g, delta, grad_q, total, *strides, *sizes, width,
        HAS_MASK=has_mask, **flags, **widths,
    )  # fmt: skip
    grad_mask = None
    if has_mask:
        # The minimum's gradient, -sum dSh, goes to its recorded place: dQ[row] and dK[column]
        share = total.sum(-1).neg_()[:, None]
        row, column, every = place // cols, place % cols, torch.arange(batch * heads, device=q.device)
        grad_q.view(batch * heads, n, d)[every, row] += share * k.reshape(batch * heads, cols, d)[every, column]
        grad_k.view(batch * heads, cols, d)[every, column] += share * q.reshape(batch * heads, n, d)[every, row]
        if needs[3]:
            grad_mask = torch.empty(mask.shape, dtype=mask.dtype, device=q.device)
            kernels["mask"][lambda meta: (tiles(n, meta), tiles(n, meta), heads)](
                q, k, v, mask, low, place, seed, g, delta, grad_mask, batch, *strides,
                heads, n, d, dv, scale, _threshold(p), BLOCK_C=_slice(d, dv), **flags,
            )  # fmt: skip
    grad_q = grad_q.mul_(scale).to(q.dtype) if needs[0] else None
    grad_k = grad_k.mul_(scale).to(k.dtype) if needs[1] else None
    return grad_q, grad_k, grad_v if needs[2] else None, grad_mask
