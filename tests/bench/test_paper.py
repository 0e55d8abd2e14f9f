import pytest

from xct_estimators.bench import paper


def test_published_averages_match_the_transcribed_horizons():
    """A check on the transcription: each published Avg is the mean of its four horizons (3-decimal rounding)."""
    for name, rows in paper.FORECAST.items():
        for metric in (0, 1):
            mean = sum(rows[h][metric] for h in paper.HORIZONS) / 4
            assert mean == pytest.approx(rows["avg"][metric], abs=0.0016), (name, metric)


def test_reference_lookup():
    assert paper.forecast_reference("ETTh1", "avg") == (0.450, 0.436)
    assert paper.forecast_reference("Weather", 96) == (0.153, 0.199)  # the paper's spelling
    # the paper's baselines ran other implementations than the Darts models beside them
    assert paper.forecast_reference("synthetic", 96, "tide") is None
    assert paper.forecast_reference("ETTh1", 96, "dlinear") is None
