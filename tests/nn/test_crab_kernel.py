"""Loading the C++ CRAB kernel: switched off, unbuildable, and the fused path's fallback."""

import os
import shutil
import time
from pathlib import Path

import pytest
import torch

from xct_estimators.nn import crab_kernel
from xct_estimators.nn.fused import _kernel_for
from xct_estimators.nn.ops import fused_crab


@pytest.fixture
def fresh_loader(monkeypatch):
    monkeypatch.setattr(crab_kernel, "_loaded", {})


def test_switched_off_by_the_environment(fresh_loader, monkeypatch):
    monkeypatch.setenv(crab_kernel.SWITCH, "0")
    assert crab_kernel.load() is None
    assert crab_kernel.unavailable_reason() == "switched off by XCT_CRAB_KERNEL=0"
    assert _kernel_for(torch.zeros(1)) is None


def test_a_failed_build_falls_back_with_its_reason(fresh_loader, monkeypatch, tmp_path):
    import torch.utils.cpp_extension

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))  # nothing built here yet

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

    folders = []
    monkeypatch.delenv(crab_kernel.SWITCH, raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(torch.utils.cpp_extension, "load", _fake_builder(folders))
    monkeypatch.setattr(crab_kernel, "_import", lambda name, library: object())
    for text in ("// variant 1\n", "// variant 2\n", "// variant 1\n"):
        source = tmp_path / "crab.cpp"
        source.write_text(text)
        monkeypatch.setattr(crab_kernel, "SOURCES", (source,))
        monkeypatch.setattr(crab_kernel, "_loaded", {})
        assert crab_kernel.load() is not None
    names = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(folders) == 2 and len(names) == 2, "the third load finds the first build"
    assert all(n.startswith("xct_crab_") for n in names)
    flags = ["-O3"]
    name = crab_kernel.extension_name(b"source", flags)
    assert name != crab_kernel.extension_name(b"source", [*flags, "-mavx2"])
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    assert name != crab_kernel.extension_name(b"source", flags)


def _fake_builder(calls):
    """torch's builder without the compiler: it writes the library file into the folder it was given."""

    def build(name, build_directory, **kwargs):
        calls.append(build_directory)
        assert not any(Path(build_directory).iterdir()), "each build gets an empty folder of its own"
        (Path(build_directory) / f"{name}.so").write_bytes(b"library")
        return object()

    return build


def test_one_line_when_the_kernel_compiles_and_one_more_when_it_falls_back(fresh_loader, monkeypatch, tmp_path, caplog):
    import torch.utils.cpp_extension

    monkeypatch.delenv(crab_kernel.SWITCH, raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))  # nothing built here yet
    monkeypatch.setattr(torch.utils.cpp_extension, "load", _fake_builder([]))
    with caplog.at_level("WARNING", logger=crab_kernel.__name__):
        assert crab_kernel.load() is not None
    assert [r.getMessage() for r in caplog.records] == [
        "xct-estimators: compiling the CPU kernels (CRAB attention, covariate decoder) for this machine, once; "
        "it can take a few minutes (XCT_CRAB_KERNEL=0 skips them and runs the slower PyTorch path)."
    ]

    caplog.clear()
    monkeypatch.setattr(crab_kernel, "_loaded", {})
    monkeypatch.setattr(crab_kernel, "_import", lambda name, library: object())  # a cached build loads silently
    with caplog.at_level("WARNING", logger=crab_kernel.__name__):
        assert crab_kernel.load() is not None
    assert not caplog.records

    def no_compiler(**kwargs):
        raise RuntimeError("Ninja is required to load C++ extensions")

    monkeypatch.setattr(crab_kernel, "_loaded", {})
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(torch.utils.cpp_extension, "load", no_compiler)
    with caplog.at_level("WARNING", logger=crab_kernel.__name__):
        assert crab_kernel.load() is None
    compiling, record = caplog.records  # the attempt is announced, then its failure
    assert "compiling" in compiling.getMessage()
    assert "could not be built" in record.getMessage() and "Ninja is required" in record.getMessage()
    assert "Install a C++ compiler and ninja" in record.getMessage()


def test_a_build_killed_midway_leaves_nothing_the_next_one_waits_on(fresh_loader, monkeypatch, tmp_path):
    """A killed build leaves torch's lock file behind; the next process builds in a folder of its
    own and moves only the finished library into the cache."""
    import torch.utils.cpp_extension

    monkeypatch.delenv(crab_kernel.SWITCH, raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    name = crab_kernel.extension_name(b"x", [])
    library = crab_kernel.cached_library(name)
    (library.parent / "lock").touch()  # what torch's builder leaves when its process dies
    calls = []
    monkeypatch.setattr(crab_kernel, "extension_name", lambda source, flags: name)
    monkeypatch.setattr(torch.utils.cpp_extension, "load", _fake_builder(calls))
    assert crab_kernel.load() is not None
    assert library.read_bytes() == b"library" and len(calls) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [name], "the private build folder is gone"


def test_a_cached_build_loads_past_a_dead_processs_lock(fresh_loader, monkeypatch, tmp_path):
    """The real library, cached beside a stale lock, is imported without building again."""
    import torch.utils.cpp_extension

    if crab_kernel.load() is None:
        pytest.skip(f"the CRAB kernel is unavailable here: {crab_kernel.unavailable_reason()}")
    built = crab_kernel.cached_library(crab_kernel.load().__name__)  # not __file__: a fresh build's folder is gone
    monkeypatch.setattr(crab_kernel, "_loaded", {})
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    library = crab_kernel.cached_library(built.stem)
    shutil.copy(built, library)
    (library.parent / "lock").touch()

    def no_build(**kwargs):
        raise AssertionError("a cached build must not be built again")

    monkeypatch.setattr(torch.utils.cpp_extension, "load", no_build)
    module = crab_kernel.load()
    assert module is not None and module.__spec__.origin == str(library)


def test_the_folders_of_builds_killed_midway_are_removed_by_the_next_build(fresh_loader, monkeypatch, tmp_path):
    """SIGKILL skips the clean-up of a private build folder: the next build removes those of dead
    builders (and old ones without a PID), and leaves a running builder's alone."""
    import subprocess
    import sys

    import torch.utils.cpp_extension

    monkeypatch.delenv(crab_kernel.SWITCH, raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    name = crab_kernel.extension_name(b"x", [])
    library = crab_kernel.cached_library(name)
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    killed.kill()
    killed.wait()
    dead, running = tmp_path / f"xct_crab_0.building-{killed.pid}-ab12", tmp_path / f"{name}.building-{os.getpid()}-cd"
    old, recent = tmp_path / "xct_crab_1.building-q9x8z7", tmp_path / "xct_crab_2.building-w1v2u3"
    for folder in (dead, running, old, recent):
        (folder / "build.ninja").parent.mkdir()
        (folder / "build.ninja").touch()
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    monkeypatch.setattr(crab_kernel, "extension_name", lambda source, flags: name)
    monkeypatch.setattr(torch.utils.cpp_extension, "load", _fake_builder([]))
    assert crab_kernel.load() is not None and library.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, running.name, recent.name])
