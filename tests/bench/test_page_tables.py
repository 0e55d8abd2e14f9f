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


def test_detection_shows_the_papers_f1_and_vus_pr_with_tsb_ads_best_per_entity():
    def detect(model, protocol, vus, scoring=None):
        run = {"task": "detect", "dataset": "SMAP", "protocol": protocol, "model": model, "seed": 2021}
        if scoring:
            run["settings"] = {"scoring": scoring}
        scores = {"vus_pr": vus, "f1_adjusted": 0.5, "f1": 0.1, "auc_pr": 0.1}
        return DetectRecord.from_json({**run, "run": run, **scores, "fit_seconds": 1, "eval_seconds": 1})

    records = [detect("xctformer", "entity", 0.30), detect("xctformer", "entity", 0.35, "standardize/max")]
    records += [detect("random", "entity", 0.14)]
    text = summary_tables(records)
    f1, vus = text.split("\n\n")[1], text.split("\n\n")[3]
    assert rows(f1)[0][-1] == f"{paper.ANOMALY['SMAP'][2] / 100:.3f}"
    vus_rows = {row[2]: row for row in rows(vus)}
    assert vus_rows["scoring=none/mean"][3:] == ["**0.300**", "0.140", f"{paper.TSB_AD_VUS_PR['KMeansAD']['SMAP']:.3f}"]
    assert vus_rows["scoring=standardize/max"][3] == "**0.350**"
