"""The paper's ablations as --models names (issue 14, part 2)."""

import pytest
import torch

from xct_estimators.bench.catalog import MODELS
from xct_estimators.bench.forecast.protocol import build_model
from xct_estimators.bench.models import ABLATION_MODELS
from xct_estimators.nn import XCTFormerConfig, XCTFormerNet
from xct_estimators.nn.attention import normalise

EXPECTED = {
    "xctformer_nomask": {"use_mask": False},
    "xctformer_softmax": {"activation": "softmax"},
    "xctformer_vanilla": {"use_mask": False, "activation": "softmax"},
    "xctformer_time": {"mixing": "time"},
    "xctformer_channel": {"mixing": "channel"},
    "xctformer_clipped": {"activation": "absact_clipped"},
}


@pytest.mark.parametrize("name", list(ABLATION_MODELS))
def test_each_variant_is_the_preset_with_its_switch(name, tmp_path):
    assert name in MODELS
    model = build_model(name, "ETTh1", 96, epochs=1, work_dir=tmp_path)
    full = build_model("xctformer", "ETTh1", 96, epochs=1, work_dir=tmp_path)
    for field, value in EXPECTED[name].items():
        assert getattr(model, field) == value and getattr(full, field) != value
    assert (model.d_model, model.e_layers, model.n_heads) == (full.d_model, full.e_layers, full.n_heads)


def test_clipped_weights_are_absact_with_negatives_set_to_zero():
    scores = torch.tensor([[[-3.0, 1.0, 2.0, -0.5]]])
    absact = normalise(scores, "absact")
    clipped = normalise(scores, "absact_clipped")
    assert (absact < 0).any() and torch.equal(clipped, absact.clamp_min(0.0))
    net = XCTFormerNet(XCTFormerConfig(seq_len=32, n_channels=2, out_len=8, patch_len=8, stride=4).ablation("clipped"))
    tokens = torch.randn(3, net.config.n_tokens, net.config.d_model)
    weights, _ = net.encoder.layers[0].attention.attention_weights(tokens)
    assert (weights >= 0).all() and (weights.sum(-1) <= 1.0 + 1e-6).all()


def test_paper_gap_rule_on_the_papers_own_table():
    """Our reading of "XCTFormer vs Others (%)" (relative change of the dataset-averaged MSE and MAE,
    averaged) gives the paper's 2.7 % for W/o mask exactly; for softmax and vanilla the paper prints
    8.0 and 8.3 where its own per-dataset numbers give 8.7 and 9.0 (its rule is not stated)."""
    from xct_estimators.bench import paper

    full = paper.ABLATION_FORECAST["xctformer"]
    gaps = {m: round(paper.ablation_gap(full, paper.ABLATION_FORECAST[m]), 1) for m in paper.ABLATION_FORECAST_GAP}
    assert gaps == {"xctformer_nomask": 2.7, "xctformer_softmax": 8.7, "xctformer_vanilla": 9.0,
                    "xctformer_time": 2.9, "xctformer_channel": 3.5}  # fmt: skip


def test_report_puts_measured_ablation_beside_the_paper():
    from xct_estimators.bench.report import full_report
    from xct_estimators.bench.results import parse_record

    records = []
    for model, mse, seed in (("xctformer", 0.40, 2021), ("xctformer_nomask", 0.44, 2021), ("xctformer", 0.9, 2022)):
        for h in (96, 192, 336, 720):  # the full model's other seed (a seed study) stays out of the ablation
            run = {"task": "forecast", "dataset": "ETTh1", "horizon": h, "model": model, "seed": seed,
                   "features": "M", "seq_len": 96, "epochs": 10}  # fmt: skip
            records.append({**run, "run": run, "mse": mse, "mae": mse, "fit_seconds": 1.0, "eval_seconds": 1.0})
    text = full_report([parse_record(r) for r in records])
    assert "## Ablation" in text and "### forecasting" in text
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if "xctformer_nomask" in line]
    assert ["xctformer_nomask", "ETTh1", "0.440", "0.440", "0.453", "0.440"] in rows
    assert ["xctformer_nomask", "ETTh1", "+10.0", "+0.8"] in rows  # ours (0.44 vs 0.40) beside the paper's ETTh1


def test_report_anomaly_ablation_uses_the_papers_rule():
    from xct_estimators.bench import paper
    from xct_estimators.bench.report import full_report
    from xct_estimators.bench.results import parse_record

    full = paper.ABLATION_DETECT["xctformer"]
    gap = paper.detection_ablation_gap
    gaps = {m: round(gap(full, paper.ABLATION_DETECT[m]), 1) for m in paper.ABLATION_DETECT_GAP}
    assert gaps == {**paper.ABLATION_DETECT_GAP, "xctformer_time": 4.3}  # the paper prints 4.4 (rounding)
    records = []
    for model, f1 in (("xctformer", 0.80), ("xctformer_softmax", 0.70)):
        run = {"task": "detect", "dataset": "MSL", "model": model, "seed": 2021, "protocol": "tslib"}
        records.append({**run, "run": run, "f1_adjusted": f1, "f1": f1 / 10, "auc_pr": 0.1, "fit_seconds": 1.0,
                        "eval_seconds": 1.0})  # fmt: skip
    text = full_report([parse_record(r) for r in records])
    lines = [line for line in text.splitlines() if "xctformer_softmax" in line]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert ["xctformer_softmax", "MSL", "70.000", "7.000", "69.000", "-"] in rows
    assert ["xctformer_softmax", "MSL", "+14.3", "+14.5"] in rows  # 80/70 - 1 beside 79.0/69.0 - 1


@pytest.mark.parametrize("name", ["xctformer_clipped", "xctformer_time"])
def test_ablations_reach_the_imputation_and_detection_engines(name, monkeypatch):
    from xct_estimators.bench.detect import protocol as detect
    from xct_estimators.bench.impute import protocol as impute
    from xct_estimators.bench.parser import build_parser, settings_from

    args = settings_from(build_parser().parse_args(["impute", "--no-progress"]))
    engine = impute.build_imputer(name, "ETTh1", 0.25, args).engine
    switches = EXPECTED[name]
    assert all(engine.architecture[k] == v for k, v in switches.items())
    args = settings_from(build_parser().parse_args(["detect", "--models", name, "--no-progress"]))
    from functools import partial

    detector = detect.build_detector(name, partial(detect._detection_engine, "MSL", args), 100, 0)
    assert all(detector.engine.architecture[k] == v for k, v in switches.items())
    assert all(detector.settings[k] == v for k, v in switches.items())  # part of the run key
