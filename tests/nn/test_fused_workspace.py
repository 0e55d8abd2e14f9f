"""The fused function's per-thread chunk buffers on CPU: reused between calls, never shared
between threads, separate for inference mode, and invisible in the results."""

import threading

import torch

from xct_estimators.nn import fused as fused_module
from xct_estimators.nn.ops import fused_crab


def inputs(seed, b=3, h=2, n=20, d=4):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, d, generator=generator) for _ in range(3))
    mask = torch.randn(h, n, n, generator=generator)
    return [t.requires_grad_() for t in (q, k, v, mask)]


def forward_backward(tensors, p=0.3, seed=7):
    out = fused_crab(*tensors, 1.0, "absact", p, seed)
    grads = torch.autograd.grad(out, tensors, torch.ones_like(out))
    return [out.detach(), *grads]


def fresh_workspace():
    fused_module._workspace.key, fused_module._workspace.buffers = None, []


def test_calls_with_one_chunk_shape_reuse_the_buffers_and_results_do_not_change():
    tensors = inputs(0)
    fresh_workspace()
    first = forward_backward(tensors)
    storage = [b.data_ptr() for b in fused_module._workspace.buffers]
    assert storage  # the last call left its buffers
    second = forward_backward(tensors)
    assert [b.data_ptr() for b in fused_module._workspace.buffers] == storage
    for a, b in zip(first, second, strict=True):
        assert torch.equal(a, b)


def test_inference_mode_buffers_do_not_reach_training():
    tensors = inputs(1)
    fresh_workspace()
    with torch.inference_mode():
        predicted = fused_crab(*(t.detach() for t in tensors), 1.0, "absact", 0.0)
    trained = forward_backward(tensors, p=0.0)  # writes into buffers outside inference mode
    assert torch.allclose(trained[0], predicted, rtol=1e-6, atol=1e-6)


def test_threads_get_their_own_buffers():
    cases = [inputs(seed) for seed in range(4)]
    expected = [forward_backward(tensors) for tensors in cases]
    results = [None] * len(cases)
    start = threading.Barrier(len(cases))

    def work(i):
        start.wait()
        for _ in range(5):
            results[i] = forward_backward(cases[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got, want in zip(results, expected, strict=True):
        for a, b in zip(got, want, strict=True):
            assert torch.equal(a, b)
