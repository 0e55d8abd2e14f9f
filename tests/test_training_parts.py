"""``benchmarks/training_parts.py``: four interleaved variants per network, and its torch-parts
variant really runs torch's dropout."""

import pytest
import torch


@pytest.fixture
def training_parts(benchmark_script):
    return benchmark_script("training_parts")


def test_one_network_gives_four_variants_and_both_ratios(training_parts, capsys):
    alone, row = training_parts.main(["--networks", "ETTh1", "--repeats", "1"])
    parts = {"Adam fused", "Adam foreach", "Adam for-loop", "dropout hashed", "dropout torch"}
    assert set(alone["parts_alone"]) == parts and min(alone["parts_alone"].values()) > 0
    assert set(row["ms"]) == {"plain library", "plain torch", "fused library", "fused torch"}
    assert min(row["ms"].values()) > 0 and set(row["ratio"]) == {"library", "torch"}
    assert "fused / plain" in capsys.readouterr().out
    for record in (alone, row):  # every record names its settings
        assert record["threads"] == 2 and record["repeats"] == 1 and record["torch"] == torch.__version__
    assert row["network"] == "ETTh1" and row["batch"] == 32


def test_the_torch_parts_variant_takes_torchs_dropout(training_parts, monkeypatch):
    module = training_parts
    calls = []
    monkeypatch.setattr(torch.nn.functional, "dropout", lambda x, p, training: calls.append(p) or x)
    module.with_torch_dropout(lambda: module.hashed.dropout(torch.ones(4), 0.3, True))()
    assert calls == [0.3] and module.hashed.hashed_dropout_applies.__name__ == "hashed_dropout_applies"


def test_one_attention_path_alone(training_parts):
    _, row = training_parts.main(["--networks", "ETTh1", "--attention", "fused", "--repeats", "1"])
    assert set(row["ms"]) == {"fused library", "fused torch"} and row["ratio"] == {}
