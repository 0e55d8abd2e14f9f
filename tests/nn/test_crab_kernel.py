"""Loading the C++ CRAB kernel: switched off, unbuildable, and the fused path's fallback."""

import pytest
import torch

from xct_estimators.nn import crab_kernel
from xct_estimators.nn.fused import _kernel_for, fused_crab


@pytest.fixture
def fresh_loader(monkeypatch):
    monkeypatch.setattr(crab_kernel, "_loaded", {})


def test_switched_off_by_the_environment(fresh_loader, monkeypatch):
    monkeypatch.setenv(crab_kernel.SWITCH, "0")
    assert crab_kernel.load() is None
    assert crab_kernel.unavailable_reason() == "switched off by XCT_CRAB_KERNEL=0"
    assert _kernel_for(torch.zeros(1)) is None


def test_a_failed_build_falls_back_with_its_reason(fresh_loader, monkeypatch):
    import torch.utils.cpp_extension

    def no_compiler(**kwargs):
        raise RuntimeError("Ninja is required to load C++ extensions")

    monkeypatch.delenv(crab_kernel.SWITCH, raising=False)
    monkeypatch.setattr(torch.utils.cpp_extension, "load", no_compiler)
    assert crab_kernel.load() is None
    assert "Ninja is required" in crab_kernel.unavailable_reason()
    q = torch.randn(2, 1, 6, 3, requires_grad=True)
    mask = torch.randn(1, 6, 6, requires_grad=True)
    fused_crab(q, q, q, mask, p=0.2, seed=1).sum().backward()  # the PyTorch operations' path
    assert q.grad.isfinite().all() and mask.grad.isfinite().all()


def test_only_cpu_float_tensors_take_the_kernel():
    if crab_kernel.load() is None:
        pytest.skip(f"the CRAB kernel is unavailable here: {crab_kernel.unavailable_reason()}")
    assert _kernel_for(torch.zeros(1)) is not None and _kernel_for(torch.zeros(1, dtype=torch.float64)) is not None
    assert _kernel_for(torch.zeros(1, dtype=torch.bfloat16)) is None
    assert _kernel_for(torch.zeros(1, device="meta")) is None


def test_the_build_is_named_by_what_it_is_built_from(fresh_loader, monkeypatch, tmp_path):
    """Two source variants (two package versions) get two builds; the same source, flags and
    versions always the same one, so environments never rewrite each other's build."""
    import torch.utils.cpp_extension

    names = []
    monkeypatch.delenv(crab_kernel.SWITCH, raising=False)
    monkeypatch.setattr(torch.utils.cpp_extension, "load", lambda **kwargs: names.append(kwargs["name"]) or object())
    for text in ("// variant 1\n", "// variant 2\n", "// variant 1\n"):
        source = tmp_path / "crab.cpp"
        source.write_text(text)
        monkeypatch.setattr(crab_kernel, "SOURCE", source)
        monkeypatch.setattr(crab_kernel, "_loaded", {})
        assert crab_kernel.load() is not None
    assert names[0] != names[1] and names[0] == names[2] and all(n.startswith("xct_crab_") for n in names)
    flags = ["-O3"]
    name = crab_kernel.extension_name(b"source", flags)
    assert name != crab_kernel.extension_name(b"source", [*flags, "-mavx2"])
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    assert name != crab_kernel.extension_name(b"source", flags)


def test_one_line_when_the_kernel_compiles_and_one_when_it_falls_back(fresh_loader, monkeypatch, tmp_path, caplog):
    import torch.utils.cpp_extension

    monkeypatch.delenv(crab_kernel.SWITCH, raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))  # nothing built here yet
    monkeypatch.setattr(torch.utils.cpp_extension, "load", lambda **kwargs: object())
    with caplog.at_level("WARNING", logger=crab_kernel.__name__):
        assert crab_kernel.load() is not None
    assert [r.getMessage() for r in caplog.records] == [
        "xct-estimators: compiling the CRAB attention kernel for this machine, once; it can take a few minutes "
        "(XCT_CRAB_KERNEL=0 skips it and runs the slower PyTorch path)."
    ]

    caplog.clear()
    monkeypatch.setattr(crab_kernel, "_loaded", {})
    monkeypatch.setattr(crab_kernel, "_built", lambda name: True)  # a cached build loads silently
    with caplog.at_level("WARNING", logger=crab_kernel.__name__):
        assert crab_kernel.load() is not None
    assert not caplog.records

    def no_compiler(**kwargs):
        raise RuntimeError("Ninja is required to load C++ extensions")

    monkeypatch.setattr(crab_kernel, "_loaded", {})
    monkeypatch.setattr(torch.utils.cpp_extension, "load", no_compiler)
    with caplog.at_level("WARNING", logger=crab_kernel.__name__):
        assert crab_kernel.load() is None
    (record,) = caplog.records
    assert "could not be built" in record.getMessage() and "Ninja is required" in record.getMessage()
    assert "Install a C++ compiler and ninja" in record.getMessage()
