"""The decoder of known future inputs: each horizon step reads the covariates up to that step,
each target channel mixes the filters' responses by its own tokens, it starts at zero, and
training drops it for whole samples."""

import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet
from xct_estimators.nn.known_future import DROP, FILTERS, KnownFutureDecoder

L, H, F, C = 32, 8, 2, 3


def decoder(n_params=1) -> KnownFutureDecoder:
    torch.manual_seed(0)
    module = KnownFutureDecoder(patch_num=8, d_model=4, seq_len=L, n_future=F, future_len=H, out_len=H * n_params)
    torch.nn.init.normal_(module.mixing.weight)  # past the zero start, as after training
    return module.eval()


def test_a_step_reads_the_covariates_up_to_it_and_none_after():
    module = decoder()
    channels, known = torch.randn(2, C, 32), torch.randn(2, L + H, F)
    out = module(channels, known)
    assert out.shape == (2, H, C)
    t0 = 5
    moved = known.clone()
    moved[:, L + t0] += 1.0  # the covariates at horizon step t0 only
    changed = (module(channels, moved) - out).abs().amax(dim=(0, 2))
    assert (changed[:t0] == 0).all() and (changed[t0:] > 0).all()
    early = known.clone()
    early[:, t0] += 1.0  # a window value, t0 + 1 steps from its end: within seq_len of steps 0 .. t0 - 1 only
    changed = (module(channels, early) - out).abs().amax(dim=(0, 2))
    assert (changed[:t0] > 0).all() and (changed[t0:] == 0).all()


def test_each_channel_mixes_the_same_filters_by_its_own_tokens():
    module = decoder(n_params=3)  # three quantiles: an output per step and quantile
    channels, known = torch.randn(1, C, 32), torch.randn(1, L + H, F)
    out = module(channels, known).view(1, H, 3, C)
    responses = module.filters(known[:, 1:].unfold(1, L, 1).flatten(2))  # (1, H, r)
    mixing = module.mixing(channels).view(1, C, 3, FILTERS)
    expected = torch.stack([responses @ mixing[:, c].transpose(1, 2) for c in range(C)], dim=-1)  # (1, H, 3, C)
    torch.testing.assert_close(out, expected)


def test_training_drops_the_decoder_for_whole_samples_and_scales_the_rest():
    module = decoder()
    channels, known = torch.randn(400, C, 32), torch.randn(400, L + H, F)
    with torch.no_grad():
        full = module(channels, known)
        trained = module.train()(channels, known)
    dropped = (trained == 0).flatten(1).all(dim=1)
    torch.testing.assert_close(trained[~dropped], full[~dropped] / (1 - DROP))
    assert 0.5 * DROP < dropped.float().mean() < 1.5 * DROP


def test_a_network_with_future_covariates_starts_from_the_papers_forecast():
    config = XCTFormerConfig(seq_len=L, n_channels=3, out_len=H, patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16,
                             e_layers=1, n_future_channels=1, future_len=H)  # fmt: skip
    torch.manual_seed(0)
    net = XCTFormerNet(config).eval()
    x, future = torch.randn(2, L, 3), torch.randn(2, H, 1)
    with torch.no_grad():
        out = net(x, n_outputs=2, future=future)
        net.known_future.filters.weight.add_(1.0)  # the filters alone change nothing while the mixing is zero
        torch.testing.assert_close(net(x, n_outputs=2, future=future), out)
    net.train()
    net(x, n_outputs=2, future=future).square().sum().backward()
    assert net.known_future.mixing.weight.grad.abs().sum() > 0  # and training moves it off zero
