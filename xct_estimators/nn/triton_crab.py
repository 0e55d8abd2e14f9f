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
itself, so no kernel compares its own rounding of a score with another kernel's.

One kernel computes every gradient: a program owns a tile of keys, works on transposed tiles
(keys x queries) and walks the query tiles once, summing dK and dV in registers and adding each
query tile's dQ and dM (summed over samples) atomically, so dropout's mask is redrawn once and no
B x N x N buffer is kept. A layer step multiplies 8 times (the minimum, the forward's 2, the
backward's 5) where the plain formula does 6, and a head that is not a power of two is split in
two tiles (:func:`_widths`: 192 = 128 + 64, not 256). The atomic
sums make dQ and dM vary in their last bits from run to run on a GPU (under PyTorch's deterministic
algorithms, :mod:`.crab_gpu` sends CRAB to the chunked path instead).

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
def _parts(ptr, rows, stride_r, stride_c, n_rows, width, WA: tl.constexpr, WB: tl.constexpr):
    """Rows of a head as two tiles, of widths WA and WB (powers of two; WB = 0: none), so that a
    head of 192 is 128 + 64 columns, not 256 (:func:`_widths`)."""
    a = _tile(ptr, rows, tl.arange(0, WA), stride_r, stride_c, n_rows, width)
    if WB > 0:
        b = _tile(ptr, rows, WA + tl.arange(0, WB), stride_r, stride_c, n_rows, width)
    else:
        b = a  # never read
    return a, b


@triton.jit
def _contract(xa, xb, ya, yb, WB: tl.constexpr, PRECISION: tl.constexpr):
    """X Y^T in float32, X and Y each given as its two parts (:func:`_parts`)."""
    acc = tl.dot(xa, tl.trans(ya), input_precision=PRECISION)
    if WB > 0:
        acc = tl.dot(xb, tl.trans(yb), acc, input_precision=PRECISION)
    return acc


@triton.jit
def _zeros(rows: tl.constexpr, WA: tl.constexpr, WB: tl.constexpr):
    """Float32 accumulators for the two parts of a head's rows."""
    a = tl.zeros((rows, WA), tl.float32)
    if WB > 0:
        b = tl.zeros((rows, WB), tl.float32)
    else:
        b = a  # never written
    return a, b


@triton.jit
def _write_part(ptr, rows, row_stride, n_rows, width, first, values, W: tl.constexpr, ATOMIC: tl.constexpr):
    cols = first + tl.arange(0, W)
    at = ptr + rows[:, None].to(tl.int64) * row_stride + cols[None, :]
    inside = (rows[:, None] < n_rows) & (cols[None, :] < width)
    if ATOMIC:  # relaxed: a sum needs no ordering, and acquire-release would fence every addition
        tl.atomic_add(at, values, mask=inside, sem="relaxed")
    else:
        tl.store(at, values.to(ptr.dtype.element_ty), mask=inside)


@triton.jit
def _write(ptr, rows, row_stride, n_rows, width, a, b, WA: tl.constexpr, WB: tl.constexpr, ATOMIC: tl.constexpr):
    """Stores (or, ATOMIC, adds) the two parts of rows of a contiguous head."""
    _write_part(ptr, rows, row_stride, n_rows, width, 0, a, WA, ATOMIC)
    if WB > 0:
        _write_part(ptr, rows, row_stride, n_rows, width, WA, b, WB, ATOMIC)


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
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DA: tl.constexpr, DB: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    bh, tile = tl.program_id(0).to(tl.int64), tl.program_id(1)
    b, h = bh // H, bh % H
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    qa, qb = _parts(Q + b * sq_b + h * sq_h, rows, sq_n, sq_d, N, D, DA, DB)
    low = tl.full((BLOCK_M,), float("inf"), tl.float32)
    column = tl.zeros((BLOCK_M,), tl.int32)  # where each row's minimum is: its first column
    for start in range(0, M, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        ka, kb = _parts(K + b * sk_b + h * sk_h, cols, sk_n, sk_d, M, D, DA, DB)
        s = _contract(qa, qb, ka, kb, DB, PRECISION) * scale
        s = tl.where((rows[:, None] < N) & (cols[None, :] < M), s, float("inf"))
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
    H, N, M, D, DV, scale, threshold, inv_keep,
    HAS_MASK: tl.constexpr, CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DA: tl.constexpr, DB: tl.constexpr,
    VA: tl.constexpr, VB: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    bh, tile = tl.program_id(0).to(tl.int64), tl.program_id(1)
    b, h = bh // H, bh % H
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    qa, qb = _parts(Q + b * sq_b + h * sq_h, rows, sq_n, sq_d, N, D, DA, DB)
    low, place = _low(Low, bh, HAS_MASK), _place(Place, bh, HAS_MASK)
    acc_a, acc_b = _zeros(BLOCK_M, VA, VB)
    den = tl.zeros((BLOCK_M,), tl.float32)
    for start in range(0, M, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        inside = (rows[:, None] < N) & (cols[None, :] < M)
        index = rows[:, None] * M + cols[None, :]
        ka, kb = _parts(K + b * sk_b + h * sk_h, cols, sk_n, sk_d, M, D, DA, DB)
        m_tile = _mask_tile(Mask, h, rows, cols, sm_h, sm_n, sm_c, N, M, HAS_MASK)
        s = _contract(qa, qb, ka, kb, DB, PRECISION) * scale
        z = _weights(s, m_tile, low, place, index, inside, HAS_MASK)
        den += tl.sum(tl.abs(z), axis=1)
        if CLIPPED:
            z = tl.maximum(z, 0.0)
        if DROPOUT:
            z = tl.where(_keep(Seed, bh, index, threshold), z, 0.0)
        va, vb = _parts(V + b * sv_b + h * sv_h, cols, sv_n, sv_d, M, DV, VA, VB)
        acc_a = tl.dot(z.to(va.dtype), va, acc_a, input_precision=PRECISION)
        if VB > 0:
            acc_b = tl.dot(z.to(vb.dtype), vb, acc_b, input_precision=PRECISION)
    den += _DELTA
    factor = (inv_keep / den)[:, None]
    _write(Out + bh * N * DV, rows, DV, N, DV, acc_a * factor, acc_b * factor, VA, VB, False)
    tl.store(Den + bh * N + rows, den, mask=rows < N)


@triton.jit
def _grad_weights(
    s, grad, delta, m_tile, low, place, inside, Seed, bh, index, threshold,
    HAS_MASK: tl.constexpr, CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
):  # fmt: skip
    """dZ and the dropped, clipped weights V saw, from a tile's S and G V^T (keys x queries)."""
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
def _backward_kernel(
    Q, K, V, Mask, Low, Place, Seed, G, Delta, GQ, GK, GV, GM, Total,
    sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d, sm_h, sm_n, sm_c,
    sg_b, sg_h, sg_n, sg_d, H, N, M, D, DV, scale, threshold, TILES,
    HAS_MASK: tl.constexpr, MASK_GRAD: tl.constexpr, CLIPPED: tl.constexpr, DROPOUT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DA: tl.constexpr, DB: tl.constexpr,
    VA: tl.constexpr, VB: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    """Every gradient of one tile of keys, in one walk over the query tiles: dK and dV summed in
    registers; each query tile's share of dQ and of dM (summed over samples) added atomically; the
    tile's sum of dSh (the minimum's gradient, which the caller routes to its recorded place). Tiles
    are keys x queries, so the weights and their gradient enter dK and dV's products as computed."""
    bh, tile = tl.program_id(0).to(tl.int64), tl.program_id(1)
    b, h = bh // H, bh % H
    cols = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    ka, kb = _parts(K + b * sk_b + h * sk_h, cols, sk_n, sk_d, M, D, DA, DB)
    va, vb = _parts(V + b * sv_b + h * sv_h, cols, sv_n, sv_d, M, DV, VA, VB)
    low, place = _low(Low, bh, HAS_MASK), _place(Place, bh, HAS_MASK)
    gk_a, gk_b = _zeros(BLOCK_N, DA, DB)
    gv_a, gv_b = _zeros(BLOCK_N, VA, VB)
    total = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, N, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        inside = (cols[:, None] < M) & (rows[None, :] < N)
        index = rows[None, :] * M + cols[:, None]
        qa, qb = _parts(Q + b * sq_b + h * sq_h, rows, sq_n, sq_d, N, D, DA, DB)
        ga, gb = _parts(G + b * sg_b + h * sg_h, rows, sg_n, sg_d, N, DV, VA, VB)
        delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)
        m_tile = _mask_tile(Mask, h, cols, rows, sm_h, sm_c, sm_n, M, N, HAS_MASK)  # the mask's transpose
        s = _contract(ka, kb, qa, qb, DB, PRECISION) * scale
        grad = _contract(va, vb, ga, gb, VB, PRECISION)
        grad_z, seen = _grad_weights(s, grad, delta[None, :], m_tile, low, place, inside, Seed, bh, index, threshold,
                                     HAS_MASK, CLIPPED, DROPOUT)  # fmt: skip
        gv_a = tl.dot(seen.to(ga.dtype), ga, gv_a, input_precision=PRECISION)
        if VB > 0:
            gv_b = tl.dot(seen.to(gb.dtype), gb, gv_b, input_precision=PRECISION)
        grad_s = grad_z * m_tile if HAS_MASK else grad_z
        gk_a = tl.dot(grad_s.to(qa.dtype), qa, gk_a, input_precision=PRECISION)
        if DB > 0:
            gk_b = tl.dot(grad_s.to(qb.dtype), qb, gk_b, input_precision=PRECISION)
        grad_s_t = tl.trans(grad_s).to(ka.dtype)
        gq_a = tl.dot(grad_s_t, ka, input_precision=PRECISION)
        if DB > 0:
            gq_b = tl.dot(grad_s_t, kb, input_precision=PRECISION)
        else:
            gq_b = gq_a  # never read
        _write(GQ + bh * N * D, rows, D, N, D, gq_a, gq_b, DA, DB, True)
        if HAS_MASK:
            total += tl.sum(grad_s, axis=1)
        if MASK_GRAD:  # dM = sum over samples of dZ o (S - min S)
            s = tl.where(index == place, low, s)
            at = GM + h * N * N + rows[None, :] * N + cols[:, None]
            tl.atomic_add(at, grad_z * (s - low), mask=inside, sem="relaxed")
    _write(GK + bh * M * D, cols, D, M, D, gk_a, gk_b, DA, DB, False)
    _write(GV + bh * M * DV, cols, DV, M, DV, gv_a, gv_b, VA, VB, False)
    if HAS_MASK:
        tl.store(Total + bh * TILES + tile, tl.sum(total, axis=0))


def _block(size: int) -> int:
    return max(16, triton.next_power_of_2(size))


def _widths(width: int) -> tuple[int, int]:
    """A head width as the widths of two tiles, powers of two (the second 0 where one tile is
    enough): 192 is 128 + 64, where a single power of two would pad it to 256. The padding stays
    within the next multiple of 32, except for widths 193 to 224 (padded to 256)."""
    whole = _block(width)
    if whole == width or width <= 16:
        return whole, 0
    return whole // 2, _block(width - whole // 2)


def _tiling(head_width: int, block) -> dict:
    """Tile sizes and warps: narrower tiles and more warps for wide heads, so that a program's
    accumulators stay in registers. ``block`` overrides the tile size (tests use small ones)."""
    wide = _block(head_width) > 64
    block = block or (32 if wide else 64)
    return dict(BLOCK_M=block, BLOCK_N=block, num_warps=8 if wide else 4, num_stages=2)


#: Tiles (query rows, keys), warps and pipeline stages the autotuner times on the GPU, once per
#: shape and dtype (it skips those that do not fit the device); the fixed :func:`_tiling` is among
#: them. No 128-row tiles: compiled for an H100, their programs spill registers at every head
#: width, and a wide head's do not fit its shared memory. A backward program owns a tile of keys:
#: 64 of them take Hopper's warpgroup products (64 rows at least) and halve the atomic additions to
#: dQ, with fewer registers next to 16 or 32 query rows than next to 64; 16 x 32 leaves a wide
#: head's backward the fewest spilled (the project's kernel resource records).
_CANDIDATES = [(32, 32, 4, 2), (32, 32, 8, 2), (64, 64, 4, 2), (64, 64, 8, 2), (64, 64, 4, 3), (32, 64, 8, 2),
               (16, 64, 4, 2), (16, 32, 8, 2)]  # fmt: skip
#: The finest tiles the autotuner may pick along the queries and the keys: per-tile buffers' widths.
_SMALLEST = {axis: min(c[i] for c in _CANDIDATES) for i, axis in enumerate(("BLOCK_M", "BLOCK_N"))}


def _tuned(kernel, key: list[str], restored: tuple[str, ...] = ()):
    configs = [
        triton.Config({"BLOCK_M": rows, "BLOCK_N": keys}, num_warps=warps, num_stages=stages)
        for rows, keys, warps, stages in _CANDIDATES
    ]
    # Buffers put back after every timed run: those the kernel adds to, so that the real run adds
    # once, and per-tile sums, where another tiling's timed run leaves tiles the real one lacks.
    return triton.autotune(configs=configs, key=key, restore_value=list(restored) or None)(kernel)


# Compiled kernels only: the interpreter cannot time configurations, and tests pick their tiles.
_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
#: ``XCT_TRITON_AUTOTUNE=0``: the fixed :func:`_tiling` on a GPU too, one compilation per kernel and
#: shape instead of a timed sweep (the GPU session's test subset, which must be done in a minute).
_AUTOTUNE = os.environ.get("XCT_TRITON_AUTOTUNE", "1") != "0"
_TUNED = {
    "min": _tuned(_min_kernel, ["N", "M", "D"]),  # another tiling's minima are minima of the same scores
    "forward": _tuned(_forward_kernel, ["N", "M", "D", "DV"]),
    "backward": _tuned(_backward_kernel, ["N", "M", "D", "DV"], restored=("GQ", "GM", "Total")),
    # no mask, or its gradient not wanted (a frozen backbone, gradients of the inputs only): no GM
    # buffer to put back, and an autotuner must not reach for one
    "backward_no_mask_grad": _tuned(_backward_kernel, ["N", "M", "D", "DV"], restored=("GQ", "Total")),
}
_RAW = {name: tuner.fn for name, tuner in _TUNED.items()}


def _most_tiles(size: int, tiling: dict, axis: str) -> int:
    """Tiles along ``size`` (``axis``: BLOCK_M for queries, BLOCK_N for keys) of the given tiling,
    or of the finest one the autotuner may pick: the width of a per-tile buffer."""
    return triton.cdiv(size, tiling.get(axis, _SMALLEST[axis]))


def _launcher(block, head_width: int):
    """(kernel by name, the tiling to pass, tiles of ``size`` along ``axis``): autotuned on a GPU,
    else the fixed :func:`_tiling` (or ``block``)."""
    if block is None and not _INTERPRETED and _AUTOTUNE:
        return _TUNED, {}, lambda size, meta, axis: triton.cdiv(size, meta[axis])
    tiling = _tiling(head_width, block)
    return _RAW, tiling, lambda size, meta, axis: triton.cdiv(size, tiling[axis])


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
    (da, db), (va, vb) = _widths(d), _widths(dv)
    common = dict(**tiling, DA=da, DB=db, PRECISION=precision)
    grid = lambda meta: (batch * heads, tiles(n, meta, "BLOCK_M"))  # noqa: E731
    low = torch.empty(batch * heads, **stats)
    place = torch.full((batch * heads,), -1, dtype=torch.int64, device=q.device)
    if mask is not None:
        width = _most_tiles(n, tiling, "BLOCK_M")
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
        *_strides(q), *_strides(k), *_strides(v), *_mask_strides(mask),
        heads, n, cols, d, dv, scale, _threshold(p), 1.0 / (1.0 - p),
        HAS_MASK=mask is not None, CLIPPED=clipped, DROPOUT=p > 0.0, VA=va, VB=vb, **common,
    )  # fmt: skip
    return out, low.view(batch, heads, 1, 1), place.view(batch, heads), denominator


def _backward(grad_out, q, k, v, mask, out, minimum, denominator, place, scale, clipped, p, seed, needs, block,
              precision):  # fmt: skip
    batch, heads, n, d = q.shape
    cols, dv = k.shape[-2], v.shape[-1]
    has_mask = mask is not None
    mask_grad = has_mask and needs[3]
    seed = seed.to(q.device)
    grad_out = grad_out.float()
    delta = (grad_out * out.float()).sum(-1).div_(denominator.squeeze(-1))  # r, (B, H, N)
    g = (grad_out / (denominator * (1.0 - p))).to(v.dtype)
    low = minimum.view(-1) if has_mask else delta.new_empty(1)
    place = place.view(-1) if has_mask else torch.full((1,), -1, dtype=torch.int64, device=q.device)
    stats = dict(dtype=torch.float32, device=q.device)
    kernels, tiling, tiles = _launcher(block, max(d, dv))
    (da, db), (va, vb) = _widths(d), _widths(dv)
    width = _most_tiles(cols, tiling, "BLOCK_N")  # tiles the chosen tiling lacks stay 0
    grad_q = torch.zeros(batch, heads, n, d, **stats)  # added to by every tile of keys
    grad_k = torch.empty(batch, heads, cols, d, **stats)
    grad_v = torch.empty(batch, heads, cols, dv, dtype=v.dtype, device=q.device)
    grad_mask = torch.zeros(heads, n, n, **stats) if mask_grad else None  # added to by every sample
    total = torch.zeros(batch * heads, width, **stats)
    kernel = kernels["backward" if mask_grad else "backward_no_mask_grad"]
    kernel[lambda meta: (batch * heads, tiles(cols, meta, "BLOCK_N"))](
        q, k, v, mask, low, place, seed, g, delta, grad_q, grad_k, grad_v, grad_mask, total,
        *_strides(q), *_strides(k), *_strides(v), *_mask_strides(mask), *_strides(g),
        heads, n, cols, d, dv, scale, _threshold(p), width,
        HAS_MASK=has_mask, MASK_GRAD=mask_grad, CLIPPED=clipped, DROPOUT=p > 0.0, PRECISION=precision,
        DA=da, DB=db, VA=va, VB=vb, **tiling,
    )  # fmt: skip
    if has_mask:
        # The minimum's gradient, -sum dSh, goes to its recorded place: dQ[row] and dK[column]
        share = total.sum(-1).neg_()[:, None]
        row, column, every = place // cols, place % cols, torch.arange(batch * heads, device=q.device)
        grad_q.view(batch * heads, n, d)[every, row] += share * k.reshape(batch * heads, cols, d)[every, column]
        grad_k.view(batch * heads, cols, d)[every, column] += share * q.reshape(batch * heads, n, d)[every, row]
    grad_q = grad_q.mul_(scale).to(q.dtype) if needs[0] else None
    grad_k = grad_k.mul_(scale).to(k.dtype) if needs[1] else None
    grad_mask = grad_mask.to(mask.dtype) if mask_grad else None
    return grad_q, grad_k, grad_v if needs[2] else None, grad_mask
