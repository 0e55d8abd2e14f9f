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
