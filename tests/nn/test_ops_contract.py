"""The custom operators' contract with torch (``torch.library.opcheck``: schema, autograd
registration, fake tensors, AOT dispatch), and the dropout seed made where the operator runs."""

import pytest
import torch

from xct_estimators.nn import crab_gpu, ops, tf32


def _attention_inputs(use_mask: bool, dtype=torch.float32):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 12, 8, generator=generator, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.randn(2, 12, 12, generator=generator, requires_grad=True) if use_mask else None
    return q, k, v, mask


@pytest.mark.parametrize("use_mask", [True, False])
@pytest.mark.parametrize("p", [0.0, 0.3])
def test_crab_forward_and_backward_keep_torchs_operator_contract(use_mask, p):
    q, k, v, mask = _attention_inputs(use_mask)
    seed = ops.seed_tensor(p, 7)
    torch.library.opcheck(ops.crab_forward, (q, k, v, mask, 0.5, False, p, seed))
    out, minimum, denominator, place = ops.crab_forward(q, k, v, mask, 0.5, False, p, seed)
    upstream = torch.randn_like(out)
    needs = [True, True, True, use_mask]
    saved = [None if t is None else t.detach() for t in (q, k, v, mask, out, minimum, denominator, place)]
    # the backward has no backward of its own (no second derivatives): checked on plain tensors
    torch.library.opcheck(ops.crab_backward, (upstream, *saved, 0.5, False, p, seed, needs))


def test_the_hashed_dropout_keeps_torchs_operator_contract():
    x = torch.randn(4, 16, requires_grad=True)
    torch.library.opcheck(ops.scaled_keep, (x, 0.25, ops.seed_tensor(0.25, 3)))


@pytest.mark.parametrize("p, seed", [(0.3, None), (0.3, 5), (0.0, None)])
def test_the_dropout_seed_is_made_on_the_operators_device(p, seed):
    """A seed made on the CPU and copied to the GPU would make the host wait for the GPU each layer."""
    made = ops.seed_tensor(p, seed, torch.device("meta"))
    assert made.device.type == "meta" and made.dtype == torch.int64 and made.shape == (1,)


def test_tf32_is_read_through_torchs_current_switch():
    """Torch refuses to read ``allow_tf32`` once ``fp32_precision`` was set; the package reads both ways."""
    matmul = torch.backends.cuda.matmul
    before = tf32.allowed()
    try:
        if hasattr(torch.backends, "fp32_precision"):
            matmul.fp32_precision = "tf32"  # the new switch, as a user on torch >= 2.9 sets it
        assert tf32.allowed()  # read without the RuntimeError the older switch raises now
        assert crab_gpu.on_tensor_cores(torch.float32)
        tf32.allow(True)
        assert tf32.allowed() and matmul.allow_tf32  # and after the package's write, both read back
        tf32.allow(False)
        assert not tf32.allowed() and not matmul.allow_tf32
    finally:
        tf32.allow(before)


def test_the_decoders_pairwise_operator_keeps_torchs_operator_contract():
    from xct_estimators.nn import crab_kernel

    if crab_kernel.load() is None:
        pytest.skip(f"the C++ kernels are not built here: {crab_kernel.unavailable_reason()}")
    generator = torch.Generator().manual_seed(0)
    a, c = torch.randn(2, 5, 6, generator=generator, requires_grad=True), torch.randn(2, 3, 6, generator=generator)
    w = torch.randn(6, generator=generator, requires_grad=True)
    torch.library.opcheck(ops.pairwise_relu, (a, c.requires_grad_(), w))
    upstream = torch.randn(2, 5, 3, generator=generator)
    torch.library.opcheck(ops.pairwise_relu_backward, (upstream, a.detach(), c.detach(), w.detach()))
