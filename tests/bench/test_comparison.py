"""The results page's words: who wins each table, and when XCTFormer helps by more than the seeds' spread."""

import pytest

from xct_estimators.bench.comparison import covariate_sentence, helps_section, verdicts
from xct_estimators.bench.detect.record import DetectRecord
from xct_estimators.bench.forecast.record import ForecastRecord
from xct_estimators.bench.page_tables import runs_table
from xct_estimators.bench.tables import markdown_table


def forecast(model, seed, mse, horizon=96, dataset="ETTh1", **extra):
    run = {"task": "forecast", "dataset": dataset, "horizon": horizon, "model": model, "seed": seed, "seq_len": 96}
    return ForecastRecord.from_json(
        {**run, "run": run, "mse": mse, "mae": mse, "fit_seconds": 1.0, "eval_seconds": 1.0, **extra}
    )


def seeded(model, values, **kwargs):
    return [forecast(model, 2021 + i, v, **kwargs) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    "ours, theirs, outcome",
    [
        ([0.40, 0.41, 0.39], [0.50, 0.51, 0.49], "wins"),  # 0.10 apart, spread 0.01
        ([0.50, 0.51, 0.49], [0.40, 0.41, 0.39], "loses"),
        ([0.40, 0.45, 0.35], [0.42, 0.43, 0.41], "ties"),  # 0.02 apart, spread 0.05
        ([0.40], [0.50, 0.51, 0.49], "not counted"),  # one seed of ours
        ([0.40, 0.41, 0.39], [0.50], "not counted"),  # one seed of a trained baseline
    ],
)
def test_a_win_or_a_loss_counts_only_beyond_the_spread_over_seeds(ours, theirs, outcome):
    records = seeded("xctformer", ours) + seeded("tide", theirs) + seeded("dlinear", [0.9, 0.9])
    (verdict,) = verdicts(records)
    assert verdict.other_model == "tide" and verdict.outcome == outcome  # the best other model, not dlinear
    mean_ours, mean_theirs = sum(ours) / len(ours), sum(theirs) / len(theirs)
    assert verdict.change == pytest.approx((mean_ours - mean_theirs) / mean_theirs)


def test_one_run_of_an_untrained_baseline_stands_for_every_seed():
    records = seeded("xctformer", [0.40, 0.41, 0.39]) + seeded("naive", [0.30])
    (verdict,) = verdicts(records)
    assert (verdict.other_model, verdict.outcome) == ("naive", "loses")


def test_detection_ranks_by_vus_pr_higher_is_better_and_tests_do_not_mix():
    def detect(model, seed, vus, protocol):
        run = {"task": "detect", "dataset": "MSL", "protocol": protocol, "model": model, "seed": seed}
        scores = {"vus_pr": vus, "f1_adjusted": 0.9 if model == "random" else 0.1, "f1": 0.1, "auc_pr": 0.1}
        return DetectRecord.from_json({**run, "run": run, **scores, "fit_seconds": 1.0, "eval_seconds": 1.0})

    records = [detect("xctformer", s, 0.30 + s * 1e-4, "tslib") for s in (1, 2)]
    records += [detect("window_mean", 0, 0.20, "tslib"), detect("window_mean", 0, 0.50, "point")]
    records += [detect("xctformer", s, 0.30, "point") for s in (1, 2)]
    found = {v.setting: v for v in verdicts(records)}
    assert found["tslib protocol"].outcome == "wins" and found["point protocol"].outcome == "loses"


def test_precision_and_compile_are_their_own_contenders():
    records = seeded("xctformer", [0.40, 0.41]) + seeded("xctformer", [0.60, 0.61], precision="bf16-mixed")
    records += seeded("tide", [0.50, 0.51])
    assert {(v.model, v.outcome) for v in verdicts(records)} == {
        ("xctformer", "wins"),
        ("xctformer (bf16-mixed)", "loses"),
    }


def test_runs_of_different_settings_are_not_pooled_as_seeds():
    def trained(seed, mse, learning_rate):
        record = forecast("xctformer", seed, mse)
        return record.replace(run={**record.run, "settings": {"learning_rate": learning_rate, "seed": seed}})

    records = [trained(2021, 0.40, 0.0075), trained(2022, 0.41, 0.01), trained(2023, 0.39, 0.01)]
    records += seeded("naive", [0.50])
    found = {v.model: (v.ours[2], v.outcome) for v in verdicts(records)}
    assert found == {
        "xctformer (learning_rate 0.0075)": (1, "not counted"),
        "xctformer (learning_rate 0.01)": (2, "wins"),
    }


def test_the_section_counts_and_names_each_records_folder_with_a_row_per_tie_or_loss():
    records = seeded("xctformer", [0.40, 0.41, 0.39]) + seeded("tide", [0.50, 0.51, 0.49])
    records += seeded("xctformer", [0.50, 0.51, 0.49], horizon=336) + seeded("tide", [0.40, 0.41, 0.39], horizon=336)
    records += seeded("xctformer", [0.40], horizon=192) + seeded("tide", [0.50], horizon=192)
    text = helps_section({"benchmarks/results/x": records}, markdown_table)
    assert "it wins 1, ties 0 and loses 1; 1 rest on a single seed and are not counted: " in text
    assert "| `benchmarks/results/x` | ETTh1   | horizon 336 " in text and "+25.0%" in text  # the loss
    assert "horizon 96 " not in text and "horizon 192 " not in text  # a win and an uncounted one: no row
    assert helps_section({"x": seeded("tide", [0.5])}, markdown_table) == ""  # no XCTFormer: no section


def test_the_covariate_sentence_compares_each_model_with_its_runs_without_them():
    records = seeded("xctformer", [1.0, 1.2]) + seeded("xctformer", [0.5, 0.6], covariates="future")
    records += seeded("tide", [1.0]) + seeded("tide", [0.9], covariates="future") + seeded("naive", [2.0])
    assert covariate_sentence(records) == (
        "MSE with covariates against the same runs without them: `tide` -10.0% (future on ETTh1), "
        "`xctformer` -50.0% (future on ETTh1)."
    )
    assert covariate_sentence(seeded("tide", [1.0])) == ""


def test_a_one_seed_verdict_says_it_is_not_a_comparison_and_how_to_get_one():
    """The main job runs one seed: its lower MSE may be the seed's (a 3-seed record reversed it)."""
    one_seed = [forecast("xctformer", 2021, 0.041), forecast("tide", 2021, 0.037)]
    text = helps_section({"out": one_seed}, markdown_table)
    assert "1 rest on a single seed and are not counted: one seed's difference is not a comparison" in text
    assert "rerun with `--seeds 2021,2022,2023` to count them." in text
    assert "|" not in text  # no table of ties and losses when there is none: not a header without rows
    seeds = one_seed + [forecast("xctformer", 2022, 0.040), forecast("tide", 2022, 0.050)]
    assert "one seed" not in helps_section({"out": seeds}, markdown_table)


def _rows(table: str) -> list[dict[str, str]]:
    lines = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines() if line[:1] == "|"]
    return [dict(zip(lines[0], line, strict=True)) for line in lines[2:]]


def test_the_runs_table_names_only_the_settings_that_tell_a_models_runs_apart():
    same = [forecast("xctformer", 2021, 0.4), forecast("tide", 2021, 0.5)]
    assert {row["settings"] for row in _rows(runs_table(same))} == {"-"}
    assert runs_table(same).startswith("Published: the paper's number for the run's model, where it gives one.")
    bf16 = forecast("xctformer", 2021, 0.45)
    bf16 = bf16.replace(run={**bf16.run, "precision": "bf16-mixed"}, precision="bf16-mixed")
    rows = _rows(runs_table([*same, bf16]))
    assert [(r["model"], r["settings"], r["MSE"]) for r in rows] == [
        ("tide", "-", "0.500"),
        ("xctformer", "-", "0.400"),
        ("xctformer", "precision=bf16-mixed", "0.450"),
    ]
    from xct_estimators.bench import paper

    assert rows[1]["published MSE"] == f"{paper.forecast_reference('ETTh1', 96)[0]:.3f}"  # the paper's XCTFormer
    assert rows[0]["published MSE"] == "-"  # none for TiDE on ETTh1
