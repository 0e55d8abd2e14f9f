"""Which path CRAB takes on a GPU: the Triton kernels where they can run, else the chunked
PyTorch operations, and the package imports either way."""

import subprocess
import sys
from types import SimpleNamespace

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


def test_deterministic_algorithms_take_the_chunked_path(monkeypatch):
    """The Triton backward adds dQ and dM atomically, in an order that varies between runs: under
    ``torch.use_deterministic_algorithms(True)`` both passes take the chunked PyTorch path (the
    forward too, so that the backward finds the minimum where the forward did)."""
    monkeypatch.setattr(crab_gpu, "module", lambda: SimpleNamespace(DTYPES=(torch.bfloat16,)))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    q = SimpleNamespace(is_cuda=True, dtype=torch.bfloat16, device="cuda:0")  # what usable reads of a tensor
    assert crab_gpu.usable(q)
    monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: True)
    assert not crab_gpu.usable(q)
