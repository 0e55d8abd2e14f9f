"""The decoder of known future inputs: the effect at a step reads the covariates up to that step,
it can be any function of a step's covariates, it is in the data's units; the network takes the
window's effects off the window and adds the horizon's to its forecast, starting from the paper's."""

import math
from unittest import mock

import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet
from xct_estimators.nn.known_future import KnownFutureDecoder, pairwise

L, H, F, C = 32, 8, 2, 3


def trained(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` with its parameters past their zero start, as after training."""
    for parameter in module.parameters():
        torch.nn.init.normal_(parameter, std=0.3)
    return module


def decoder(gain: bool = False) -> KnownFutureDecoder:
    torch.manual_seed(0)
    module = KnownFutureDecoder(L, F, C)
    trained(module.decode)
    if gain:
        trained(module.gain)
    return module.eval()


def inputs(batch=2):
    return torch.randn(batch, L + H, F), torch.randn(batch, 1, C)


def test_an_effect_reads_the_covariates_of_its_step_and_the_window_before_it_and_none_after():
    module = decoder(gain=True)
    known, level = inputs()
    with torch.no_grad():
        out = module(known, level)
        assert out.shape == (2, L + H, C)
        for step in (3, L + 5):
            moved = known.clone()
            moved[:, step] += 1.0
            changed = (module(moved, level) - out).abs().amax(dim=(0, 2))
            reached = torch.zeros(L + H, dtype=torch.bool)
            reached[step : step + L] = True  # the filters reach L steps forward from a step
            assert (changed[~reached] == 0).all() and (changed[reached] > 0).all()


def test_effects_are_in_the_data_s_units_and_the_gain_scales_with_the_window_s_level():
    """``d level_std + g (level - floor + softplus(offset) level_std)``: covariates in other units
    (a x + b) give the same effects once standardised; twice the training spread, twice ``d``'s
    part; ``g``'s part is proportional to the window's level above the training floor, plus a
    margin of ``softplus(offset)`` training spreads."""
    module = decoder()
    known, level = inputs()
    with torch.no_grad():
        plain = module(known, level)
        a, b = torch.tensor([9 / 5, 100.0]), torch.tensor([32.0, -5.0])
        floor = torch.linspace(-1.0, 2.0, C)
        module.set_statistics(b, a, torch.full((C,), 7.0), torch.full((C,), 2.0), level_floor=floor)
        torch.testing.assert_close(module(known * a + b, level * 5.0), 2 * plain, rtol=1e-4, atol=1e-4)
        trained(module.gain)
        gain_part = lambda lvl: module(known * a + b, lvl) - 2 * plain  # noqa: E731
        module.offset.fill_(-40.0)  # softplus(-40) ~ 4e-18: no margin
        torch.testing.assert_close(gain_part(floor.expand_as(level)), torch.zeros_like(plain), rtol=0, atol=1e-5)
        above = level.abs()
        assert gain_part(floor + above).abs().amin() > 0
        torch.testing.assert_close(gain_part(floor + 3 * above), 3 * gain_part(floor + above), rtol=1e-4, atol=1e-5)
        margin = gain_part((floor + 2.0 * math.log(2.0)).expand_as(level))  # softplus(0) = log 2 spreads of 2.0
        module.offset.zero_()
        torch.testing.assert_close(gain_part(floor.expand_as(level)), margin, rtol=1e-4, atol=1e-5)
    constant = torch.tensor([0.5, 1e15])  # constant in training: std 0, scaled by the size of the constant
    module.set_statistics(constant, torch.zeros(F), torch.zeros(C), torch.zeros(C))
    assert module.known_std.tolist() == [1.0, float(torch.tensor(1e15))] and (module.level_std == 1).all()


def test_a_pickle_of_the_decoder_without_the_gain_is_refused():
    """An sktime forecaster pickles its trained network: one pickled by a development build without
    the gain would otherwise load and fail at its first forecast with an error that names no cause."""
    import pickle

    module = decoder(gain=True)
    known, level = inputs(1)
    restored = pickle.loads(pickle.dumps(module))
    torch.testing.assert_close(restored(known, level), module(known, level))
    del module.gain, module.offset, module.level_floor  # as such a build held it
    with pytest.raises(ValueError, match="lacks this one's gain on the window's level(.|\n)*refit the model"):
        pickle.loads(pickle.dumps(module))


def test_weights_without_the_gain_are_refused_by_name_and_only_they():
    weights = {f"kf.{name}": value for name, value in decoder().state_dict().items()}
    holder = torch.nn.Module()
    holder.kf, holder.other = decoder(), torch.nn.Module()
    holder.load_state_dict(weights)
    without = {name: value for name, value in weights.items() if not name.startswith(("kf.gain.", "kf.offset"))}
    for strict in (True, False):
        with pytest.raises(ValueError, match=r"\(its weights lack kf.gain, kf.offset\)"):
            holder.load_state_dict(without, strict)


def config(**changes) -> XCTFormerConfig:
    base = dict(seq_len=L, n_channels=3, out_len=H, patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16,
                e_layers=1, n_future_channels=1, future_len=H)  # fmt: skip
    return XCTFormerConfig(**{**base, **changes})


def with_paper(net: XCTFormerNet) -> XCTFormerNet:
    """The paper's network with ``net``'s weights: the same without its future covariate."""
    c = net.config
    paper = XCTFormerNet(c.replace(n_channels=c.n_channels - 1, n_future_channels=0, future_len=0)).eval()
    paper.load_state_dict({k: v for k, v in net.state_dict().items() if not k.startswith("known_future")})
    return paper


def test_a_network_with_future_covariates_starts_from_the_papers_forecast():
    torch.manual_seed(0)
    net = XCTFormerNet(config()).eval()
    x, future = torch.randn(2, L, 3), torch.randn(2, H, 1)
    with torch.no_grad():
        torch.testing.assert_close(net(x, n_outputs=2, future=future), with_paper(net)(x[..., :2]))
    net.train()
    net(x, n_outputs=2, future=future).square().sum().backward()
    assert net.known_future.decode.skip.weight.grad.abs().sum() > 0  # and training moves it off zero


@pytest.mark.parametrize("n_outputs", [2, 1])  # 1: the second channel is a past covariate, left as it is
def test_the_network_forecasts_what_the_effects_leave_and_adds_the_horizon_s_effects(n_outputs):
    """A regression with forecast errors: net(window) = paper(window - its effects) + the horizon's
    effects, the effects read off the covariates and the targets' own window level; a past
    covariate, which nobody forecasts, keeps its values."""
    torch.manual_seed(0)
    net = XCTFormerNet(config()).eval()
    trained(net.known_future)
    x, future = torch.randn(2, L, 3) + 4.0, torch.randn(2, H, 1)
    with torch.no_grad():
        known = torch.cat([x[..., 2:], future], dim=1)
        effects = net.known_future(known, x[..., :n_outputs].mean(dim=1, keepdim=True))
        assert effects.shape == (2, L + H, n_outputs) and effects.abs().amin() > 0
        window = x[..., :2].clone()
        window[..., :n_outputs] -= effects[:, :L]
        expected = with_paper(net)(window, n_outputs=n_outputs) + effects[:, L:]
        torch.testing.assert_close(net(x, n_outputs=n_outputs, future=future), expected)


def shifted_forecast_error(network=XCTFormerNet) -> float:
    """The largest gap between the forecast of a window shifted by 5 and the forecast shifted by 5,
    with covariates that do not change and a trained decoder."""
    torch.manual_seed(0)
    net = network(config()).eval()
    trained(net.known_future)
    x, future = torch.randn(2, L, 3), torch.full((2, H, 1), 0.7)
    x[..., 2] = 0.7
    shifted = x.clone()
    shifted[..., :2] += 5.0
    with torch.no_grad():
        return float((net(shifted, n_outputs=2, future=future) - net(x, n_outputs=2, future=future) - 5.0).abs().max())


def test_the_window_s_level_moves_the_horizon_only_as_far_as_the_covariates_say():
    """With covariates that do not change, the gain is the same at every step, so a window shifted
    by ``c`` gives a forecast shifted by ``c``, as the paper's network's; the lab's ``regression``
    decoder (its gain read the filters, zero before the window) could tell horizon from window steps
    and pull the horizon toward the training period's level."""
    from benchmarks.measure.decoders import Regression, with_candidate  # that decoder, kept in the lab

    assert shifted_forecast_error() < 1e-4
    assert shifted_forecast_error(with_candidate(Regression)) > 0.1


def test_covariates_that_hold_one_value_leave_the_paper_s_forecast():
    """The instance normalisation takes a constant off the window and the network adds it back, so
    covariates that hold one value over window and horizon change no forecast, whatever the decoder
    learned, as long as nothing tells a window step from a horizon step: the filters read the
    window's first step before it, not zeros (zeros gave early window steps responses of their own)."""
    torch.manual_seed(0)
    net = XCTFormerNet(config()).eval()
    trained(net.known_future)
    x, future = torch.randn(2, L, 3), torch.full((2, H, 1), 0.7)
    x[..., 2] = 0.7
    with torch.no_grad():
        torch.testing.assert_close(
            net(x, n_outputs=2, future=future), with_paper(net)(x[..., :2]), rtol=1e-4, atol=1e-4
        )


def test_unobserved_nan_inputs_give_finite_gradients_with_future_covariates():
    torch.manual_seed(0)
    net = XCTFormerNet(config())
    trained(net.known_future.decode)
    x, future = torch.randn(2, L, 3), torch.randn(2, H, 1)
    mask = torch.rand(2, L, 3) > 0.3
    mask[..., 2] = True  # the known covariate is observed
    x = torch.where(mask, x, torch.nan)
    out = net(x, mask=mask, n_outputs=2, future=future)
    out.square().sum().backward()
    assert out.isfinite().all()
    assert all(p.grad.isfinite().all() for p in net.parameters() if p.grad is not None)


def test_every_quantile_of_a_step_moves_with_its_horizon_covariates_alike():
    torch.manual_seed(0)
    net = XCTFormerNet(config(out_len=3 * H)).eval()  # three outputs a step, laid out step by step
    trained(net.known_future.decode)
    x, future = torch.randn(1, L, 3), torch.randn(1, H, 1)
    with torch.no_grad():
        out = net(x, future=future).view(H, 3, 2)
        moved = future.clone()
        moved[:, 2] += 1.0
        changed = net(x, future=moved).view(H, 3, 2) - out
    assert (changed[:2] == 0).all() and (changed[2:].abs() > 0).all()
    torch.testing.assert_close(changed, changed[:, :1].expand(H, 3, 2))


def fitted_error(target, lag: int = 0, network=XCTFormerNet, steps: int = 300) -> float:
    """Train a small network whose one target is ``target(x)`` of its one future covariate (white
    noise: the covariates are the only signal), ``steps`` Adam steps of 64 windows; returns the
    held-out MSE as a share of the target's variance."""
    torch.manual_seed(0)
    net = network(config(n_channels=2, stride=8, n_heads=1))
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


def test_an_additive_lagged_effect_is_learned_as_well_as_by_the_decoder_of_0_1_0():
    from benchmarks.measure.decoders import Filters, with_candidate  # the decoder of 0.1.0, kept in the lab

    three_steps_later = lambda x: 0.8 * torch.roll(x, 3, dims=1)  # noqa: E731
    new = fitted_error(three_steps_later, lag=3)
    old = fitted_error(three_steps_later, lag=3, network=with_candidate(Filters))
    assert new < 0.05 and new <= old


def test_pairwise_is_the_mlp_of_every_step_and_channel_concatenated():
    from xct_estimators.nn.known_future import ResidualMLP

    torch.manual_seed(0)
    mlp = ResidualMLP(5 + 3, 16, 2)
    step, context = torch.randn(2, 7, 5), torch.randn(2, 4, 3)
    both = torch.cat([step[:, :, None].expand(2, 7, 4, 5), context[:, None].expand(2, 7, 4, 3)], dim=-1)
    torch.testing.assert_close(pairwise(mlp, step, context), mlp(both))


@pytest.mark.parametrize("dtype, batch, steps", [(torch.float64, 3, 7), (torch.float32, 4, 300)])
def test_in_training_the_kernel_gives_the_values_and_gradients_of_the_concatenated_mlp(dtype, batch, steps):
    from xct_estimators.nn import crab_kernel
    from xct_estimators.nn.known_future import ResidualMLP, _kernel_for

    torch.manual_seed(0)
    mlp = trained(ResidualMLP(5 + 3, 16, 1)).to(dtype).train()
    step = torch.randn(batch, steps, 5, dtype=dtype, requires_grad=True)
    context = torch.randn(batch, 4, 3, dtype=dtype, requires_grad=True)
    if crab_kernel.load() is None:
        pytest.skip(f"the C++ kernels are not built here: {crab_kernel.unavailable_reason()}")
    assert _kernel_for(mlp, step) is not None, "a training step on CPU takes the kernel"
    both = torch.cat([step[:, :, None].expand(-1, -1, 4, 5), context[:, None].expand(-1, steps, 4, 3)], dim=-1)
    weights = torch.randn(batch, steps, 4, 1, dtype=dtype)
    leaves = [step, context, *mlp.parameters()]
    fused, plain = pairwise(mlp, step, context), mlp(both)
    torch.testing.assert_close(fused, plain)
    for got, want in zip(torch.autograd.grad((fused * weights).sum(), leaves),
                         torch.autograd.grad((plain * weights).sum(), leaves), strict=True):  # fmt: skip
        torch.testing.assert_close(
            got, want, rtol=1e-4 if dtype == torch.float32 else None, atol=1e-4 if dtype == torch.float32 else None
        )


def test_in_training_the_filters_by_fft_give_the_convolution_s_responses_and_gradients():
    module = trained(KnownFutureDecoder(L, F, C)).double()
    features = torch.randn(2, module.filters.in_channels, L - 1 + L + H, dtype=torch.float64, requires_grad=True)
    leaves = [features, *module.filters.parameters()]  # the features' gradient reaches the feature MLP
    results = []
    for training in (True, False):
        module.train(training)
        responses = module.filtered(features)
        weights = torch.randn_like(responses, generator=torch.Generator().manual_seed(1))
        results.append((responses, torch.autograd.grad((responses * weights).sum(), leaves)))
    (fft, fft_grads), (convolution, convolution_grads) = results
    assert fft.shape == (2, 16, L + H)
    torch.testing.assert_close(fft, convolution)
    for got, want in zip(fft_grads, convolution_grads, strict=True):
        torch.testing.assert_close(got, want)


def _covariate_network():
    torch.manual_seed(0)
    net = XCTFormerNet(config(n_channels=4, n_future_channels=2, dropout=0.0, fc_dropout=0.0, attn_dropout=0.0)).train()
    trained(net.known_future)
    return net, torch.randn(3, L, 4), torch.randn(3, H, 2)


def test_a_training_step_with_covariates_runs_under_cpu_autocast():
    net, x, future = _covariate_network()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(x, future=future)
    out.float().square().mean().backward()
    assert torch.isfinite(out).all() and torch.isfinite(net.known_future.features.skip.weight.grad).all()


def test_a_training_step_with_covariates_compiles_as_one_graph():
    net, x, future = _covariate_network()
    compiled = torch.compile(net, backend="aot_eager", fullgraph=True)
    torch.manual_seed(0)  # the same dropout draws
    expected = net(x, future=future)
    torch.manual_seed(0)
    torch.testing.assert_close(compiled(x, future=future), expected, rtol=1e-4, atol=1e-4)


def test_the_decoder_drops_out_in_training_only_where_it_says():
    """In training, dropout at TiDE's rate, once on the feature MLP's hidden layer and once on the
    step's inputs (which decoding and gain both read); evaluation gives the same weights' effects
    without it."""
    import xct_estimators.nn.known_future as kf

    torch.manual_seed(0)
    module = trained(KnownFutureDecoder(L, F, C))
    known, level = inputs()
    with torch.no_grad(), mock.patch.object(KnownFutureDecoder, "DROPOUT", 0.0):
        undropped = KnownFutureDecoder(L, F, C)
        undropped.load_state_dict(module.state_dict())
        expected = undropped.train()(known, level)
    with torch.no_grad():
        torch.testing.assert_close(module.eval()(known, level), expected)
        assert not torch.allclose(module.train()(known, level), expected)
    calls, real = [], torch.nn.functional.dropout

    def spy(x, p, training):
        calls.append((x.shape[-1], p, training))
        return real(x, p, training)

    with mock.patch.object(kf.F, "dropout", spy), torch.no_grad():
        module.train()(known, level)
    expected_calls = [(kf.FEATURE_HIDDEN, kf.DROPOUT, True), (kf.FILTERS + kf.FEATURES, kf.DROPOUT, True)]
    assert calls == expected_calls  # in this order: a seed's draws reproduce the lab's rows


def test_the_gain_reads_the_mean_of_the_observed_window():
    """The network gives its decoder the targets' window mean over observed points."""
    torch.manual_seed(0)
    net = XCTFormerNet(config()).eval()
    seen = []
    net.known_future.register_forward_pre_hook(lambda module, args: seen.append(args[1]))
    x, future = torch.randn(2, L, 3) + 3.0, torch.randn(2, H, 1)
    mask = torch.rand(2, L, 3) > 0.3
    mask[..., 2] = True
    with torch.no_grad():
        net(torch.where(mask, x, torch.nan), mask=mask, n_outputs=2, future=future)
    observed = mask[..., :2]
    expected = torch.where(observed, x[..., :2], 0.0).sum(1, keepdim=True) / observed.sum(1, keepdim=True)
    torch.testing.assert_close(seen[0], expected)


def test_a_block_pickled_before_its_dropout_rate_forwards_without_dropout():
    """A development build's pickle has no ``dropout`` attribute: it unpickles as a block with none."""
    import pickle

    from xct_estimators.nn.known_future import ResidualMLP

    block = trained(ResidualMLP(F, 4, 1))
    del block.__dict__["dropout"]  # as such a pickle holds it
    loaded = pickle.loads(pickle.dumps(block)).train()
    x = torch.randn(5, F)
    torch.testing.assert_close(loaded(x), loaded.eval()(x))
