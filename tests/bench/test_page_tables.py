"""A results page's tables: a row per cell and setting that differs, a column per model, the mean ±
sd over seeds beside the published number, never two settings' runs in one cell."""

import statistics

from xct_estimators.bench import paper
from xct_estimators.bench.detect.record import DetectRecord
from xct_estimators.bench.forecast.record import ForecastRecord
from xct_estimators.bench.page_tables import summary_table, summary_tables


def forecast(model, seed, mse, covariates=None):
    run = {"task": "forecast", "dataset": "ETTh1", "horizon": 96, "model": model, "seed": seed}
    if covariates:  # as the bench records it: only when the run has covariates
        run["covariates"] = covariates
    return ForecastRecord.from_json({**run, "run": run, "mse": mse, "mae": mse, "fit_seconds": 1, "eval_seconds": 1})


def rows(table: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_each_cell_is_the_mean_and_sd_over_seeds_beside_the_paper():
    ours, theirs = [0.40, 0.41, 0.43], [0.50, 0.52]
    records = [forecast("xctformer", 2021 + i, v) for i, v in enumerate(ours)]
    records += [forecast("tide", 2021 + i, v) for i, v in enumerate(theirs)] + [forecast("naive", 2021, 1.3)]
    table = summary_table(records, "mse")
    header = [cell.strip() for cell in table.splitlines()[0].strip("|").split("|")]
    assert header == ["dataset", "horizon", "xctformer", "naive", "tide", "published"]  # the catalog's order
    expected = f"{statistics.fmean(ours):.3f} ± {statistics.stdev(ours):.3f}"
    published = paper.forecast_reference("ETTh1", 96)[0]
    assert rows(table) == [["ETTh1", "96", f"**{expected}**", "1.300", "0.510 ± 0.014", f"{published:.3f}"]]


def test_runs_that_differ_in_a_setting_get_rows_of_their_own_and_a_baseline_stands_in_each():
    records = [forecast("xctformer", s, 0.4) for s in (1, 2)]  # no covariates: the command's default, none
    records += [forecast("xctformer", s, 0.2, covariates="future") for s in (1, 2)]
    records += [forecast("naive", 1, 1.0)]  # takes no covariates
    found = {row[2]: row for row in rows(summary_table(records, "mse"))}
    assert set(found) == {"covariates=future", "covariates=none"}
    assert found["covariates=future"][3:5] == ["**0.200 ± 0.000**", "1.000"]
    assert found["covariates=none"][3:5] == ["**0.400 ± 0.000**", "1.000"]


def detect(model, protocol, vus, scoring=None, window=None, epochs=5):
    run = {"task": "detect", "dataset": "SMAP", "protocol": protocol, "model": model, "seed": 2021}
    settings = {"scoring": scoring} if scoring else {}
    if window:  # as the bench records them: the window mean its stride, XCTFormer its epochs
        settings.update(window_length=window, **({"window_stride": window // 2} if model == "window_mean" else {}))
        settings.update({"n_epochs": epochs} if model == "xctformer" else {})
    if settings:
        run["settings"] = settings
    scores = {"vus_pr": vus, "f1_adjusted": 0.5, "f1": 0.1, "auc_pr": 0.1}
    return DetectRecord.from_json({**run, "run": run, **scores, "fit_seconds": 1, "eval_seconds": 1})


def test_detection_shows_vus_pr_beside_no_other_protocol_s_number_and_the_papers_f1_under_its_own_protocol():
    records = [detect("xctformer", "entity", 0.30), detect("xctformer", "entity", 0.35, "standardize/max")]
    records += [detect("random", "entity", 0.14)]
    text = summary_tables(records)
    # the paper's F1 scores its whole test set at once: no number of its to set beside these
    assert "detection, point-adjusted F1" not in text
    vus_rows = {row[2]: row for row in rows(text.split("\n\n")[1])}
    assert vus_rows["scoring=none/mean"][3:] == ["**0.300**", "0.140", "-"]  # TSB-AD's series are not these entities
    assert vus_rows["scoring=standardize/max"][3] == "**0.350**"
    text = summary_tables([detect("xctformer", "tslib", 0.2), detect("xctformer", "point", 0.3)])
    f1 = rows(text.split("\n\n")[1])
    assert [row[1] for row in f1] == ["tslib"] and f1[0][-1] == f"{paper.ANOMALY['SMAP'][2] / 100:.3f}"


def test_a_baseline_sits_on_the_row_of_each_xctformer_setting_it_agrees_with():
    """window_mean names a window stride and no epochs, XCTFormer the reverse: rows join where
    the settings they share agree, so each baseline stands beside the runs it is compared with."""
    records = [
        detect("xctformer", "entity", 0.6, "none/mean", 100),
        detect("xctformer", "entity", 0.5, "none/mean", 50),
    ]
    records += [
        detect("window_mean", "entity", 0.55, "none/mean", 100),
        detect("window_mean", "entity", 0.4, "none/mean", 50),
    ]
    records += [detect("random", "entity", 0.1), detect("xctformer", "entity", 0.7, "none/mean", 100, epochs=10)]
    found = {row[2]: row[3:6] for row in rows(summary_table(records, "vus_pr"))}
    assert found == {
        "n_epochs=10, window_length=100, window_stride=50": ["**0.700**", "0.550", "0.100"],
        "n_epochs=5, window_length=100, window_stride=50": ["**0.600**", "0.550", "0.100"],
        "n_epochs=5, window_length=50, window_stride=25": ["**0.500**", "0.400", "0.100"],
    }


def test_runs_with_no_setting_in_common_are_not_crossed_into_every_combination():
    def run(model, settings, mse):
        found = {"task": "forecast", "dataset": "ETTh1", "horizon": 96, "model": model, "seed": 1}
        found["settings"] = settings
        return ForecastRecord.from_json(
            {**found, "run": found, "mse": mse, "mae": mse, "fit_seconds": 1, "eval_seconds": 1}
        )

    records = [run("xctformer", {"d_model": d}, 0.1 * d) for d in (1, 2, 3)]
    records += [run("tide", {"hidden": h}, 0.2 * h) for h in (1, 2, 3)]
    found = [row[2] for row in rows(summary_table(records, "mse"))]
    assert found == [*(f"d_model={d}" for d in (1, 2, 3)), *(f"hidden={h}" for h in (1, 2, 3))]  # 6 rows, not 9
