"""Dependency maps (issue 14, part 1): labelled masks, summaries, hooks, plots."""

import numpy as np
import pandas as pd
import pytest
import torch
from darts import TimeSeries

from xct_estimators import XCTFormerImputer, XCTFormerModel
from xct_estimators.explain import (
    attention_map,
    channel_dependencies,
    dependency_map,
    horizon_dependency_map,
    lag_dependencies,
    plot_dependency_map,
)
from xct_estimators.nn import XCTFormerConfig, XCTFormerNet

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False}


def delayed_pair(n=3000, seed=0):
    """A, C, D: independent smooth noise; B: A delayed by one patch (8 steps)."""
    rng = np.random.default_rng(seed)

    def smooth():
        return np.convolve(rng.normal(size=n + 20), np.ones(5) / 5, mode="same")[:n]

    a, c, d = smooth(), smooth(), smooth()
    b = np.roll(a, 8)
    b[:8] = 0.0
    return TimeSeries.from_values(np.stack([a, b, c, d], 1).astype(np.float32), columns=["A", "B", "C", "D"])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    model = XCTFormerModel(
        input_chunk_length=48, output_chunk_length=8, patch_len=8, stride=8, d_model=16, n_heads=1, d_ff=32,
        e_layers=1, n_epochs=8, batch_size=32, random_state=0, optimizer_kwargs={"lr": 5e-3},
        work_dir=str(tmp_path_factory.mktemp("explain")), pl_trainer_kwargs=QUIET,
    )  # fmt: skip
    return model.fit(delayed_pair())


def test_the_map_finds_the_channel_b_copies(trained):
    strength = channel_dependencies(dependency_map(trained))
    row = strength.loc["B"]
    assert row.idxmax() == "A"
    assert row["A"] > 3 * max(row["C"], row["D"], row["B"]), row  # B reads A, not the unrelated channels


def test_the_map_is_the_mask_labelled(trained):
    dmap = dependency_map(trained)
    config = trained.network.config
    assert dmap.dims == ("layer", "head", "query_patch", "query_channel", "key_patch", "key_channel")
    assert list(dmap.query_channel.values) == ["A", "B", "C", "D"]
    mask = trained.network.encoder.layers[0].attention.mask.detach().numpy()
    c = config.n_channels
    for p, ch, p2, ch2 in [(0, 1, 3, 0), (5, 3, 2, 2), (6, 0, 6, 1)]:
        assert dmap.values[0, 0, p, ch, p2, ch2] == mask[0, p * c + ch, p2 * c + ch2]
    lags = lag_dependencies(dmap)
    assert list(lags.index) == list(range(-(config.patch_num - 1), config.patch_num)) and (lags > 0).all()


def test_attention_map_hooks_leave_the_forward_path_alone(trained):
    net = trained.network
    window = delayed_pair().values()[-48:]
    before = net.eval()(torch.tensor(window)[None]).detach()
    weights = attention_map(trained, delayed_pair())
    after = net(torch.tensor(window)[None]).detach()
    assert torch.equal(before, after) and not net.encoder.layers[0].attention._forward_hooks
    assert weights.dims == ("layer", "head", "query_patch", "query_channel", "key_patch", "key_channel")
    rows = np.abs(weights.values).sum(axis=(-2, -1))
    assert np.all(rows <= 1.0 + 1e-5)  # AbsAct: every row's L1 norm is (just) below one
    np.testing.assert_allclose(attention_map(trained, window).values, weights.values, rtol=1e-6)


def test_decop_has_no_mask_and_offers_the_compressed_attention():
    net = XCTFormerNet(XCTFormerConfig(seq_len=32, n_channels=3, out_len=8, patch_len=8, stride=4, decop_k=5))
    with pytest.raises(ValueError, match="uses DeCoP \\(decop_k=5\\).*attention_map"):
        dependency_map(net)
    weights = attention_map(net, np.random.default_rng(0).normal(size=(32, 3)))
    assert weights.dims[-1] == "slot" and weights.sizes["slot"] == 5
    assert list(weights.query_channel.values) == ["channel 0", "channel 1", "channel 2"]


def test_sktime_estimators_and_plot(tmp_path):
    frame = pd.DataFrame(delayed_pair(600).values(), columns=["A", "B", "C", "D"])
    imputer = XCTFormerImputer(window_length=32, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1,
                               n_epochs=1, validation_fraction=0.0, random_state=0, accelerator="cpu")  # fmt: skip
    imputer.fit(frame)
    dmap = dependency_map(imputer)
    assert list(dmap.key_channel.values) == ["A", "B", "C", "D"]
    path = tmp_path / "map.png"
    plot_dependency_map(dmap, path, title="imputer")
    assert path.stat().st_size > 10_000
    with pytest.raises(ValueError, match="Got 2 channel names for a network of 4 channels"):
        dependency_map(imputer, channel_names=["x", "y"])
    with pytest.raises(TypeError, match="Cannot find an XCTFormer network in a str"):
        dependency_map("model")


def test_a_model_with_future_covariates_maps_its_window_tokens_and_its_decoders_filters(tmp_path):
    series = delayed_pair(400)
    plan = TimeSeries.from_values(np.sin(np.arange(420) / 6)[:, None].astype(np.float32), columns=["plan"])
    model = XCTFormerModel(
        input_chunk_length=48, output_chunk_length=16, patch_len=8, stride=8, d_model=8, n_heads=2, d_ff=16,
        e_layers=2, n_epochs=1, random_state=0, work_dir=str(tmp_path), pl_trainer_kwargs=QUIET,
    )  # fmt: skip
    model.fit(series, future_covariates=plan)
    config = model.network_.config
    p, c = config.patch_num, config.n_token_channels
    window, horizon = dependency_map(model), horizon_dependency_map(model)
    assert window.shape == (2, 2, p, 4, p, 4) and list(window.key_channel.values) == ["A", "B", "C", "D"]
    mask = model.network_.encoder.layers[1].attention.mask.detach().numpy()  # (heads, N, N), patch-major
    assert (
        window.sel(layer=1, head=0, query_patch=3, query_channel="B", key_patch=2, key_channel="D")
        == mask[0, 3 * c + 1, 2 * c + 3]
    )
    decoder = model.network_.known_future
    assert horizon.shape == (decoder.filters.out_channels, 48, decoder.features.skip.out_features)
    features = torch.zeros(1, 48 + 16, horizon.sizes["feature"])
    features[0, 48 + 4 - 7, 2] = 1.0  # feature 2, 7 steps before horizon step 4
    with torch.no_grad():
        response = decoder.filters(features[:, 1:].transpose(1, 2))[0, :, 4] - decoder.filters.bias  # as it reads
    np.testing.assert_allclose(horizon.sel(lag=7, feature=2).values, response.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="no future covariates"):
        horizon_dependency_map(XCTFormerNet(XCTFormerConfig(seq_len=32, n_channels=2, out_len=8)))
