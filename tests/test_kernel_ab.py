"""``benchmarks/kernel_ab.py --smoke``: the kernels' A/B runs on CPU under Triton's interpreter."""

from pathlib import Path

import pytest

pytest.importorskip("triton", reason="Triton is not installed (pip install -e '.[dev]' brings it)")


def test_a_baseline_equal_to_the_tree_gives_equal_gradients(benchmark_script, capsys, tmp_path):
    from xct_estimators.nn import triton_crab

    (tmp_path / "old.py").write_text(Path(triton_crab.__file__).read_text())  # a copy, as git show makes one
    assert benchmark_script("kernel_ab").main(["--baseline", str(tmp_path / "old.py"), "--smoke"]) == 0
    out = capsys.readouterr().out
    assert "largest relative difference of dQ dK dV dM: ['0.0e+00', '0.0e+00', '0.0e+00', '0.0e+00']" in out
    assert " p=0.5 baseline: " in out and " p=0.5 tree: " in out
