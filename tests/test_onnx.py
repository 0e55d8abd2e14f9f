"""ONNX export: Darts' ``to_onnx`` and the engine's, served by onnxruntime, equal to predict."""

import numpy as np
import pytest
from darts import TimeSeries
from darts.utils.likelihood_models.torch import QuantileRegression

from xct_estimators import ReconstructionEngine, XCTFormerModel

ort = pytest.importorskip("onnxruntime", reason="the 'onnx' extra is not installed")
pytest.importorskip("onnxscript", reason="the 'onnx' extra is not installed")

TINY = dict(patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16, e_layers=1, n_epochs=1, random_state=0)
QUIET = {"enable_progress_bar": False, "logger": False, "enable_model_summary": False, "accelerator": "cpu"}


def _values(rows=240, channels=3):
    t = np.arange(rows, dtype=np.float32)[:, None]
    return np.sin(t / np.arange(4, 4 + channels)).astype(np.float32)


@pytest.mark.parametrize(
    "case",
    ["multivariate", "past_covariates", "quantiles", "decop", "future_covariates"],
)
def test_darts_to_onnx_forecasts_as_predict(case, tmp_path):
    from darts.utils.onnx import run_onnx_prediction

    values = _values(channels=4)
    series = TimeSeries.from_values(values[:, :3], columns=["a", "b", "c"])
    covariates = TimeSeries.from_values(values[:, 3:], columns=["x"]) if case == "past_covariates" else None
    future = TimeSeries.from_values(_values(rows=260, channels=1), columns=["k"])
    known = future if case == "future_covariates" else None
    extra = {"likelihood": QuantileRegression([0.1, 0.5, 0.9])} if case == "quantiles" else {}
    if case == "decop":
        extra["decop_k"] = 4
    model = XCTFormerModel(24, 8, **TINY, **extra, pl_trainer_kwargs=QUIET, work_dir=str(tmp_path))
    model.fit(series, past_covariates=covariates, future_covariates=known)
    path = str(tmp_path / "model.onnx")
    model.to_onnx(path)
    session = ort.InferenceSession(path)
    inputs = dict(series=series, past_covariates=covariates, future_covariates=known)
    served = run_onnx_prediction(n=8, session=session, **inputs)
    expected = model.predict(8, **inputs, predict_likelihood_parameters=bool(extra.get("likelihood")))
    np.testing.assert_allclose(served.values(), expected.values(), rtol=0, atol=1e-4)
    assert model.network_.encoder.layers[0].attention.fused is not False  # the default path is back after the export


@pytest.mark.parametrize("fill", ["linear", "zero"])
def test_engine_to_onnx_reconstructs_as_reconstruct_windows(fill, tmp_path):
    engine = ReconstructionEngine(window_length=32, **TINY, mask_rate=0.25, fill=fill, accelerator="cpu")
    engine.fit(_values())
    path = engine.to_onnx(str(tmp_path / "engine.onnx"))
    rng = np.random.default_rng(0)
    x = _values(rows=32 * 5).reshape(5, 32, 3)
    for visible in (rng.random(x.shape) > 0.3, np.ones(x.shape, dtype=bool)):
        served = ort.InferenceSession(path).run(None, {"x": x, "visible": visible})[0]
        np.testing.assert_allclose(served, engine.reconstruct_windows(x, visible), rtol=0, atol=1e-4)


def test_export_before_fit_is_refused():
    with pytest.raises(ValueError, match="call fit"):
        ReconstructionEngine(window_length=32, **TINY).to_onnx("never.onnx")


def test_the_linear_fill_finds_the_last_observed_step_as_a_cumulative_max_does():
    """Written without cummax (no ONNX form): the same indices on random masks of every density."""
    import torch

    from xct_estimators.nn.fill import _last_observed

    generator = torch.Generator().manual_seed(0)
    steps = torch.arange(40).view(1, 40, 1).expand(3, 40, 4)
    for density in (0.0, 0.05, 0.5, 0.95, 1.0):
        observed = torch.rand(3, 40, 4, generator=generator) < density
        assert torch.equal(_last_observed(observed, steps), torch.where(observed, steps, -1).cummax(dim=1).values)


def test_the_serving_example_of_the_docs_runs(tmp_path, monkeypatch):
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "forecasting.md").read_text()
    example = text.split("## Serving without PyTorch (ONNX)")[1].split("```python")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/forecasting.md", "exec"), {})
    assert (tmp_path / "xctformer.onnx").is_file()
