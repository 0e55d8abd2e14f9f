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
