"""docs/forecasting.md's look-back tables: averages over the four horizons, per seed, against a
plain rebuild."""

import numpy as np

from benchmarks.measure.lookback_tables import averages


def _row(seed, horizon, mse, model="nlinear", seq_len=336):
    return {"dataset": "ETTh1", "model": model, "seq_len": seq_len, "seed": seed, "horizon": horizon, "mse": mse}


def test_a_seed_counts_only_with_all_four_horizons_and_a_later_row_replaces_an_earlier_one():
    rng = np.random.default_rng(0)
    table = {(seed, h): float(rng.random()) for seed in (1, 2) for h in (96, 192, 336, 720)}
    rows = [_row(seed, h, 9.0) for (seed, h) in table]  # superseded by the rows below
    rows += [_row(seed, h, value) for (seed, h), value in table.items()]
    rows += [_row(3, 96, 0.1), _row(3, 192, 0.1), _row(3, 336, 0.1)]  # seed 3 lacks 720
    rows += [_row(1, h, 0.5, seq_len=96) for h in (96, 192, 336, 720)]
    result = averages(rows)
    expected = [np.mean([table[seed, h] for h in (96, 192, 336, 720)]) for seed in (1, 2)]
    assert np.allclose(result["ETTh1", "nlinear", 336], expected)
    assert result["ETTh1", "nlinear", 96] == [0.5] and len(result) == 2


def test_the_searched_recipe_pools_its_horizons_at_their_own_look_backs_and_only_today_s_recipe(monkeypatch):
    import dataclasses

    from benchmarks.measure import lookback_tables
    from xct_estimators.nn import presets

    short = dataclasses.replace(presets.get_preset("ETTh1"), input_len=336)
    long = dataclasses.replace(short, input_len=512, d_model=16, d_ff=32)
    monkeypatch.setattr(presets, "SEARCHED", {("ETTh1", 96): short, ("ETTh1", 336): long})

    def row(horizon, seq_len, d_model, mse):
        settings = {"input_chunk_length": seq_len, "d_model": d_model, "output_chunk_length": horizon}
        fields = dict(task="forecast", features="M", model="xctformer_searched", run={"settings": settings})
        return {**_row(2021, horizon, mse, "xctformer_searched", seq_len), **fields}

    rows = [row(96, 336, 8, 0.1), row(192, 336, 8, 0.2), row(336, 512, 16, 0.3), row(720, 512, 16, 0.4)]
    stale = row(720, 512, 8, 9.0)  # an earlier recipe at 720: out of the table
    kept = [r for r in [*rows, stale] if lookback_tables._is_current_recipe(r)]
    assert kept == rows
    assert averages(kept) == {("ETTh1", "xctformer_searched", "searched"): [0.25]}
    cell = lookback_tables._searched_cell(averages(kept), "ETTh1")
    assert cell == "0.250 (1), input 336/336/512/512"


def test_rows_of_one_model_that_trained_otherwise_are_refused():
    import pytest

    from benchmarks.measure.lookback_tables import _check_alike

    alike = {"dataset": "ETTh1", "model": "nlinear", "epochs": 10, "precision": "32", "compile": False}
    _check_alike([alike, dict(alike)])
    with pytest.raises(ValueError, match=r"Rows of one model ran with other epochs, precision, compile, exact_fp32"):
        _check_alike([alike, {**alike, "epochs": 1}])
