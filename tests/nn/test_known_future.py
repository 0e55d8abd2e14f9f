"""The decoder of known future inputs: each horizon step reads the covariates up to that step, it
learns a nonlinear effect of a step's covariates, standardises with the training data's
statistics, and starts from the paper's forecast."""

import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet
from xct_estimators.nn.known_future import KnownFutureDecoder

L, H, F, C = 32, 8, 2, 3


def decoder(n_params=1) -> KnownFutureDecoder:
    torch.manual_seed(0)
    module = KnownFutureDecoder(8, 4, seq_len=L, n_future=F, future_len=H, out_len=H * n_params, n_channels=C)
    for parameter in module.decode.parameters():  # past the zero start, as after training
        torch.nn.init.normal_(parameter, std=0.3)
    return module.eval()


def inputs(batch=2):
    return (
        torch.randn(batch, C, 32),
        torch.randn(batch, L + H, F),
        torch.randn(batch, 1, C),
        torch.rand(batch, 1, C) + 0.5,
    )


def test_a_step_reads_the_covariates_up_to_it_and_none_after():
    module = decoder()
    channels, known, mean, std = inputs()
    with torch.no_grad():
        out = module(channels, known, mean, std)
        assert out.shape == (2, H, C)
        t0 = 5
        moved = known.clone()
        moved[:, L + t0] += 1.0  # the covariates at horizon step t0 only
        changed = (module(channels, moved, mean, std) - out).abs().amax(dim=(0, 2))
        assert (changed[:t0] == 0).all() and (changed[t0:] > 0).all()
        early = known.clone()
        early[:, t0] += 1.0  # a window value, t0 + 1 steps from its end: within seq_len of steps 0 .. t0 - 1 only
        changed = (module(channels, early, mean, std) - out).abs().amax(dim=(0, 2))
    assert (changed[:t0] > 0).all() and (changed[t0:] == 0).all()


def test_quantiles_are_laid_out_as_the_head_s_outputs():
    module = decoder(n_params=3)
    channels, known, mean, std = inputs(1)
    with torch.no_grad():
        out = module(channels, known, mean, std).view(1, H, 3, C)
        moved = known.clone()
        moved[:, L + 2] += 1.0
        changed = (module(channels, moved, mean, std).view(1, H, 3, C) - out).abs().amax(dim=(0, 3))
    assert (changed[:2] == 0).all() and (changed[2:] > 0).all()  # every quantile of step 2 on, none before


def test_covariates_in_other_units_give_the_same_forecast_once_standardised():
    """Statistics set from the training data make the decoder read standardised covariates, level
    and spread: the same inputs in other units (a x + b) give the same output."""
    module = decoder()
    channels, known, mean, std = inputs()
    with torch.no_grad():
        plain = module(channels, known, mean, std)
        a, b = torch.tensor([9 / 5, 100.0]), torch.tensor([32.0, -5.0])
        module.set_statistics(b, a, torch.full((C,), 7.0), torch.full((C,), 3.0))
        scaled = module(channels, known * a + b, mean * 3.0 + 7.0, std * 3.0)
    torch.testing.assert_close(scaled, plain, rtol=1e-4, atol=1e-4)
    constant = torch.tensor([0.5, 1e15])  # constant in training: std 0, scaled by the size of the constant
    module.set_statistics(constant, torch.zeros(F), torch.zeros(C), torch.zeros(C))
    assert module.known_std.tolist() == [1.0, float(torch.tensor(1e15))] and (module.level_std == 1).all()


def fitted_error(target, lag: int = 0, decoder_class=None, steps: int = 300) -> float:
    """Train a small network whose one target is ``target(x)`` of its one future covariate (white
    noise: the covariates are the only signal), ``steps`` Adam steps of 64 windows; returns the
    held-out MSE as a share of the target's variance."""
    torch.manual_seed(0)
    config = XCTFormerConfig(
        seq_len=L, n_channels=2, out_len=H, patch_len=8, stride=8, d_model=8, n_heads=1, d_ff=16, e_layers=1,
        n_future_channels=1, future_len=H,
    )  # fmt: skip
    net = XCTFormerNet(config)
    if decoder_class is not None:
        net.known_future = decoder_class(config.patch_num, 8, L, 1, H, H, 1)
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)

    def batch(n: int):
        x = torch.randn(n, L + H + lag, 1)
        y, x = target(x)[:, lag:], x[:, lag:]  # y(t) may read x up to lag steps back
        return torch.cat([y[:, :L], x[:, :L]], dim=-1), x[:, L:], y[:, L:]

    for _ in range(steps):
        window, future, truth = batch(64)
        loss = (net(window, n_outputs=1, future=future) - truth).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    window, future, truth = batch(2000)
    with torch.no_grad():
        return float((net.eval()(window, n_outputs=1, future=future) - truth).square().mean() / truth.var())


@pytest.mark.parametrize("name, target", [("square", lambda x: x**2), ("step", lambda x: (x > 0).float())])
def test_the_decoder_learns_a_nonlinear_effect_of_the_same_step(name, target):
    assert fitted_error(target) < 0.1


def test_a_network_with_future_covariates_starts_from_the_papers_forecast():
    config = XCTFormerConfig(seq_len=L, n_channels=3, out_len=H, patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16,
                             e_layers=1, n_future_channels=1, future_len=H)  # fmt: skip
    torch.manual_seed(0)
    net = XCTFormerNet(config).eval()
    paper = XCTFormerNet(config.replace(n_channels=2, n_future_channels=0, future_len=0)).eval()
    paper.load_state_dict({k: v for k, v in net.state_dict().items() if not k.startswith("known_future")})
    x, future = torch.randn(2, L, 3), torch.randn(2, H, 1)
    with torch.no_grad():
        torch.testing.assert_close(net(x, n_outputs=2, future=future), paper(x[..., :2]))
    net.train()
    net(x, n_outputs=2, future=future).square().sum().backward()
    assert net.known_future.decode.skip.weight.grad.abs().sum() > 0  # and training moves it off zero


def test_an_additive_lagged_effect_is_learned_as_well_as_by_the_decoder_of_0_1_0():
    from benchmarks.measure.decoders import Filters  # the decoder of 0.1.0, kept in the lab

    three_steps_later = lambda x: 0.8 * torch.roll(x, 3, dims=1)  # noqa: E731
    new = fitted_error(three_steps_later, lag=3)
    old = fitted_error(three_steps_later, lag=3, decoder_class=Filters)
    assert new < 0.05 and new <= old


def test_pairwise_is_the_mlp_of_every_step_and_channel_concatenated():
    from xct_estimators.nn.known_future import ResidualMLP, pairwise

    torch.manual_seed(0)
    mlp = ResidualMLP(5 + 3, 16, 2)
    step, context = torch.randn(2, 7, 5), torch.randn(2, 4, 3)
    both = torch.cat([step[:, :, None].expand(2, 7, 4, 5), context[:, None].expand(2, 7, 4, 3)], dim=-1)
    torch.testing.assert_close(pairwise(mlp, step, context), mlp(both))


def test_the_addition_is_in_the_data_s_units_and_the_gain_on_the_window_s_level():
    """``d level_std / std + g (mean + offset level_std) / std``: twice the training spread, twice
    the addition; the gain's part moves with the window's mean, the addition's does not."""
    module = decoder()
    channels, known, mean, std = inputs()
    with torch.no_grad():
        base = module(channels, known, mean, std)
        module.level_std.fill_(2.0)
        torch.testing.assert_close(module(channels, known, mean, std), 2 * base)  # the gain starts at zero
        assert module(channels, known, mean + 5.0, std).equal(module(channels, known, mean, std))
        for parameter in module.gain.parameters():
            torch.nn.init.normal_(parameter, std=0.3)
        with_gain = module(channels, known, mean, std)
        gain = with_gain - 2 * base  # g mean / std
        torch.testing.assert_close(module(channels, known, 3 * mean, std) - 2 * base, 3 * gain)
