"""The whole network traces as one graph: the fused chain and the hashed dropout are opaque
operators (``xct_estimators.nn.ops``) with fake versions and registered backwards."""

import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet
from xct_estimators.nn import fused as fused_module

NO_DROPOUT = dict(dropout=0.0, fc_dropout=0.0, attn_dropout=0.0)
NETWORKS = {
    "forecast": (XCTFormerConfig(48, 3, 12, patch_len=8, stride=4, d_model=16, n_heads=2, d_ff=32), False),
    "reconstruct": (XCTFormerConfig(32, 3, 32, patch_len=8, stride=4, d_model=16, n_heads=2, d_ff=32), True),
    "decop": (XCTFormerConfig(48, 3, 12, patch_len=8, stride=4, d_model=16, n_heads=2, d_ff=32, decop_k=4), False),
}


@pytest.fixture(params=["kernel", "operations"])
def path(request, monkeypatch):
    if request.param == "kernel" and fused_module._kernel_for(torch.zeros(1)) is None:
        pytest.skip("the C++ kernel cannot be built here")
    if request.param == "operations":
        monkeypatch.setattr(fused_module, "_kernel_for", lambda q: None)
    torch._dynamo.reset()
    return request.param


def _net_and_inputs(name, dropout=False):
    config, masked = NETWORKS[name]
    torch.manual_seed(0)
    net = XCTFormerNet(config if dropout else config.replace(**NO_DROPOUT))
    x = torch.randn(4, config.seq_len, config.n_channels)
    visible = torch.rand(x.shape) > 0.25 if masked else None
    return net, (x,) if visible is None else (x, visible)


@pytest.mark.parametrize("name", list(NETWORKS))
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_no_graph_breaks(name, training, path):
    net, inputs = _net_and_inputs(name, dropout=True)
    explained = torch._dynamo.explain(net.train(training))(*inputs)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons


@pytest.mark.parametrize("name", list(NETWORKS))
def test_compiled_outputs_and_gradients_equal_eager(name, path):
    net, inputs = _net_and_inputs(name)
    compiled = torch.compile(net, backend="aot_eager", fullgraph=True)
    out = compiled(*inputs)
    out.square().mean().backward()
    grads = {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}
    net.zero_grad()
    reference = net(*inputs)
    reference.square().mean().backward()
    torch.testing.assert_close(out, reference, rtol=0, atol=1e-5)
    assert set(grads) == {n for n, p in net.named_parameters() if p.grad is not None}
    for n, p in net.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, rtol=0, atol=1e-5, msg=n)


@pytest.mark.parametrize("name", ["reconstruct", "decop"])
def test_mixed_precision_traces_the_fused_operator_as_one_graph(name):
    """Under bf16 autocast the fused operator runs too (it used to send autocast to the plain
    path), and its fake version gives the compiler float32 statistics."""
    net, inputs = _net_and_inputs(name, dropout=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        explained = torch._dynamo.explain(net.train())(*inputs)
        graph = "".join(str(g.graph) for g in explained.graphs)
        out = torch.compile(net, backend="aot_eager", fullgraph=True)(*inputs)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons
    assert "crab_forward" in graph
    out.float().sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)


def test_inductor_compiles_a_training_step():
    """The real compiler (inductor, C++ on CPU), not only the tracing: forward and backward."""
    net, inputs = _net_and_inputs("forecast")
    out = torch.compile(net, fullgraph=True)(*inputs)
    out.sum().backward()
    torch.testing.assert_close(out, net(*inputs), rtol=0, atol=1e-5)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_export_traces_the_network(training, path):
    for name in ("reconstruct", "decop"):
        net, inputs = _net_and_inputs(name)
        exported = torch.export.export(net.train(training), inputs)
        torch.testing.assert_close(exported.module()(*inputs), net(*inputs), rtol=0, atol=1e-6)


def test_dropout_draws_under_compile_as_eager_does():
    """The seed is an input drawn by torch.randint: compiled training has dropout (the outputs of two
    calls differ) and is repeatable from torch's seed."""
    net, inputs = _net_and_inputs("forecast", dropout=True)
    compiled = torch.compile(net.train(), backend="aot_eager", fullgraph=True)
    torch.manual_seed(1)
    first, second = compiled(*inputs), compiled(*inputs)
    torch.manual_seed(1)
    again = compiled(*inputs)
    assert not torch.equal(first, second) and torch.equal(first, again)
