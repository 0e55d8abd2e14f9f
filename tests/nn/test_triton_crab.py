"""CRAB's Triton kernels (the CUDA implementation of ``xct::crab_forward`` / ``crab_backward``)
against the plain formula. Without a GPU they run on the CPU under Triton's interpreter
(``TRITON_INTERPRET=1``, set by conftest.py before Triton is first imported)."""

import os

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (pip install -e '.[dev]' brings it)")

from xct_estimators.nn import triton_crab  # noqa: E402
from xct_estimators.nn.attention import normalise  # noqa: E402
from xct_estimators.nn.fused import keep_masks  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK = 16  # tiles smaller than the shapes below, so every kernel walks several and a ragged last one


def plain(q, k, v, mask, scale, clipped, p, seed):
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:  # the minimum's gradient at its first place, where the kernels route it (torch.min's)
        scores = mask * (scores - scores.flatten(-2).min(dim=-1).values[..., None, None])
    weights = normalise(scores, "absact_clipped" if clipped else "absact")
    if p > 0:
        weights = weights * keep_masks(weights.detach(), p, seed) / (1 - p)
    return weights @ v


def _inputs(b, h, n, m, d, use_mask, dtype=torch.float32, tie=False, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, rows, d, generator=generator) for rows in (n, m, m))
    if tie:  # the smallest score four times: two equal queries against two equal keys
        k[:, :, 0] = -3.0 * q[:, :, 0]
        k[:, :, 1], q[:, :, 1] = k[:, :, 0], q[:, :, 0]
    mask = torch.randn(h, n, n, generator=generator) * 0.5 if use_mask else None
    return [None if t is None else t.to(DEVICE, dtype) for t in (q, k, v, mask)]


def _kernel_grads(inputs, upstream, scale, clipped, p, seed, block=BLOCK):
    q, k, v, mask = inputs
    seed_tensor = torch.tensor([seed])
    outputs = triton_crab.forward(q, k, v, mask, scale, clipped, p, seed_tensor, block=block)
    needs = [True, True, True, mask is not None]
    grads = triton_crab.backward(upstream, q, k, v, mask, *outputs, scale, clipped, p, seed_tensor, needs, block=block)
    out = outputs[0]
    return out, [g for g in grads if g is not None]


def _plain_grads(inputs, upstream, scale, clipped, p, seed):
    leaves = [t.detach().double().requires_grad_() for t in inputs if t is not None]
    q, k, v, *mask = leaves
    out = plain(q, k, v, mask[0] if mask else None, scale, clipped, p, seed)
    return out, torch.autograd.grad(out, leaves, upstream.double())


def _assert_close(actual, expected, tolerance, name):
    """Relative to the reference's largest entry, so one tolerance fits every gradient."""
    size = expected.abs().max().clamp_min(1e-12)
    torch.testing.assert_close(actual.double() / size, expected / size, rtol=tolerance, atol=tolerance, msg=name)


@pytest.mark.parametrize(
    "shape,use_mask,clipped,p,tie",
    [
        ((2, 3, 40, 40, 8), True, False, 0.0, False),
        ((2, 3, 40, 40, 8), True, False, 0.3, True),
        ((3, 2, 37, 37, 20), True, True, 0.3, False),  # N and d off the block
        ((1, 2, 33, 33, 16), True, True, 0.0, True),
        ((2, 3, 40, 24, 8), False, False, 0.3, False),  # DeCoP: rectangular N x k, no mask
        ((2, 2, 50, 17, 12), False, True, 0.0, False),
    ],
)
def test_float32_outputs_and_gradients_equal_the_plain_formula(shape, use_mask, clipped, p, tie):
    inputs = _inputs(*shape, use_mask, tie=tie)
    b, h, n, _, d = shape
    upstream = torch.randn(b, h, n, d, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    args = (0.5, clipped, p, 1234)
    out, grads = _kernel_grads(inputs, upstream, *args)
    ref_out, ref_grads = _plain_grads(inputs, upstream, *args)
    _assert_close(out, ref_out, 1e-5, "output")
    assert len(grads) == len(ref_grads) == (4 if use_mask else 3)
    for name, grad, ref in zip("qkvm", grads, ref_grads, strict=False):
        _assert_close(grad, ref, 1e-5, f"gradient of {name}")


def test_the_default_tiling_of_a_wide_head():
    """The Weather imputation preset's head (one head of width 192, attention dropout 0.8) with the
    tile sizes a GPU run uses, not the tests' small ones. The backward kernel computes the minimum's score
    as K Q^T, which can round unlike the Q K^T it was found in (it does under the interpreter on
    AVX-512 CPUs): the recorded place keeps AbsAct's sign there."""
    assert triton_crab._tiling(192, None)["BLOCK_M"] == 32
    inputs = _inputs(2, 1, 70, 70, 192, True, tie=True)
    upstream = torch.randn(2, 1, 70, 192, generator=torch.Generator().manual_seed(6)).to(DEVICE)
    out, grads = _kernel_grads(inputs, upstream, 1.0, False, 0.8, 5, block=None)
    ref_out, ref_grads = _plain_grads(inputs, upstream, 1.0, False, 0.8, 5)
    _assert_close(out, ref_out, 1e-5, "output")
    for name, grad, ref in zip("qkvm", grads, ref_grads, strict=True):
        _assert_close(grad, ref, 1e-5, f"gradient of {name}")


def test_the_minimum_gradient_goes_to_its_first_place_among_ties():
    """Four arg-min scores per (sample, head): all of the minimum's gradient goes to the first (as
    torch.min's does; the CPU operator splits it as amin does), found where the minimum was."""
    inputs = _inputs(2, 2, 20, 20, 8, True, tie=True)
    q, k = inputs[:2]
    scores = q @ k.transpose(-2, -1)
    low = scores.amin(dim=(-2, -1), keepdim=True)
    assert ((scores == low).sum(dim=(-2, -1)) == 4).all()
    upstream = torch.randn(2, 2, 20, 8, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    _, grads = _kernel_grads(inputs, upstream, 1.0, False, 0.0, 0)
    _, ref_grads = _plain_grads(inputs, upstream, 1.0, False, 0.0, 0)
    for name, grad, ref in zip("qk", grads, ref_grads, strict=False):
        _assert_close(grad, ref, 1e-5, f"gradient of {name}")


@pytest.mark.parametrize("use_mask", [True, False])
def test_dropout_keeps_the_cpu_kernels_entries(use_mask):
    """With V the identity, O = K o Z / (D (1 - p)): its zeros are the dropped entries, which
    must be the CPU kernel's (fused.keep_masks) for the same seed."""
    b, h, n, m = 3, 2, 36, 36 if use_mask else 20
    q, k, _, mask = _inputs(b, h, n, m, 8, use_mask)
    identity = torch.eye(m, device=DEVICE).expand(b, h, m, m)
    seed = 2**40 + 17
    out, *_ = triton_crab.forward(q, k, identity, mask, 1.0, False, 0.4, torch.tensor([seed]), block=BLOCK)
    expected = keep_masks(out.cpu(), 0.4, seed).bool()
    assert torch.equal(out.cpu() != 0, expected)
    assert 0.5 < expected.float().mean() < 0.7


INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@pytest.mark.parametrize(
    "dtype",
    [
        pytest.param(
            torch.bfloat16,
            marks=pytest.mark.skipif(INTERPRETED, reason="Triton's interpreter multiplies bfloat16 as raw bits"),
        ),
        torch.float16,
    ],
)
def test_half_inputs_accumulate_in_float32(dtype):
    """bf16/fp16 Q, K, V with a float32 mask (what autocast hands over): float32 statistics,
    outputs and gradients in each input's dtype, close to the float32 result."""
    inputs = _inputs(2, 2, 40, 40, 16, True, seed=5)
    q, k, v, mask = inputs
    low = [t.to(dtype) for t in (q, k, v)] + [mask]
    upstream = torch.randn(2, 2, 40, 16, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    out, grads = _kernel_grads(low, upstream.to(dtype), 1.0, False, 0.2, 9)
    assert out.dtype == dtype and [g.dtype for g in grads] == [dtype, dtype, dtype, torch.float32]
    ref_out, ref_grads = _plain_grads(low, upstream.to(dtype), 1.0, False, 0.2, 9)
    _assert_close(out, ref_out, 3e-2, "output")
    for name, grad, ref in zip("qkvm", grads, ref_grads, strict=True):
        _assert_close(grad, ref, 5e-2, f"gradient of {name}")


@pytest.mark.parametrize("use_mask", [True, False])
def test_the_cuda_registration_passes_the_operator_arguments_through(use_mask, monkeypatch):
    """The functions registered as the operators' CUDA kernels, run here on the interpreter: the
    outputs and gradients of the CPU implementation, in the operators' formats (an empty minimum
    and place without a mask, empty tensors for gradients not wanted)."""
    from xct_estimators.nn import crab_gpu, ops

    monkeypatch.setattr(crab_gpu, "usable", lambda q: True)
    q, k, v, mask = _inputs(2, 2, 40, 40 if use_mask else 24, 8, use_mask)
    seed = torch.tensor([11])
    settings = (0.5, False, 0.3, seed)
    got, want = ops._forward_cuda(q, k, v, mask, *settings), ops._forward_chunked(q, k, v, mask, *settings)
    assert [t.shape for t in got] == [t.shape for t in want] and (got[1].numel() == 0) == (not use_mask)
    for a, b in zip(got[:3], want[:3], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    if use_mask:  # where the minimum is, recorded by the kernel that found it (the CPU path finds it again)
        assert torch.equal(got[3], (q @ k.transpose(-2, -1)).flatten(-2).argmin(-1))
    upstream = torch.randn(2, 2, 40, 8, generator=torch.Generator().manual_seed(8)).to(DEVICE)
    needs = [True, False, True, use_mask]
    grads = ops._backward_cuda(upstream, q, k, v, mask, *got, *settings, needs)
    expected = ops._backward_chunked(upstream, q, k, v, mask, *want, *settings, needs)
    assert [g.numel() == 0 for g in grads] == [not n for n in needs]
    for a, b in zip(grads, expected, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


_COMPILE_FOR_GPU = """
import sys
from benchmarks.measure.kernel_build import compile_kernels
dtype, width = sys.argv[1], int(sys.argv[2])
masked = dtype == "fp32"  # both branches of every switch between the two calls
builds = compile_kernels(dtype, width, (32, 32, 8, 2), masked=masked, clipped=masked, dropout=not masked)
print(" ".join(f"{b.kernel}:{b.ordered_atomics}" for b in builds))
"""


def _compile_for_gpu(dtype: str, head_width: int) -> dict[str, int]:
    """Acquire-release atomics in each kernel's PTX, compiled for sm_90 in a process of its own
    (not interpreted)."""
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _COMPILE_FOR_GPU, dtype, str(head_width)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return {name: int(count) for name, count in (part.split(":") for part in done.stdout.split())}


@pytest.mark.parametrize("dtype,head_width", [("fp32", 128), ("bf16", 192)])
def test_kernels_compile_for_a_gpu_without_one(dtype, head_width):
    """The interpreter accepts what the compiler refuses (a global that is not constexpr, for
    one), so the kernels are also compiled ahead of time for an sm_90 target, no GPU needed: a head
    of one tile, and the Weather preset's head of 192, in two (128 + 64). The backward's sums into dQ
    and dM are relaxed reductions: Triton's default atomics order memory at every addition."""
    assert _compile_for_gpu(dtype, head_width) == {"min": 0, "forward": 0, "backward": 0}


def test_a_head_is_padded_to_at_most_the_next_multiple_of_32():
    """The two tiles of a head (:func:`triton_crab._widths`) cover it, each a power of two of at
    least 16 (``tl.dot``'s smallest), with no more padding than the next multiple of 32 (widths a
    head of d_model / n_heads takes up to 192: a single power of two would give 256 for 160)."""
    for width in range(1, 193):
        first, second = triton_crab._widths(width)
        for tile in (first, second) if second else (first,):
            assert tile >= 16 and tile & (tile - 1) == 0, (width, tile)
        assert width <= first + second <= max(32, -(-width // 32) * 32), width


@pytest.mark.parametrize("head_width", [64, 192])
def test_a_training_step_multiplies_at_most_1_4_times_the_useful_products(head_width, monkeypatch):
    """Every product the kernels execute, counted where the interpreter multiplies, over a forward
    and a backward pass with a mask at the default tiling, against the plain formula's useful ones
    (Q K^T and Z V forward; dW, dV, dQ and dK backward). The kernels add the minimum's pass and
    recompute the scores and G V^T once, FlashAttention-2's count: 8 products where the formula has
    6, none of them over columns past the head (192 = 128 + 64)."""
    if not INTERPRETED:
        pytest.skip("counts the products where Triton's interpreter executes them")
    from triton.runtime import interpreter

    executed = []
    multiply = interpreter.InterpreterBuilder.create_dot

    def counting(self, a, b, *args):
        (rows, inner), cols = a.data.shape[-2:], b.data.shape[-1]
        executed.append(2 * rows * inner * cols)
        return multiply(self, a, b, *args)

    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", counting)
    n = 128  # a whole number of tiles at either default tiling
    inputs = _inputs(1, 1, n, n, head_width, True)
    upstream = torch.randn(1, 1, n, head_width, generator=torch.Generator().manual_seed(4)).to(DEVICE)
    _kernel_grads(inputs, upstream, 1.0, False, 0.1, 3, block=None)
    useful = 6 * 2 * n * n * head_width
    assert sum(executed) <= 1.4 * useful, f"{sum(executed) / useful:.2f}x the useful products"


def test_the_autotuned_launch_equals_the_fixed_tiling(monkeypatch):
    """On a GPU the autotuner times several tilings on the real buffers before the real run: what a
    timed run adds (dQ and dM, atomically) or leaves in tiles the chosen tiling lacks must not reach
    the result. Here two tilings are timed, each run twice, and the one with fewer key tiles (16
    query rows by 32 keys) wins."""
    if torch.cuda.is_available():
        pytest.skip("checks the autotuner's bookkeeping under the interpreter; a GPU times for real")
    import triton

    monkeypatch.setattr(triton_crab, "_INTERPRETED", False)  # the tuned launch; the kernels stay interpreted
    monkeypatch.setattr(triton_crab, "_SMALLEST", {"BLOCK_M": BLOCK, "BLOCK_N": BLOCK})
    timed = []

    def fake_bench(run, quantiles=None):
        run(), run()
        timed.append(run)
        return [1.0 + len(timed) % 2] * 3  # of each pair, the second tiling (32: fewer tiles) wins

    for tuner in triton_crab._TUNED.values():
        tilings = [triton.Config({"BLOCK_M": BLOCK, "BLOCK_N": b}, num_warps=4, num_stages=2) for b in (BLOCK, 32)]
        monkeypatch.setattr(tuner, "configs", tilings)
        monkeypatch.setattr(tuner, "cache", {})
        monkeypatch.setitem(tuner.__dict__, "do_bench", fake_bench)
    inputs = _inputs(2, 2, 40, 40, 16, True, tie=True, seed=3)
    upstream = torch.randn(2, 2, 40, 16)
    fixed_out, fixed_grads = _kernel_grads(inputs, upstream, 0.5, False, 0.3, 9)
    tuned_out, tuned_grads = _kernel_grads(inputs, upstream, 0.5, False, 0.3, 9, block=None)
    assert len(timed) == 2 * 3, "each of the three kernels timed both tilings"
    names = ("output", "dQ", "dK", "dV", "dM")
    for name, fixed, tuned in zip(names, [fixed_out, *fixed_grads], [tuned_out, *tuned_grads], strict=True):
        _assert_close(tuned, fixed.double(), 1e-5, name)  # other tiles sum in another order


@pytest.mark.parametrize("use_mask", [True, False])
@pytest.mark.parametrize("needs", [(True, True, True, True), (True, True, True, False), (False, False, True, False),
                                   (True, False, False, True), (False, True, False, False)])  # fmt: skip
def test_the_autotuned_launch_takes_every_call_pattern(use_mask, needs, monkeypatch):
    """With and without a mask, whatever gradients are wanted (a frozen mask, gradients of the
    inputs only): the autotuner's timed runs put back only buffers the call has (a missing one
    crashed on a GPU), and the gradients equal the fixed tiling's."""
    if torch.cuda.is_available():
        pytest.skip("checks the autotuner's bookkeeping under the interpreter; a GPU times for real")
    import triton

    monkeypatch.setattr(triton_crab, "_INTERPRETED", False)
    monkeypatch.setattr(triton_crab, "_SMALLEST", {"BLOCK_M": BLOCK, "BLOCK_N": BLOCK})
    for tuner in triton_crab._TUNED.values():
        tiling = [triton.Config({"BLOCK_M": BLOCK, "BLOCK_N": 32}, num_warps=4, num_stages=2)] * 2  # two timed runs
        monkeypatch.setattr(tuner, "configs", tiling)
        monkeypatch.setattr(tuner, "cache", {})
        monkeypatch.setitem(tuner.__dict__, "do_bench", lambda run, quantiles=None: (run(), [1.0] * 3)[1])
        # the hooks as Triton 3.6 (a GPU's) has them: every restored buffer cloned, None or not
        copies = {}
        monkeypatch.setattr(tuner, "pre_hook", lambda kwargs, reset_only=False, t=tuner, c=copies: reset_only or
                            c.update({name: kwargs[name].clone() for name in t.restore_value}))  # fmt: skip
        monkeypatch.setattr(tuner, "post_hook", lambda kwargs, exception, c=copies: [
            kwargs[name].copy_(value) for name, value in c.items()] and c.clear())  # fmt: skip
    q, k, v, mask = _inputs(1, 2, 40, 40, 16, use_mask, seed=5)
    needs = (*needs[:3], needs[3] and use_mask)
    upstream, seed = torch.randn(1, 2, 40, 16), torch.tensor([3])
    outputs = triton_crab.forward(q, k, v, mask, 0.5, False, 0.2, seed)
    tuned = triton_crab.backward(upstream, q, k, v, mask, *outputs, 0.5, False, 0.2, seed, needs)
    fixed = triton_crab.backward(upstream, q, k, v, mask, *outputs, 0.5, False, 0.2, seed, needs, block=32)
    for name, a, b, wanted in zip("qkvm", tuned, fixed, needs, strict=True):
        assert (a is not None) == wanted and (b is not None) == wanted, name
        if wanted:
            _assert_close(a, b.double(), 1e-5, f"gradient of {name}")


def test_fp16_inputs_whose_weights_pass_fp16s_range_give_finite_float64_results():
    """Unnormalised weights past 65,504 (a large mask on large scores) would be infinite in fp16:
    the kernels compute fp16 inputs in float32, and return fp16."""
    q, k, v, mask = _inputs(1, 2, 24, 24, 8, True, seed=3)
    q, k = q * 20, k * 20  # scores of a few thousand, times a mask of about 50
    mask = mask * 100
    assert (mask * ((q @ k.transpose(-2, -1)) - (q @ k.transpose(-2, -1)).amin())).abs().max() > 65504
    half = [t.half() for t in (q, k, v)] + [mask]
    upstream = torch.randn(1, 2, 24, 8, generator=torch.Generator().manual_seed(4)).to(DEVICE).half()
    out, grads = _kernel_grads(half, upstream, 1.0, False, 0.0, 0)
    ref_out, ref_grads = _plain_grads(half, upstream, 1.0, False, 0.0, 0)
    assert out.dtype == torch.float16 and [g.dtype for g in grads] == [torch.float16] * 3 + [torch.float32]
    _assert_close(out, ref_out, 2e-3, "output")
    for name, grad, ref in zip("qkvm", grads, ref_grads, strict=True):
        assert torch.isfinite(grad).all(), name
        _assert_close(grad, ref, 2e-2, f"gradient of {name}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("use_mask", [True, False])
def test_the_operators_fake_kernels_give_the_kernels_dtypes_and_shapes(dtype, use_mask):
    """What torch.compile plans with (the registered fake) is what the Triton kernels return."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    q, k, v, mask = [None if t is None else t.to(dtype) for t in _inputs(2, 2, 20, 20 if use_mask else 12, 8, use_mask)]
    mask = None if mask is None else mask.float()
    seed = torch.tensor([0])
    real = triton_crab.forward(q, k, v, mask, 1.0, False, 0.0, seed, block=BLOCK)
    upstream = torch.ones_like(real[0])
    needs = [True, True, True, use_mask]
    real_grads = triton_crab.backward(upstream, q, k, v, mask, *real, 1.0, False, 0.0, seed, needs, block=BLOCK)
    with FakeTensorMode(allow_non_fake_inputs=True):
        fake = torch.ops.xct.crab_forward(q, k, v, mask, 1.0, False, 0.0, seed)
        fake_grads = torch.ops.xct.crab_backward(upstream, q, k, v, mask, *fake, 1.0, False, 0.0, seed, needs)
    for name, ours, planned in zip(["out", "minimum", "denominator", "place", "dq", "dk", "dv", "dmask"],
                                   [*real, *real_grads], [*fake, *fake_grads], strict=True):  # fmt: skip
        if ours is None:  # a gradient not wanted: the operator returns an empty tensor there
            assert planned.numel() == 0, name
            continue
        assert (ours.dtype, tuple(ours.shape)) == (planned.dtype, tuple(planned.shape)), name


def test_the_minimum_found_on_other_tiles_still_gives_the_float64_gradients():
    """The forward's kernels (the minimum's among them) on tiles of 16, the backward's on tiles of
    32: the minimum's place travels with it, so no kernel has to find it again on its own tiles."""
    inputs = _inputs(2, 2, 40, 40, 8, True, tie=True, seed=5)
    upstream = torch.randn(2, 2, 40, 8, generator=torch.Generator().manual_seed(9)).to(DEVICE)
    q, k, v, mask = inputs
    seed = torch.tensor([3])
    outputs = triton_crab.forward(q, k, v, mask, 0.5, False, 0.3, seed, block=16)
    needs = [True, True, True, True]
    grads = triton_crab.backward(upstream, q, k, v, mask, *outputs, 0.5, False, 0.3, seed, needs, block=32)
    _, ref_grads = _plain_grads(inputs, upstream, 0.5, False, 0.3, 3)
    for name, grad, ref in zip("qkvm", grads, ref_grads, strict=True):
        _assert_close(grad, ref, 1e-5, f"gradient of {name}")


def test_the_gpu_session_s_tests_take_the_fixed_tiling_on_a_gpu(monkeypatch):
    """``XCT_TRITON_AUTOTUNE=0`` (the GPU session's test subset): the fixed tiling, no timed sweep."""
    monkeypatch.setattr(triton_crab, "_INTERPRETED", False)  # as on a GPU
    assert triton_crab._launcher(None, 32)[0] is triton_crab._TUNED
    monkeypatch.setattr(triton_crab, "_AUTOTUNE", False)
    kernels, tiling, _ = triton_crab._launcher(None, 32)
    assert kernels is triton_crab._RAW and tiling == triton_crab._tiling(32, None)
