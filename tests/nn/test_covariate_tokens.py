"""Covariates and tokens: static covariates join the token sequence, future covariates leave it
for the known-future decoder; without them the network is the paper's."""

import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet

BASE = dict(seq_len=32, n_channels=3, out_len=8, patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16, e_layers=1)


def net(**covariates) -> XCTFormerNet:
    torch.manual_seed(0)
    return XCTFormerNet(XCTFormerConfig(**BASE, **covariates)).eval()


def test_without_covariates_the_network_is_unchanged_parameter_for_parameter():
    plain = net()
    names = {name for name, _ in plain.named_parameters()}
    assert not any("future" in name or "static" in name for name in names)
    assert plain.config.n_tokens == plain.config.patch_num * 3
    assert plain.config.architecture() == XCTFormerConfig(**BASE, n_future_channels=1, future_len=8).architecture()


def test_token_counts_and_the_learnable_mask_cover_the_covariate_tokens():
    config = XCTFormerConfig(**BASE, n_future_channels=1, future_len=8, n_static_tokens=2, static_features=4)
    # window: 8 patches x 2 channels (the future covariate is the decoder's); 2 static rows
    assert (config.patch_num, config.n_token_channels) == (8, 2)
    assert config.n_tokens == 8 * 2 + 2
    assert net(n_future_channels=1, future_len=8, n_static_tokens=2, static_features=4).encoder.layers[
        0
    ].attention.mask.shape == (2, 18, 18)


def test_forecasts_depend_on_the_future_and_static_inputs():
    model = net(n_future_channels=1, future_len=8, n_static_tokens=2, static_features=4)
    for parameter in model.known_future.decode.parameters():  # past its zero start, as after training
        torch.nn.init.normal_(parameter, std=0.3)
    x, future, static = torch.randn(4, 32, 3), torch.randn(4, 8, 1), torch.randn(4, 2, 4)
    with torch.no_grad():
        out = model(x, n_outputs=2, future=future, static=static)
        assert out.shape == (4, 8, 2)
        assert not torch.allclose(out, model(x, n_outputs=2, future=future + 1.0, static=static))
        assert not torch.allclose(out, model(x, n_outputs=2, future=future, static=static * 2))
        # each sample's forecast sees its own covariates only
        changed = future.clone()
        changed[1] += 1.0
        other = model(x, n_outputs=2, future=changed, static=static)
    assert torch.allclose(out[[0, 2, 3]], other[[0, 2, 3]]) and not torch.allclose(out[1], other[1])


def test_a_horizon_shorter_than_a_patch_is_decoded():
    torch.manual_seed(0)
    model = XCTFormerNet(XCTFormerConfig(**{**BASE, "out_len": 6}, n_future_channels=2, future_len=3)).eval()
    with torch.no_grad():
        assert model(torch.randn(2, 32, 3), future=torch.randn(2, 3, 2)).shape == (2, 6, 1)  # 2 outputs a step


@pytest.mark.parametrize(
    "covariates, message",
    [
        (dict(n_future_channels=3, future_len=8), "n_future_channels=3 leaves none of n_channels=3"),
        (dict(n_future_channels=1), "both set"),
        (dict(n_static_tokens=1), "both set"),
        (dict(n_static_tokens=1, static_features=2, mixing="time"), "use mixing='full'"),
        (dict(n_static_tokens=-1, static_features=2), "non-negative integer"),
        (dict(n_future_channels=1, future_len=3), "out_len=8 is not a multiple of future_len=3"),
    ],
)
def test_bad_covariate_sizes_are_clear_errors(covariates, message):
    with pytest.raises(ValueError, match=message):
        XCTFormerConfig(**BASE, **covariates)


def test_missing_or_misshapen_covariates_are_clear_errors():
    model = net(n_future_channels=1, future_len=8)
    x = torch.randn(2, 32, 3)
    with pytest.raises(ValueError, match=r"expects future of shape \(batch, future_len, n_future_channels\)"):
        model(x)
    with pytest.raises(ValueError, match=r"got shape \(2, 7, 1\)"):
        model(x, future=torch.randn(2, 7, 1))
    with pytest.raises(ValueError, match=r"expects static of none \(the config has 0\)"):
        model(x, future=torch.randn(2, 8, 1), static=torch.randn(2, 1, 1))
    with pytest.raises(ValueError, match=r"n_outputs=3: the network decodes 1 to 2 channels"):
        model(x, n_outputs=3, future=torch.randn(2, 8, 1))


def test_the_decoder_reads_the_future_covariates_as_given_over_window_and_horizon():
    """The known-future decoder gets the covariates' window values and horizon values unchanged (it
    standardises them with the training data's statistics), the targets' window means, and the
    static covariates standardised as the static tokens read them."""
    model = net(n_future_channels=1, future_len=8, n_static_tokens=2, static_features=4)
    model.static_mean.fill_(1.0), model.static_std.fill_(2.0)
    seen = []
    model.known_future.register_forward_pre_hook(lambda module, args: seen.append(args))
    x, future, static = torch.randn(1, 32, 3), torch.randn(1, 8, 1), torch.randn(1, 2, 4)
    with torch.no_grad():
        model(x, future=future, static=static)
    ((known, level, standardised),) = seen
    torch.testing.assert_close(known, torch.cat([x[..., 2:], future], dim=1))
    torch.testing.assert_close(level, x[..., :2].mean(dim=1, keepdim=True))
    torch.testing.assert_close(standardised, (static - 1.0) / 2.0)


def test_a_time_or_channel_ablation_takes_future_covariates():
    model = net(n_future_channels=1, future_len=8, mixing="channel")
    with torch.no_grad():
        assert model(torch.randn(2, 32, 3), n_outputs=2, future=torch.randn(2, 8, 1)).shape == (2, 8, 2)
