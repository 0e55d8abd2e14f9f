"""The lab's ablation tables: the paper's ablation study beside xct-bench records of the ablation models."""

import pytest

from xct_estimators.bench.results import parse_record


def test_paper_gap_rule_on_the_papers_own_table(benchmark_script):
    """Our reading of "XCTFormer vs Others (%)" (relative change of the dataset-averaged MSE and MAE,
    averaged) gives the paper's 2.7 % for W/o mask exactly; for softmax and vanilla the paper prints
    8.0 and 8.3 where its own per-dataset numbers give 8.7 and 9.0 (its rule is not stated)."""
    lab = benchmark_script("measure.ablation")
    full = lab.ABLATION_FORECAST["xctformer"]
    gaps = {m: round(lab.ablation_gap(full, lab.ABLATION_FORECAST[m]), 1) for m in lab.ABLATION_FORECAST_GAP}
    assert gaps == {"xctformer_nomask": 2.7, "xctformer_softmax": 8.7, "xctformer_vanilla": 9.0,
                    "xctformer_time": 2.9, "xctformer_channel": 3.5}  # fmt: skip


def test_measured_ablation_stands_beside_the_paper(benchmark_script):
    records = []
    for model, mse, seed in (("xctformer", 0.40, 2021), ("xctformer_nomask", 0.44, 2021), ("xctformer", 0.9, 2022)):
        for h in (96, 192, 336, 720):  # the full model's other seed (a seed study) stays out of the ablation
            run = {"task": "forecast", "dataset": "ETTh1", "horizon": h, "model": model, "seed": seed,
                   "features": "M", "seq_len": 96, "epochs": 10}  # fmt: skip
            records.append({**run, "run": run, "mse": mse, "mae": mse, "fit_seconds": 1.0, "eval_seconds": 1.0})
    text = benchmark_script("measure.ablation").tables([parse_record(r) for r in records])
    assert "### forecasting" in text
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if "xctformer_nomask" in line]
    assert ["xctformer_nomask", "ETTh1", "0.440", "0.440", "0.453", "0.440"] in rows
    assert ["xctformer_nomask", "ETTh1", "+10.0", "+0.8"] in rows  # ours (0.44 vs 0.40) beside the paper's ETTh1


def test_anomaly_ablation_uses_the_papers_rule(benchmark_script):
    lab = benchmark_script("measure.ablation")
    full = lab.ABLATION_DETECT["xctformer"]
    gaps = {m: round(lab.detection_ablation_gap(full, lab.ABLATION_DETECT[m]), 1) for m in lab.ABLATION_DETECT_GAP}
    assert gaps == {**lab.ABLATION_DETECT_GAP, "xctformer_time": 4.3}  # the paper prints 4.4 (rounding)
    records = []
    for model, f1 in (("xctformer", 0.80), ("xctformer_softmax", 0.70)):
        run = {"task": "detect", "dataset": "MSL", "model": model, "seed": 2021, "protocol": "tslib"}
        records.append({**run, "run": run, "f1_adjusted": f1, "f1": f1 / 10, "auc_pr": 0.1, "fit_seconds": 1.0,
                        "eval_seconds": 1.0})  # fmt: skip
    text = lab.tables([parse_record(r) for r in records])
    lines = [line for line in text.splitlines() if "xctformer_softmax" in line]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert ["xctformer_softmax", "MSL", "70.000", "7.000", "69.000", "-"] in rows
    assert ["xctformer_softmax", "MSL", "+14.3", "+14.5"] in rows  # 80/70 - 1 beside 79.0/69.0 - 1


def test_the_command_reads_record_folders_and_says_when_they_fill_no_table(benchmark_script, tmp_path, capsys):
    from xct_estimators.bench.results import ResultStore

    lab = benchmark_script("ablation_tables")
    store = ResultStore(tmp_path / "run")
    for model, f1 in (("xctformer", 0.80), ("xctformer_softmax", 0.70)):
        run = {"task": "detect", "dataset": "MSL", "model": model, "seed": 2021, "protocol": "tslib"}
        measured = {"auc_pr": 0.1, "fit_seconds": 1.0, "eval_seconds": 1.0}
        store.append(parse_record({**run, "run": run, "f1_adjusted": f1, "f1": f1 / 10, **measured}))
    assert lab.main([str(tmp_path / "run")]) == 0
    assert "### anomaly detection (tslib)" in capsys.readouterr().out
    ResultStore(tmp_path / "one model").append(store.latest()[0])
    lab.main([str(tmp_path / "one model")])
    assert capsys.readouterr().out.startswith("No ablation table")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit):
        lab.main([str(tmp_path / "empty")])
    assert "empty: no results.jsonl" in capsys.readouterr().err
