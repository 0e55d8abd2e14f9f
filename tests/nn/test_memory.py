"""The torch-free memory model: chunk sizes as a public setting, inference batches."""

import ast
import sys
from pathlib import Path

import pytest

from xct_estimators.nn import get_preset, hyperparameters, memory


def test_chunk_scores_are_a_setting_restored_after_the_block():
    before = (memory.chunk_scores("cpu"), memory.chunk_scores("cuda"))
    with memory.using_chunk_scores(cpu=144, accelerator=2**10):
        assert memory.chunk_scores("cpu") == 144 and memory.chunk_scores("cuda") == memory.chunk_scores("mps") == 2**10
    assert (memory.chunk_scores("cpu"), memory.chunk_scores("cuda")) == before
    previous = memory.set_chunk_scores(cpu=288)
    try:
        assert memory.chunk_scores("cpu") == 288 and previous["cpu"] == before[0]
    finally:
        memory.set_chunk_scores(**previous)


@pytest.mark.parametrize("value", [0, -4, 2.5, True, "big"])
def test_a_chunk_size_that_is_not_a_positive_integer_is_refused(value):
    with pytest.raises(ValueError, match="cpu chunk size must be a positive integer"):
        memory.set_chunk_scores(cpu=value)


@pytest.mark.parametrize(
    "dataset, task, expected", [("ETTh1", "impute", 27), ("ETTh2", "impute", 128), ("Weather", "impute", 3),
                                ("ECL", "impute", 8), ("MSL", "anomaly", 12)]
)  # fmt: skip
def test_inference_batches_are_those_the_engine_used_before_the_memory_module(dataset, task, expected):
    """The numbers the engine's own sizing gave for the paper's presets (commit cc9a89d)."""
    preset = get_preset(dataset, task)
    assert memory.inference_batch_size(preset.config(), preset.batch_size) == expected


def test_the_memory_model_imports_no_torch():
    """At module level memory.py imports only the standard library and hyperparameters.py (itself
    torch-free): configurations are sized and checked without a framework."""
    for module in (memory, hyperparameters):
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {
            (node.level, node.module or "") if isinstance(node, ast.ImportFrom) else (0, alias.name)
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        stdlib = sys.stdlib_module_names
        third_party = {name for level, name in imported if not level and name.split(".")[0] not in stdlib}
        assert third_party == set() and {name for level, name in imported if level} <= {"hyperparameters"}
