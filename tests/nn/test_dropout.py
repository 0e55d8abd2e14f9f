"""Activation dropout with the hashed mask: torch's dropout distribution, a mask the backward
pass redraws exactly, torch's dropout wherever the kernel does not apply."""

import pytest
import torch
from torch.nn import functional as F

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet, crab_kernel
from xct_estimators.nn.dropout import Dropout, dropout, hashed_dropout_applies
from xct_estimators.nn.fused import keep_masks


@pytest.fixture
def kernel():
    if crab_kernel.load() is None:
        pytest.skip(f"the CRAB kernel is unavailable here: {crab_kernel.unavailable_reason()}")


def reference(x, p, seed):
    """Plain torch: the attention dropout's hash over the flat tensor, kept entries scaled."""
    keep = keep_masks(x.reshape(1, 1, 1, -1), p, seed).view(x.shape)
    return x * keep / (1 - p), keep


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_mask_is_the_attention_dropouts_hash_over_the_flat_tensor(kernel, dtype):
    x = torch.randn(3, 70_001, dtype=dtype)  # several parallel blocks, a ragged end
    out = dropout(x, 0.3, True, seed=12345)
    expected, keep = reference(x, 0.3, 12345)
    assert torch.equal(out != 0, keep.bool())
    torch.testing.assert_close(out, expected)


def test_a_strided_input_is_masked_in_its_logical_order(kernel):
    x = torch.randn(40, 30).t()  # not contiguous
    torch.testing.assert_close(dropout(x, 0.5, True, seed=7), reference(x.contiguous(), 0.5, 7)[0])


def test_each_entry_is_kept_with_probability_one_minus_p_and_the_mean_is_kept(kernel):
    x = torch.ones(1_000_000)
    for p in (0.05, 0.1, 0.5):
        out = dropout(x, p, True, seed=3)
        assert float((out != 0).float().mean()) == pytest.approx(1 - p, abs=2e-3)
        assert float(out.mean()) == pytest.approx(1.0, abs=5e-3)


def test_the_backward_pass_redraws_the_forward_mask(kernel):
    x = torch.randn(257, 33, dtype=torch.float64, requires_grad=True)
    out = dropout(x, 0.4, True, seed=99)
    weights = torch.randn_like(out)
    (out * weights).sum().backward()
    _, keep = reference(x.detach(), 0.4, 99)
    torch.testing.assert_close(x.grad, weights * keep / 0.6)
    assert torch.autograd.gradcheck(lambda t: dropout(t, 0.4, True, seed=99), (x.detach()[:5, :4].requires_grad_(),))


def test_masks_follow_torchs_global_seed(kernel):
    x = torch.randn(1000)
    torch.manual_seed(0)
    first, second = dropout(x, 0.5, True), dropout(x, 0.5, True)
    torch.manual_seed(0)
    assert torch.equal(dropout(x, 0.5, True), first) and not torch.equal(first, second)


def test_evaluation_and_zero_rate_pass_the_input_through():
    x = torch.randn(10, 4)
    assert dropout(x, 0.5, False) is x and dropout(x, 0.0, True) is x
    module = Dropout(0.5).eval()
    assert module(x) is x


def test_torchs_dropout_runs_where_the_kernel_does_not_apply(monkeypatch):
    x = torch.randn(64, 8).to(torch.bfloat16)  # bf16 activations under CPU autocast
    assert not hashed_dropout_applies(x)
    called = []
    monkeypatch.setattr(F, "dropout", lambda *args: called.append(args) or args[0])
    dropout(x, 0.2, True)
    assert len(called) == 1 and called[0][1:] == (0.2, True)


def test_the_network_uses_it_for_every_activation_dropout():
    net = XCTFormerNet(XCTFormerConfig(seq_len=32, n_channels=2, out_len=8, patch_len=8, stride=8, d_model=8,
                                       n_heads=1, d_ff=16, e_layers=2, head_dropout=0.1))  # fmt: skip
    kinds = [type(m) for m in net.modules() if isinstance(m, torch.nn.Dropout)]
    assert kinds.count(Dropout) == 1 + 2 * 2 + 1  # tokenizer, two per layer, head
