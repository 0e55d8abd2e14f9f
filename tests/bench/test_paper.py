import pytest

from xct_estimators.bench import paper


@pytest.mark.parametrize("table", [paper.FORECAST, paper.SYNTHETIC_BASELINES], ids=["xctformer", "synthetic"])
def test_published_averages_match_the_transcribed_horizons(table):
    """A check on the transcription: each published Avg is the mean of its four horizons (3-decimal rounding)."""
    for name, rows in table.items():
        for metric in (0, 1):
            mean = sum(rows[h][metric] for h in paper.HORIZONS) / 4
            assert mean == pytest.approx(rows["avg"][metric], abs=0.0016), (name, metric)


def test_reference_lookup_and_gap():
    assert paper.forecast_reference("ETTh1", "avg") == (0.450, 0.436)
    assert paper.forecast_reference("Weather", 96) == (0.153, 0.199)  # the paper's spelling
    assert paper.forecast_reference("synthetic", 96, "dlinear") == (0.516, 0.577)
    assert paper.forecast_reference("ETTh1", 96, "dlinear") is None
    assert paper.relative_gap(0.46, 0.46 / 1.05) == pytest.approx(0.05)
    assert paper.relative_gap(0.4, None) is None


def test_imputation_transcription_agrees_between_tables():
    """Table 3's XCTFormer averages against the per-rate table: ETT = the mean of the four ETT
    datasets' averages, Weather and ECL their own averages (3-decimal rounding)."""

    def average(name, metric):
        return sum(paper.IMPUTATION[name][r][metric] for r in (0.125, 0.25, 0.375, 0.5)) / 4

    for metric in (0, 1):
        ett = sum(average(name, metric) for name in ("ETTh1", "ETTh2", "ETTm1", "ETTm2")) / 4
        assert ett == pytest.approx(paper.IMPUTATION_AVERAGES["ETT"]["XCTFormer"][metric], abs=0.0016)
        for name in ("weather", "electricity"):
            published = paper.IMPUTATION_AVERAGES[name]["XCTFormer"][metric]
            assert average(name, metric) == pytest.approx(published, abs=0.0016)
    assert paper.best_imputation_baseline("ETTh1") == ("TimeMixer++", (0.055, 0.154))
    assert paper.best_imputation_baseline("ECL") == ("DLinear", (0.080, 0.200))
