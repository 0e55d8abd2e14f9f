"""Mixed precision: CRAB's shift, mask product and AbsAct run in float32 under bf16 autocast."""

import numpy as np
import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet
from xct_estimators.nn import attention as attention_module
from xct_estimators.nn.attention import CRABAttention, DeCoPAttention


@pytest.fixture
def normalise_dtypes(monkeypatch):
    seen = []
    original = attention_module.normalise

    def spy(scores, activation):
        seen.append(scores.dtype)
        return original(scores, activation)

    monkeypatch.setattr(attention_module, "normalise", spy)
    return seen


@pytest.mark.parametrize("activation", ["absact", "softmax", "absact_clipped"])
def test_crab_normalises_in_float32_and_casts_back(normalise_dtypes, activation):
    torch.manual_seed(0)
    layer = CRABAttention(d_model=16, n_heads=2, seq_len=40, activation=activation)
    x = torch.randn(3, 40, 16) * 5
    with torch.autocast("cpu", dtype=torch.bfloat16):
        weights, _ = layer.attention_weights(x)
        q = layer.q_proj(x).view(3, 40, 2, 8).transpose(1, 2)
        scores = q @ layer.k_proj(x).view(3, 40, 2, 8).permute(0, 2, 3, 1)
    assert normalise_dtypes == [torch.float32]
    assert scores.dtype == torch.bfloat16 and weights.dtype == torch.bfloat16
    # The same bf16 scores normalised in float32 by hand, then rounded to bf16 once.
    s = (scores * layer.scale).float()  # the layer scales in bf16, before the float32 block
    if layer.mask is not None:
        s = layer.mask.float() * (s - s.amin(dim=(-2, -1), keepdim=True))
    expected = attention_module.normalise(s, activation).to(torch.bfloat16)
    torch.testing.assert_close(weights, expected, rtol=0, atol=0)


def test_decop_normalises_in_float32(normalise_dtypes):
    layer = DeCoPAttention(d_model=16, n_heads=2, seq_len=40, k=8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        weights, _ = layer.attention_weights(torch.randn(2, 40, 16))
    assert normalise_dtypes == [torch.float32] and weights.dtype == torch.bfloat16


def test_float32_and_float64_run_unchanged(normalise_dtypes):
    torch.manual_seed(0)
    layer = CRABAttention(d_model=8, n_heads=1, seq_len=12).double()
    x = torch.randn(2, 12, 8, dtype=torch.float64)
    weights, _ = layer.attention_weights(x)
    assert weights.dtype == torch.float64 and normalise_dtypes == [torch.float64]  # no round trip through fp32


def test_bf16_forward_stays_close_to_float32_on_a_paper_sized_row():
    """896-token rows (the imputation preset): the weights' row sums stay bounded by 1 and the
    network's output is within bf16's resolution of the float32 one."""
    torch.manual_seed(0)
    config = XCTFormerConfig(seq_len=1024, n_channels=7, out_len=1024, patch_len=16, stride=8, d_model=16,
                             n_heads=1, d_ff=32, e_layers=1)  # fmt: skip
    net = XCTFormerNet(config).eval()
    x = torch.randn(2, 1024, 7)
    reference = net(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(x)
        weights, _ = net.encoder.layers[0].attention.attention_weights(torch.randn(2, config.n_tokens, 16))
    assert torch.isfinite(out).all()
    assert float(weights.float().abs().sum(-1).max()) <= 1.0 + 1e-2
    assert float((out.float() - reference).abs().max()) < 0.05 * float(reference.abs().max())


def test_darts_model_and_engine_train_in_bf16_mixed_like_float32(shared_data, tmp_path, monkeypatch):
    """ETTh1 (first 3000 hours, standardised): bf16-mixed training ends within a few percent of
    float32's best validation loss, with no NaN or inf on the way."""
    import pandas as pd
    from darts import TimeSeries

    from xct_estimators import KeepBestValidationWeights, ReconstructionEngine, XCTFormerModel

    monkeypatch.chdir(tmp_path)
    frame = pd.read_csv(shared_data / "ETT-small" / "ETTh1.csv").iloc[:3000, 1:]
    values = ((frame - frame.iloc[:2000].mean()) / frame.iloc[:2000].std()).to_numpy(np.float32)
    series = TimeSeries.from_values(values)
    losses = {}
    for precision in ("32-true", "bf16-mixed"):
        model = XCTFormerModel.from_params(
            input_chunk_length=96, output_chunk_length=24, patch_len=16, stride=8, d_model=16, n_heads=1, d_ff=32,
            e_layers=1, n_epochs=3, batch_size=64, learning_rate=5e-3, random_state=0,
            pl_trainer_kwargs={"accelerator": "cpu", "precision": precision, "enable_progress_bar": False},
        )  # fmt: skip
        model.fit(series[:2000], val_series=series[2000 - 96 :], verbose=False)
        keeper = next(c for c in model.trainer.callbacks if isinstance(c, KeepBestValidationWeights))
        assert np.isfinite(keeper.best_score) and np.isfinite(float(model.trainer.callback_metrics["train_loss"]))
        engine = ReconstructionEngine(
            window_length=96,
            patch_len=16,
            stride=8,
            d_model=16,
            n_heads=1,
            d_ff=32,
            e_layers=1,
            n_epochs=3,
            batch_size=64,
            train_stride=4,
            mask_rate=0.25,
            random_state=0,
            accelerator="cpu",
            pl_trainer_kwargs={"precision": precision},
        ).fit(values[:2000], val_values=values[2000:])
        assert np.isfinite(engine.val_losses).all()
        losses[precision] = (keeper.best_score, engine.best_val_loss)
    for fp32, bf16 in zip(losses["32-true"], losses["bf16-mixed"], strict=True):
        assert abs(bf16 / fp32 - 1) < 0.05, losses
