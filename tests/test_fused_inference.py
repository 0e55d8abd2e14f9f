"""Training runs the fused CRAB function with dropout and autograd; prediction
(``historical_forecasts``) and the reconstruction engine's sliding windows run its forward
alone: no dropout, no autograd state."""

import numpy as np
import pytest
from darts.utils.timeseries_generation import sine_timeseries

from xct_estimators import ReconstructionEngine, XCTFormerModel
from xct_estimators.nn import ops


@pytest.fixture
def calls(monkeypatch):
    """Every fused_crab call: (dropout p, whether autograd records)."""
    import torch

    seen = []
    original = ops.fused_crab

    def spy(q, k, v, mask, scale=1.0, activation="absact", p=0.0, seed=None):
        seen.append((p, torch.is_grad_enabled() and q.requires_grad))
        return original(q, k, v, mask, scale, activation, p, seed)

    monkeypatch.setattr(ops, "fused_crab", spy)
    return seen


def test_darts_training_and_historical_forecasts(calls, tmp_path):
    series = sine_timeseries(length=160, value_frequency=0.05).stack(sine_timeseries(length=160, value_phase=1.0))
    model = XCTFormerModel(
        input_chunk_length=24, output_chunk_length=8, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16,
        e_layers=1, n_epochs=1, attn_dropout=0.3, random_state=0, work_dir=str(tmp_path),
        pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False},
    )  # fmt: skip
    model.fit(series)
    # training steps: dropout and autograd; validation (eval mode): neither
    assert any(p == 0.3 for p, _ in calls) and all(recording == (p == 0.3) for p, recording in calls)
    calls.clear()
    model.historical_forecasts(series, start=0.8, forecast_horizon=8, stride=8, retrain=False, verbose=False)
    assert calls and all(p == 0.0 and not recording for p, recording in calls)


def test_engine_sliding_windows(calls):
    values = np.sin(np.arange(400)[:, None] / np.array([5.0, 7.0, 11.0]))
    engine = ReconstructionEngine(
        window_length=48, patch_len=8, stride=4, n_epochs=1, random_state=0, progress_bar=False, accelerator="cpu"
    ).fit(values)
    assert any(p > 0.0 for p, _ in calls) and all(recording == (p > 0.0) for p, recording in calls)  # training
    calls.clear()
    engine.reconstruct(values)
    assert calls and all(p == 0.0 and not recording for p, recording in calls)
