"""The fused CRAB function against plain autograd on the unfused formula, on both of its
paths: the C++ kernel and the PyTorch operations that run where the kernel cannot be built."""

import pytest
import torch

from xct_estimators.nn import crab_kernel, memory
from xct_estimators.nn import fused as fused_module
from xct_estimators.nn.absact import FUSED_ACTIVATIONS
from xct_estimators.nn.attention import normalise
from xct_estimators.nn.fused import dropout_keep, keep_masks
from xct_estimators.nn.ops import fused_crab


def unfused(q, k, v, mask, scale, activation, p, seed):
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = mask * (scores - scores.amin(dim=(-2, -1), keepdim=True))
    weights = normalise(scores, activation)
    if p > 0:
        weights = weights * dropout_keep(weights.detach(), p, seed) / (1 - p)
    return weights @ v


@pytest.fixture(params=["kernel", "ops"])
def path(request, monkeypatch):
    """Runs a test on the C++ kernel (skipped, with the reason, where it cannot be built) and on
    the PyTorch operations."""
    if request.param == "kernel":
        if crab_kernel.load() is None:
            pytest.skip(f"the CRAB kernel is unavailable here: {crab_kernel.unavailable_reason()}")
        assert fused_module._kernel_for(torch.zeros(1)) is not None
    else:
        monkeypatch.setattr(fused_module, "_kernel_for", lambda q: None)
    return request.param


def _inputs(dtype, b=2, h=2, n=12, d=4, seed=0, tie=False):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, d, generator=generator, dtype=dtype) for _ in range(3))
    if tie:  # two equal keys: the minimum score appears twice in a row
        k[:, :, 1] = k[:, :, 0]
    mask = torch.randn(h, n, n, generator=generator, dtype=dtype) * 0.5
    return [t.requires_grad_() for t in (q, k, v, mask)]


def _grads(fn, inputs, use_mask, upstream):
    q, k, v, mask = inputs
    out = fn(q, k, v, mask if use_mask else None)
    wanted = [q, k, v] + ([mask] if use_mask else [])
    return out, torch.autograd.grad(out, wanted, upstream)


@pytest.mark.parametrize("activation", ["absact", "absact_clipped"])
@pytest.mark.parametrize("use_mask", [True, False])
@pytest.mark.parametrize("p", [0.0, 0.3])
@pytest.mark.parametrize("scale", [1.0, 0.5])
@pytest.mark.parametrize("tie", [False, True])
def test_float64_gradients_equal_autograd(activation, use_mask, p, scale, tie, path):
    inputs = _inputs(torch.float64, tie=tie)
    upstream = torch.randn(2, 2, 12, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    args = (scale, activation, p, 1234)
    out, grads = _grads(lambda *t: fused_crab(*t, *args), inputs, use_mask, upstream)
    ref_out, ref_grads = _grads(lambda *t: unfused(*t, *args), inputs, use_mask, upstream)
    torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)
    assert len(grads) == len(ref_grads) == (4 if use_mask else 3)
    for name, grad, ref in zip("qkvm", grads, ref_grads, strict=False):
        torch.testing.assert_close(grad, ref, rtol=1e-10, atol=1e-12, msg=f"gradient of {name}")


def test_float32_preset_size_gradients_equal_autograd(path):
    """The ETTh1 imputation layer's shapes: 896 tokens, batch 4, one head of width 64."""
    inputs = _inputs(torch.float32, b=4, h=1, n=896, d=64, seed=3)
    upstream = torch.randn(4, 1, 896, 64, generator=torch.Generator().manual_seed(4))
    args = (1.0, "absact", 0.5, 99)
    out, grads = _grads(lambda *t: fused_crab(*t, *args), inputs, True, upstream)
    ref_out, ref_grads = _grads(lambda *t: unfused(*t, *args), inputs, True, upstream)
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
    for name, grad, ref in zip("qkvm", grads, ref_grads, strict=True):
        scale = ref.abs().max()
        torch.testing.assert_close(grad / scale, ref / scale, rtol=1e-5, atol=1e-5, msg=f"gradient of {name}")


def test_dropout_mask_comes_back_from_its_seed():
    like = torch.empty(4, 2, 100, 100)  # 80 000 entries: the shares below are within 0.01 to 5 sigma
    first, again, other = dropout_keep(like, 0.4, 7), dropout_keep(like, 0.4, 7), dropout_keep(like, 0.4, 8)
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert first.dtype == torch.bool and abs(float((~first).float().mean()) - 0.4) < 0.01
    # every matrix gets its own draw, and any chunk of the batch can be drawn on its own
    assert not torch.equal(first[0, 0], first[0, 1]) and not torch.equal(first[0, 0], first[1, 0])
    chunk = keep_masks(like[1:3, 1:2], 0.4, 7, first_sample=1, first_head=1, all_heads=2)
    assert torch.equal(chunk.bool(), first[1:3, 1:2])
    # neighbouring entries are independent: P(both kept) = 0.6^2
    both = (first[..., 1:] & first[..., :-1]).float().mean()
    assert abs(float(both) - 0.36) < 0.01


def test_dropout_hash_matches_a_plain_python_rebuild():
    """keep_masks' tensor arithmetic (int32, wrapped products, logical shifts) against the
    hash written out on Python integers."""

    def mix(x):
        x ^= x >> 16
        x = (x * 0x7FEB352D) % 2**32
        x ^= x >> 15
        x = (x * 0x846CA68B) % 2**32
        return x ^ (x >> 16)

    seed, n, p = 2**40 + 12345, 5, 0.3
    mask = keep_masks(torch.empty(2, 3, n, n, dtype=torch.float64), p, seed)
    base = mix((seed % 2**32) ^ mix(seed >> 32))
    for b in range(2):
        for h in range(3):
            key = mix(base ^ (b * 3 + h))
            for i in range(n):
                for j in range(n):
                    top = mix((key + (i * n + j) * 0x9E3779B9) % 2**32) >> 16
                    assert mask[b, h, i, j] == float(top >= round(p * 65536))


def test_refuses_softmax():
    q = torch.randn(1, 1, 4, 2)
    with pytest.raises(ValueError, match="fused CRAB supports"):
        fused_crab(q, q, q, None, activation="softmax")


@pytest.mark.parametrize(
    "switches",
    [
        {},
        {"activation": "absact_clipped"},
        {"use_mask": False},
        {"mixing": "time"},
        {"mixing": "channel"},
        {"decop_k": 4},
        {"decop_k": 4, "decop_variant": "authors"},
        {"decop_k": 4, "activation": "absact_clipped"},
    ],  # fmt: skip
)
def test_network_gradients_equal_the_plain_path(switches, path):
    """Every ablation variant that takes the fused path: same outputs and parameter gradients as
    ``fused_attention=False`` (float64, no dropout, so both draw nothing at random)."""
    from xct_estimators.nn import XCTFormerConfig, XCTFormerNet

    common = dict(seq_len=48, n_channels=3, out_len=12, patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16,
                  e_layers=2, dropout=0.0, fc_dropout=0.0, attn_dropout=0.0, **switches)  # fmt: skip
    torch.manual_seed(0)
    fused = XCTFormerNet(XCTFormerConfig(**common, fused_attention=True)).double()
    plain = XCTFormerNet(XCTFormerConfig(**common, fused_attention=False)).double()
    plain.load_state_dict(fused.state_dict())
    assert fused.encoder.layers[0].attention.fused and not plain.encoder.layers[0].attention.fused
    x = torch.randn(4, 48, 3, dtype=torch.float64)
    outs = []
    for net in (fused, plain):
        out = net(x)
        out.square().mean().backward()
        outs.append(out)
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-10, atol=1e-12)
    for (name, a), (_, b) in zip(fused.named_parameters(), plain.named_parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-9, atol=1e-12, msg=name)


def test_softmax_takes_the_plain_path_and_autocast_the_fused_one(monkeypatch):
    from xct_estimators.nn import ops
    from xct_estimators.nn.attention import CRABAttention

    assert not CRABAttention(8, 1, 10, activation="softmax", fused=True).fused
    torch.manual_seed(0)
    layer = CRABAttention(8, 1, 10, fused=True)
    x = torch.randn(2, 10, 8)
    calls = []
    monkeypatch.setattr(ops, "crab", lambda *a, f=ops.crab: calls.append(a[0].dtype) or f(*a))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layer(x)
    assert calls == [torch.bfloat16] and out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert layer.mask.grad.dtype == torch.float32 and torch.isfinite(layer.mask.grad).all()
    layer.fused = False
    with torch.autocast("cpu", dtype=torch.bfloat16):
        plain = layer(x)  # the plain path normalises in float32 too: the two agree to bf16's resolution
    torch.testing.assert_close(out.float(), plain.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("chunk", [144, 288, 576, 1152])
@pytest.mark.parametrize("tie", [False, True])
def test_chunked_passes_give_the_same_gradients(chunk, tie, path):
    """Chunks of one (sample, head) matrix, of a head group, of one sample, and of two samples
    with a shorter last chunk (5 samples, 4 heads, 12 x 12 scores): the same outputs and gradients,
    and the same dropout masks as one draw for the whole batch."""
    sizes = [(s.stop - s.start, g.stop - g.start) for s, g in fused_module._chunks(5, 4, 12 * 12, chunk)]
    assert sizes == {144: [(1, 1)] * 20, 288: [(1, 2)] * 10, 576: [(1, 4)] * 5, 1152: [(2, 4), (2, 4), (1, 4)]}[chunk]
    inputs = _inputs(torch.float64, b=5, h=4, tie=tie)
    upstream = torch.randn(5, 4, 12, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for activation in FUSED_ACTIVATIONS:
        args = (0.5, activation, 0.3, 5)
        with memory.using_chunk_scores(cpu=chunk):
            out, grads = _grads(lambda *t, a=args: fused_crab(*t, *a), inputs, True, upstream)
        ref_out, ref_grads = _grads(lambda *t, a=args: unfused(*t, *a), inputs, True, upstream)
        torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)
        for name, grad, ref in zip("qkvm", grads, ref_grads, strict=True):
            torch.testing.assert_close(grad, ref, rtol=1e-10, atol=1e-12, msg=f"gradient of {name}")


@pytest.mark.parametrize("activation", FUSED_ACTIVATIONS)
@pytest.mark.parametrize("p", [0.0, 0.4])
def test_rectangular_scores_without_a_mask(activation, p, path):
    """DeCoP's N x k compressed attention: 12 queries against 5 compressed keys."""
    generator = torch.Generator().manual_seed(2)
    q = torch.randn(3, 2, 12, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    k, v = (torch.randn(3, 2, 5, 4, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(2))
    upstream = torch.randn(3, 2, 12, 4, generator=generator, dtype=torch.float64)
    args = (0.5, activation, p, 11)
    out = fused_crab(q, k, v, None, *args)
    ref = unfused(q, k, v, None, *args)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    grads = torch.autograd.grad(out, (q, k, v), upstream)
    ref_grads = torch.autograd.grad(ref, (q, k, v), upstream)
    for name, grad, expected in zip("qkv", grads, ref_grads, strict=True):
        torch.testing.assert_close(grad, expected, rtol=1e-10, atol=1e-12, msg=f"gradient of {name}")


def test_a_mask_needs_square_scores():
    q, k = torch.randn(1, 1, 6, 2), torch.randn(1, 1, 4, 2)
    with pytest.raises(ValueError, match="mask needs N x N scores"):
        fused_crab(q, k, k, torch.randn(1, 6, 6))


def test_the_default_path_is_plain_only_in_a_compiled_gpu_run_whose_weights_fit(monkeypatch):
    from xct_estimators.nn import XCTFormerConfig, XCTFormerNet, attention

    config = XCTFormerConfig(seq_len=48, n_channels=3, out_len=12, patch_len=8, stride=4, d_model=8, n_heads=2,
                             d_ff=16, e_layers=2)  # fmt: skip
    layer = XCTFormerNet(config).encoder.layers[0].attention
    assert layer.fused is None and config.fused_path  # the default decides per call; memory bounds: the fused
    x = torch.randn(4, config.n_tokens, 8)
    assert layer.uses_fused(x)  # on a CPU
    monkeypatch.setattr(attention, "compiled_on_gpu", lambda x: True)
    assert not layer.uses_fused(x)  # its weights fit: the plain formula, measured faster there
    per_sequence = 2 * 2 * config.n_tokens**2 * 5 * 4  # layers x heads x N^2 x activations x bytes
    assert layer.plain_bytes_per_sequence == per_sequence
    layer.max_attention_bytes = 4 * per_sequence - 1
    assert layer.uses_fused(x)  # they would not fit: the fused kernels
    forced = [XCTFormerNet(config.replace(fused_attention=f)).encoder.layers[0].attention for f in (True, False)]
    assert forced[0].uses_fused(x) and not forced[1].uses_fused(x)  # either forced, wherever


def test_the_default_rule_agrees_with_the_committed_gpu_step_records():
    """Where the GPU check timed both paths of a network in a compiled run, plain was the faster: the
    rule above takes it (its weights fit there: it was measured)."""
    estimates = pytest.importorskip("benchmarks.measure.estimates", reason="a checkout's lab package")
    steps = estimates.step_record()
    both = [(network, timing) for network, timing in steps.items()
            if network != "source" and {"bf16+compile", "bf16+compile plain"} <= set(timing)]  # fmt: skip
    assert both, "no GPU step record times both paths"
    for network, timing in both:
        assert timing["bf16+compile plain"] < timing["bf16+compile"], network
