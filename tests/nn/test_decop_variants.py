"""DeCoP as the paper writes it and as the authors' code computes it (docs/decop.md)."""

import numpy as np
import pytest
import torch

from xct_estimators.nn import XCTFormerConfig
from xct_estimators.nn.attention import DeCoPAttention

X = np.array([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, -1.0, 2.0], [2.0, 0.5, 1.5, -1.0], [-1.0, 3.0, 0.0, 1.0]])
C = np.array(  # compressor, N x H x k
    [[[0.5, -1.0], [1.0, 0.0]], [[0.0, 2.0], [-0.5, 1.0]], [[1.0, 1.0], [0.5, -0.5]], [[-1.0, 0.5], [0.0, 1.5]]]
)
W = np.array([[1.0, 0.0, -1.0, 0.5], [0.5, 2.0, 0.0, -1.0]])  # token compressor, k x N


def absact(rows):
    shifted = rows + 1e-4
    return shifted / (np.abs(shifted).sum(axis=-1, keepdims=True) + 1e-8)


def by_hand(variant):
    """B=1, N=4, D=4, H=2 (d=2), k=2; Q = K = X (identity projections), identity output."""
    compressed = W @ X  # (k, D): row j = j-th compressed token
    if variant == "paper":
        values = compressed
    else:  # the authors: the (D, k) result read as (k, D), row-major
        values = compressed.T.reshape(2, 4)
    out = np.zeros((4, 4))
    for h in range(2):
        features = slice(2 * h, 2 * h + 2)
        q = k = X[:, features]
        scores = q @ (k.T @ C[:, h, :])  # (N, k)
        out[:, features] = absact(scores) @ values[:, features]
    return out


def attention(variant):
    layer = DeCoPAttention(d_model=4, n_heads=2, seq_len=4, k=2, variant=variant)
    with torch.no_grad():
        for linear in (layer.q_proj, layer.k_proj, layer.out_proj):
            linear.weight.copy_(torch.eye(4))
            linear.bias.zero_()
        layer.token_compressor.weight.copy_(torch.tensor(W))
        layer.token_compressor.bias.zero_()
        layer.compressor.copy_(torch.tensor(C))
    return layer.double().eval()


@pytest.mark.parametrize("variant", ["paper", "authors"])
def test_each_variant_computes_its_formula(variant):
    out = attention(variant)(torch.tensor(X)[None])[0].detach().numpy()
    np.testing.assert_allclose(out, by_hand(variant), rtol=1e-12, atol=1e-12)


def test_the_variants_differ_on_the_value_path():
    assert not np.allclose(by_hand("paper"), by_hand("authors"))


def test_compressor_initialisation_of_each_variant():
    torch.manual_seed(0)
    paper = DeCoPAttention(d_model=8, n_heads=2, seq_len=512, k=64).compressor
    authors = DeCoPAttention(d_model=8, n_heads=2, seq_len=512, k=64, variant="authors").compressor
    assert float(paper.std()) == pytest.approx((2 / 512) ** 0.5, rel=0.02)
    assert float(authors.std()) == pytest.approx((2 / (2 * 64)) ** 0.5, rel=0.02)
    assert float(authors.abs().max()) <= (6 / (2 * 64)) ** 0.5  # uniform bound sqrt(2) * sqrt(3 / fan_in)


def test_config_validates_and_passes_the_variant():
    from xct_estimators.nn import XCTFormerNet

    config = XCTFormerConfig(seq_len=32, n_channels=3, out_len=8, patch_len=8, stride=4, decop_k=4,
                             decop_variant="authors")  # fmt: skip
    layer = XCTFormerNet(config).encoder.layers[0].attention
    assert isinstance(layer, DeCoPAttention) and layer.variant == "authors"
    with pytest.raises(ValueError, match="decop_variant must be one of"):
        XCTFormerConfig(seq_len=32, n_channels=3, out_len=8, decop_variant="theirs")
