"""Which path CRAB takes on a GPU: the Triton kernels where they can run, else the chunked
PyTorch operations, and the package imports either way."""

import subprocess
import sys

import pytest
import torch

from xct_estimators.nn import crab_gpu


def test_cpu_tensors_never_take_the_triton_kernels():
    assert not crab_gpu.usable(torch.zeros(1))


def test_without_triton_the_package_works_and_says_why(tmp_path):
    """Triton blocked at import: the network still trains on the CPU, and the GPU switch reports the
    reason instead of raising."""
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import torch\n"
        "from xct_estimators.nn import XCTFormerConfig, XCTFormerNet, crab_gpu\n"
        "net = XCTFormerNet(XCTFormerConfig(32, 2, 8, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16))\n"
        "net(torch.randn(2, 32, 2)).sum().backward()\n"
        "assert crab_gpu.module() is None\n"
        "print(crab_gpu.unavailable_reason())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "import of triton halted" in done.stdout and "Triton is unavailable" in done.stderr


def test_the_switch_turns_the_kernels_off(monkeypatch):
    monkeypatch.setattr(crab_gpu, "_loaded", {})
    monkeypatch.setenv(crab_gpu.SWITCH, "0")
    assert crab_gpu.module() is None and crab_gpu.unavailable_reason() == "switched off by XCT_TRITON=0"


def test_float32_takes_the_kernels_only_with_tf32(monkeypatch):
    """Triton's full-precision float32 products run without tensor cores (the H100 record: the
    fused fp32 step far slower than plain), so float32 takes them only where TF32 is allowed."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    assert not crab_gpu.on_tensor_cores(torch.float32)
    assert crab_gpu.on_tensor_cores(torch.bfloat16) and crab_gpu.on_tensor_cores(torch.float16)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", True)
    assert crab_gpu.on_tensor_cores(torch.float32)
    assert not crab_gpu.on_tensor_cores(torch.float64)


def test_deterministic_algorithms_take_the_chunked_backward(monkeypatch):
    """The Triton backward sums dQ and dM with atomic additions, whose order varies between runs:
    with ``torch.use_deterministic_algorithms(True)`` the chunked PyTorch backward runs instead."""
    from xct_estimators.nn import ops

    class Kernels:
        def backward(self, *args):
            raise AssertionError("the atomic backward ran under deterministic algorithms")

    monkeypatch.setattr(crab_gpu, "usable", lambda q: True)
    monkeypatch.setattr(crab_gpu, "module", lambda: Kernels())
    q, k, v = (torch.randn(1, 1, 6, 4) for _ in range(3))
    mask = torch.randn(1, 6, 6)
    seed = torch.tensor([0])
    forward = ops._forward_chunked(q, k, v, mask, 1.0, False, 0.0, seed)
    args = (torch.ones(1, 1, 6, 4), q, k, v, mask, *forward, 1.0, False, 0.0, seed, [True] * 4)
    with monkeypatch.context() as patched:
        patched.setattr(torch, "are_deterministic_algorithms_enabled", lambda: True)
        grads = ops._backward_cuda(*args)
    assert [tuple(g.shape) for g in grads] == [(1, 1, 6, 4)] * 3 + [(1, 6, 6)]
    with pytest.raises(AssertionError, match="atomic backward ran"):  # without the switch, the kernels'
        ops._backward_cuda(*args)
