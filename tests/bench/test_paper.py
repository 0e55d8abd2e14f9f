import pytest

from xct_estimators.bench import paper


@pytest.mark.parametrize("table", [paper.FORECAST, paper.SYNTHETIC_BASELINES], ids=["xctformer", "synthetic"])
def test_published_averages_match_the_transcribed_horizons(table):
    """A check on the transcription: each published Avg is the mean of its four horizons (3-decimal rounding)."""
    for name, rows in table.items():
        for metric in (0, 1):
            mean = sum(rows[h][metric] for h in paper.HORIZONS) / 4
            assert mean == pytest.approx(rows["avg"][metric], abs=0.0016), (name, metric)


def test_reference_lookup():
    assert paper.forecast_reference("ETTh1", "avg") == (0.450, 0.436)
    assert paper.forecast_reference("Weather", 96) == (0.153, 0.199)  # the paper's spelling
    assert paper.forecast_reference("synthetic", 96, "dlinear") == (0.516, 0.577)
    assert paper.forecast_reference("ETTh1", 96, "dlinear") is None
