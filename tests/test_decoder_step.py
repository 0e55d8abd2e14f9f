"""``python -m benchmarks.decoder_step``: it times the decoder's kernel path against its PyTorch
operations, and each step really takes the path it is named for."""

from unittest import mock

import pytest
import torch

from benchmarks import decoder_step
from xct_estimators.nn import crab_kernel, known_future, ops


def test_each_step_takes_the_path_it_is_named_for():
    if crab_kernel.load() is None:
        pytest.skip(f"the C++ kernels are not built here: {crab_kernel.unavailable_reason()}")
    calls = {"pairwise": 0, "fft": 0}
    pairwise, rfft = ops.pairwise_relu, torch.fft.rfft

    def counted(name, fn):
        def call(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return call

    with mock.patch.object(known_future.ops, "pairwise_relu", counted("pairwise", pairwise)), \
            mock.patch.object(torch.fft, "rfft", counted("fft", rfft)):  # fmt: skip
        decoder_step.training_step("ETTh1", 16, 2, decoder_step.as_before)()
        assert calls == {"pairwise": 0, "fft": 0}
        decoder_step.training_step("ETTh1", 16, 2, decoder_step.without_kernel)()
        assert calls == {"pairwise": 0, "fft": 2}
        calls.update(fft=0)
        decoder_step.training_step("ETTh1", 16, 2)()
        assert calls == {"pairwise": 2, "fft": 2}  # the decode and gain layers; features and filters


def test_the_benchmark_prints_and_records_its_four_steps(tmp_path, capsys):
    if crab_kernel.load() is None:
        pytest.skip(f"the C++ kernels are not built here: {crab_kernel.unavailable_reason()}")
    out = tmp_path / "decoder.json"
    result = decoder_step.main(["--dataset", "ETTh1", "--horizon", "16", "--repeats", "1", "--json", str(out)])
    assert (
        set(result["train_ms"]) == {"kernel", "no kernel", "neither", "no covariates"}
        and min(result["train_ms"].values()) > 0
    )
    assert result["settings"]["horizon"] == 16 and result["command"].startswith("python -m benchmarks.decoder_step")
    assert "without the kernel" in capsys.readouterr().out and out.exists()
