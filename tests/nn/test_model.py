import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet, get_preset

# Trainable parameter counts measured from the authors' code for the paper's configs
# (task, dataset, out_len, params).
REFERENCE_PARAMS = [
    ("forecast", "ETTh1", 96, 17200),
    ("forecast", "ETTh1", 192, 26512),
    ("forecast", "ETTh1", 336, 40480),
    ("forecast", "ETTh1", 720, 77728),
    ("forecast", "ETTh2", 96, 79284),
    ("forecast", "ETTh2", 192, 113940),
    ("forecast", "ETTh2", 336, 165924),
    ("forecast", "ETTh2", 720, 304548),
    ("forecast", "ETTm1", 96, 111424),
    ("forecast", "ETTm1", 192, 148384),
    ("forecast", "ETTm1", 336, 203824),
    ("forecast", "ETTm1", 720, 351664),
    ("forecast", "ETTm2", 96, 675568),
    ("forecast", "ETTm2", 192, 933712),
    ("forecast", "ETTm2", 336, 1320928),
    ("forecast", "ETTm2", 720, 2353504),
    ("forecast", "Electricity", 96, 3071368),
    ("forecast", "Electricity", 192, 3357160),
    ("forecast", "Electricity", 336, 3785848),
    ("forecast", "Electricity", 720, 4929016),
    ("forecast", "traffic", 96, 31383304),
    ("forecast", "traffic", 192, 31669096),
    ("forecast", "traffic", 336, 32097784),
    ("forecast", "traffic", 720, 33240952),
    ("forecast", "weather", 96, 2158288),
    ("forecast", "weather", 192, 2444080),
    ("forecast", "weather", 336, 2872768),
    ("forecast", "weather", 720, 4015936),
    ("impute", "ETTh1", 1024, 10071488),
    ("impute", "ETTh2", 1024, 6029632),
    ("impute", "ETTm1", 1024, 22456000),
    ("impute", "ETTm2", 1024, 18667392),
    ("impute", "Electricity", 1024, 14720192),
    ("impute", "weather", 1024, 47761792),
    ("anomaly", "MSL", 100, 4853732),
    ("anomaly", "PSM", 100, 1548932),
    ("anomaly", "SMAP", 100, 1575060),
    ("anomaly", "SMD", 100, 1077724),
    ("anomaly", "SWaT", 100, 1390276),
]


@pytest.mark.parametrize(("task", "dataset", "out_len", "expected"), REFERENCE_PARAMS)
def test_parameter_count_matches_reference(task, dataset, out_len, expected):
    config = get_preset(dataset, task).config(out_len=out_len)
    with torch.device("meta"):  # counts only: no memory for 47M-parameter masks
        net = XCTFormerNet(config)
    assert net.num_parameters() == expected


def small_config(**changes):
    fields = dict(
        seq_len=48,
        n_channels=3,
        out_len=24,
        patch_len=8,
        stride=4,
        d_model=16,
        n_heads=2,
        d_ff=32,
        e_layers=2,
        dropout=0.1,
        fc_dropout=0.1,
        attn_dropout=0.2,
    )
    fields.update(changes)
    return XCTFormerConfig(**fields)


@pytest.mark.parametrize("decop_k", [None, 6])
def test_forecast_and_reconstruction_shapes(decop_k):
    forecast = XCTFormerNet(small_config(decop_k=decop_k))
    assert forecast(torch.randn(5, 48, 3)).shape == (5, 24, 3)
    reconstruct = XCTFormerNet(small_config(out_len=48, decop_k=decop_k))
    mask = torch.rand(5, 48, 3) > 0.25
    assert reconstruct(torch.randn(5, 48, 3), mask=mask).shape == (5, 48, 3)


def test_token_count_follows_patch_formula():
    config = small_config(seq_len=100, patch_len=16, stride=8, n_channels=4)
    assert config.patch_num == (100 - 16) // 8 + 2 == 12
    assert config.n_tokens == 48
    tokens = XCTFormerNet(config).tokenizer(torch.randn(2, 100, 4))
    assert tokens.shape == (2, 48, 16)


def test_tokens_are_patch_major_channel_minor():
    net = XCTFormerNet(small_config(dropout=0.0)).eval()
    x = torch.randn(1, 48, 3)
    tokens = net.tokenizer(x)
    # Token p * C + c is channel c's patch p: rebuild it by hand.
    p, c = 2, 1
    padded = torch.cat([x[0, :, c], x[0, -1:, c].expand(4)])
    patch = padded[p * 4 : p * 4 + 8]
    expected = net.tokenizer.projection(patch) + net.tokenizer.position[p]
    torch.testing.assert_close(tokens[0, p * 3 + c], expected)


@pytest.mark.parametrize("decop_k", [None, 6])
def test_batch_independence_in_eval_mode(decop_k):
    net = XCTFormerNet(small_config(decop_k=decop_k)).eval()
    for _ in range(2):  # running statistics away from their init values
        net.train()(torch.randn(16, 48, 3) * 3 + 1)
    net.eval()
    sample = torch.randn(1, 48, 3)
    batch = torch.cat([torch.randn(7, 48, 3) * 10, sample, torch.randn(4, 48, 3) * 0.1])
    with torch.no_grad():
        alone = net(sample)
        inside = net(batch)[7:8]
    torch.testing.assert_close(inside, alone, rtol=0, atol=1e-6)


def test_gradients_reach_mask_and_compressor():
    crab = XCTFormerNet(small_config())
    crab(torch.randn(4, 48, 3)).square().mean().backward()
    for layer in crab.encoder.layers:
        assert layer.attention.mask.grad is not None
        assert layer.attention.mask.grad.abs().sum() > 0
    decop = XCTFormerNet(small_config(decop_k=6))
    decop(torch.randn(4, 48, 3)).square().mean().backward()
    for layer in decop.encoder.layers:
        assert layer.attention.compressor.grad.abs().sum() > 0
        assert not hasattr(layer.attention, "mask")


def test_same_seed_gives_identical_outputs():
    x = torch.randn(4, 48, 3)
    outputs = []
    for _ in range(2):
        torch.manual_seed(123)
        net = XCTFormerNet(small_config())
        outputs.append(net(x))  # train mode: dropout draws from the same seed too
    assert torch.equal(outputs[0], outputs[1])
    torch.manual_seed(124)
    assert not torch.equal(XCTFormerNet(small_config())(x), outputs[0])


def test_time_mixing_keeps_channels_independent():
    net = XCTFormerNet(small_config(mixing="time")).eval()
    x = torch.randn(2, 48, 3)
    perturbed = x.clone()
    perturbed[:, :, 2] += torch.randn(2, 48) * 5
    with torch.no_grad():
        base, moved = net(x), net(perturbed)
    torch.testing.assert_close(moved[..., :2], base[..., :2], rtol=0, atol=1e-6)
    assert (moved[..., 2] - base[..., 2]).abs().max() > 1e-3


def test_full_mixing_lets_channels_interact():
    net = XCTFormerNet(small_config()).eval()
    x = torch.randn(2, 48, 3)
    perturbed = x.clone()
    perturbed[:, :, 2] += torch.randn(2, 48) * 5
    with torch.no_grad():
        assert (net(perturbed)[..., 0] - net(x)[..., 0]).abs().max() > 1e-4


def test_channel_mixing_keeps_patch_indices_independent():
    config = small_config(mixing="channel", dropout=0.0)
    net = XCTFormerNet(config).eval()
    x = torch.randn(2, 48, 3)
    tokens = net.tokenizer(x)
    moved_tokens = tokens.clone()
    moved_tokens[:, 0:3] += 1.0  # every channel's token at patch 0
    with torch.no_grad():
        base, moved = net.encoder(tokens), net.encoder(moved_tokens)
    torch.testing.assert_close(moved[:, 3:], base[:, 3:], rtol=0, atol=1e-6)
    assert config.attention_len == 3


def test_instance_norm_makes_output_equivariant_to_affine_input_changes():
    net = XCTFormerNet(small_config()).eval()
    x = torch.randn(3, 48, 3)
    with torch.no_grad():
        torch.testing.assert_close(net(x * 5.0 + 100.0), net(x) * 5.0 + 100.0, rtol=1e-4, atol=1e-3)


def test_masked_input_ignores_unobserved_values():
    net = XCTFormerNet(small_config(out_len=48)).eval()
    x = torch.randn(2, 48, 3)
    mask = torch.rand(2, 48, 3) > 0.3
    garbage = torch.where(mask, x, torch.full_like(x, float("nan")))
    with torch.no_grad():
        out = net(garbage, mask=mask)
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out, net(torch.where(mask, x, 1e6), mask=mask))


def test_softmax_and_no_mask_ablations_run():
    x = torch.randn(2, 48, 3)
    for name in ("no_mask", "softmax", "vanilla", "time", "channel"):
        net = XCTFormerNet(small_config().ablation(name))
        assert net(x).shape == (2, 24, 3)
    assert XCTFormerNet(small_config().ablation("no_mask")).encoder.layers[0].attention.mask is None


def test_wrong_input_shape_is_a_clear_error():
    net = XCTFormerNet(small_config())
    with pytest.raises(ValueError, match=r"n_channels=3\), got \(2, 48, 4\)"):
        net(torch.randn(2, 48, 4))


def test_n_outputs_decodes_the_leading_channels_only():
    net = XCTFormerNet(small_config()).eval()
    x = torch.randn(2, 48, 3)
    with torch.no_grad():
        full, first_two = net(x), net(x, n_outputs=2)
    assert first_two.shape == (2, 24, 2)
    torch.testing.assert_close(first_two, full[..., :2])
