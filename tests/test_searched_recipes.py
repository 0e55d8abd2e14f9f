"""Each searched recipe is the best trial of its look-back search's record."""

import json
from pathlib import Path

import pytest

from benchmarks.measure.lookback_tables import SEARCH_RECORDS
from xct_estimators.nn.presets import SEARCHED

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("key", sorted(SEARCHED), ids=lambda key: f"{key[0]}-H{key[1]}")
def test_a_searched_recipe_is_its_record_s_best_trial(key):
    preset = SEARCHED[key]
    study = json.loads((ROOT / SEARCH_RECORDS[key]).read_text())
    assert (preset.task, preset.dataset) == ("forecast", key[0])
    assert study["dataset"] == key[0] and study["output_chunk_length"] == key[1]
    assert "input_chunk_length" in study["space"]  # a look-back search
    assert preset.estimator_params("input_chunk_length") == study["best_params"]
