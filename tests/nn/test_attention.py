import math

import pytest
import torch

from xct_estimators.nn import CRABAttention, DeCoPAttention, abs_act


@pytest.mark.parametrize("n", [1, 5, 84, 300])
def test_absact_frobenius_norm_bounded_by_sqrt_n(n):
    generator = torch.Generator().manual_seed(n)
    for scale in (1e-6, 1.0, 1e3):
        scores = torch.randn(50, n, n, generator=generator, dtype=torch.float64) * scale
        norms = torch.linalg.matrix_norm(abs_act(scores))  # Frobenius by default
        assert (norms <= math.sqrt(n) + 1e-9).all()


def test_absact_rows_have_unit_l1_norm():
    weights = abs_act(torch.randn(10, 40, 40, dtype=torch.float64))
    torch.testing.assert_close(weights.abs().sum(-1), torch.ones(10, 40, dtype=torch.float64))


def test_absact_is_invariant_to_positive_scaling():
    scores = torch.randn(8, 30, 30, dtype=torch.float64) * 10
    for alpha in (0.01, 1 / math.sqrt(64), 3.0, 1e3):
        # The stabilisers break exact invariance only at the 1e-4 / |score| level.
        torch.testing.assert_close(abs_act(alpha * scores), abs_act(scores), rtol=1e-2, atol=1e-3)
    # Without the eps shift the identity is exact: check it on scores far above eps.
    big = scores.abs() + 1e3
    torch.testing.assert_close(abs_act(2.0 * big), abs_act(big), rtol=1e-6, atol=1e-9)


def test_absact_produces_negative_weights_with_the_sign_of_the_score():
    scores = torch.randn(4, 20, 20, dtype=torch.float64)
    weights = abs_act(scores)
    assert (weights < 0).any()
    assert torch.equal(torch.sign(weights), torch.sign(scores + 1e-4))


def test_absact_of_zero_row_is_finite():
    assert torch.isfinite(abs_act(torch.zeros(3, 7))).all()


def test_decop_associativity_float64():
    torch.manual_seed(1)
    n, d, k = 200, 16, 24
    q, key, c = (
        torch.randn(n, d, dtype=torch.float64),
        torch.randn(n, d, dtype=torch.float64),
        torch.randn(n, k, dtype=torch.float64),
    )
    torch.testing.assert_close(q @ (key.T @ c), (q @ key.T) @ c, rtol=0, atol=1e-5)


def test_decop_module_equals_full_scores_times_compressor():
    torch.manual_seed(2)
    layer = DeCoPAttention(d_model=12, n_heads=3, seq_len=30, k=5).double().eval()
    x = torch.randn(4, 30, 12, dtype=torch.float64)
    weights, v = layer.attention_weights(x)
    q = layer.q_proj(x).view(4, 30, 3, 4).transpose(1, 2)
    key = layer.k_proj(x).view(4, 30, 3, 4).transpose(1, 2)
    full_scores = q @ key.transpose(-2, -1)  # (B, H, N, N), formed here only to compare
    compressed = full_scores @ layer.compressor.permute(1, 0, 2)  # C_h: (H, N, k)
    torch.testing.assert_close(weights, abs_act(compressed), rtol=0, atol=1e-10)
    assert weights.shape == (4, 3, 30, 5)
    # V = W_v X: token-axis Linear, then heads split along the features.
    expected_v = layer.token_compressor.weight @ x + layer.token_compressor.bias[:, None]
    torch.testing.assert_close(v, expected_v.view(4, 5, 3, 4).transpose(1, 2))


def test_crab_mask_init_is_he_normal():
    layer = CRABAttention(d_model=8, n_heads=2, seq_len=400)
    std = layer.mask.std().item()
    assert layer.mask.shape == (2, 400, 400)
    assert abs(std - math.sqrt(2 / 400)) < 0.05 * math.sqrt(2 / 400)
    assert abs(layer.mask.mean().item()) < 0.002


def test_crab_shift_is_per_sample_and_head():
    torch.manual_seed(3)
    layer = CRABAttention(d_model=8, n_heads=2, seq_len=10).double().eval()
    x = torch.randn(3, 10, 8, dtype=torch.float64)
    weights, _ = layer.attention_weights(x)
    q = layer.q_proj(x).view(3, 10, 2, 4).transpose(1, 2)
    key = layer.k_proj(x).view(3, 10, 2, 4).transpose(1, 2)
    for b in range(3):
        for h in range(2):
            scores = q[b, h] @ key[b, h].T
            expected = abs_act(layer.mask[h] * (scores - scores.min()))
            torch.testing.assert_close(weights[b, h], expected)


def test_vanilla_switches_give_scaled_softmax_attention():
    layer = CRABAttention(d_model=8, n_heads=2, seq_len=10, use_mask=False, activation="softmax")
    assert layer.mask is None
    x = torch.randn(2, 10, 8)
    weights, _ = layer.attention_weights(x)
    q = layer.q_proj(x).view(2, 10, 2, 4).transpose(1, 2)
    key = layer.k_proj(x).view(2, 10, 2, 4).transpose(1, 2)
    expected = torch.softmax(q @ key.transpose(-2, -1) / 2.0, dim=-1)
    torch.testing.assert_close(weights, expected)


def test_weight_dropout_keeps_expected_share_and_scales():
    from xct_estimators.nn.attention import WeightDropout

    drop = WeightDropout(0.6)
    x = torch.ones(200, 300)
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.4) < 0.01
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / 0.4))
    assert torch.equal(drop.eval()(x), x)
