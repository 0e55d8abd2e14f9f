"""The ``compile`` switch of every estimator: where it applies, what it keeps, what it refuses.

Most tests compile with the ``aot_eager`` backend (the same tracing as inductor, no code
generation) to stay fast; ``tests/nn/test_compile.py`` and the ``xct-bench --compile`` test run
inductor itself.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries

from xct_estimators import ReconstructionEngine, XCTFormerModel
from xct_estimators.nn import compiling
from xct_estimators.nn.compiling import check_compile_supported, compile_options, is_compiled
from xct_estimators.scorer import XCTFormerScorer
from xct_estimators.sktime import XCTFormerAnomalyDetector, XCTFormerForecaster, XCTFormerImputer

TRACED = {"backend": "aot_eager"}
NO_DROPOUT = dict(dropout=0.0, fc_dropout=0.0, attn_dropout=0.0)
TINY = dict(patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16, e_layers=1, n_epochs=1, random_state=0)
QUIET = {"enable_progress_bar": False, "logger": False, "enable_model_summary": False, "accelerator": "cpu"}


def _values(rows=200, channels=3):
    t = np.arange(rows, dtype=np.float32)[:, None]
    return np.sin(t / np.arange(4, 4 + channels)).astype(np.float32)


def test_darts_model_saved_compiled_or_not_loads_and_predicts_either_way(tmp_path):
    series = TimeSeries.from_values(_values(), columns=["a", "b", "c"])
    model = XCTFormerModel(24, 6, **TINY, **NO_DROPOUT, compile=TRACED, pl_trainer_kwargs=QUIET)
    model.fit(series)
    assert is_compiled(model.network_)
    expected = model.predict(6).values()
    model.save(str(tmp_path / "compiled.pt"))

    loaded = XCTFormerModel.load(str(tmp_path / "compiled.pt"))
    assert loaded.compile == TRACED
    np.testing.assert_allclose(loaded.predict(6).values(), expected, rtol=0, atol=1e-6)
    assert is_compiled(loaded.network_)

    eager = XCTFormerModel.load(str(tmp_path / "compiled.pt"), compile=False)
    np.testing.assert_allclose(eager.predict(6).values(), expected, rtol=0, atol=1e-6)
    assert not is_compiled(eager.network_) and eager.model_params["compile"] is False
    eager.save(str(tmp_path / "eager.pt"))

    recompiled = XCTFormerModel.load(str(tmp_path / "eager.pt"), compile=TRACED)
    np.testing.assert_allclose(recompiled.predict(6).values(), expected, rtol=0, atol=1e-6)
    assert is_compiled(recompiled.network_)

    # the weights are the same either way: load_weights does not ask for the same switch
    fresh = XCTFormerModel(24, 6, **TINY, **NO_DROPOUT, compile=True, pl_trainer_kwargs=QUIET)
    fresh.load_weights(str(tmp_path / "eager.pt"))
    assert fresh.model.compile_options == {}

    # the direct historical forecasts run the compiled network too, with eager's numbers
    windows = dict(forecast_horizon=6, retrain=False, last_points_only=False, verbose=False)
    compiled_forecasts = recompiled.historical_forecasts(series[-60:], **windows)
    eager_forecasts = eager.historical_forecasts(series[-60:], **windows)
    for compiled_one, eager_one in zip(compiled_forecasts, eager_forecasts, strict=True):
        np.testing.assert_allclose(compiled_one.values(), eager_one.values(), rtol=0, atol=1e-6)


def test_engine_compiles_again_after_pickling_and_exports_eagerly(tmp_path):
    engine = ReconstructionEngine(window_length=32, **TINY, **NO_DROPOUT, mask_rate=0.25, accelerator="cpu")
    engine.compile = TRACED
    engine.fit(_values())
    assert is_compiled(engine.network_)
    values = _values(rows=120)
    values[::5, 0] = np.nan
    expected = engine.reconstruct(values)

    restored = pickle.loads(pickle.dumps(engine))
    assert not is_compiled(restored.network_)  # pickling drops the compiled function (torch's rule)
    np.testing.assert_allclose(restored.reconstruct(values), expected, rtol=0, atol=1e-6)
    assert is_compiled(restored.network_)  # ... and the engine applies its switch again

    restored.compile = False
    np.testing.assert_allclose(restored.reconstruct(values), expected, rtol=0, atol=1e-6)
    assert not is_compiled(restored.network_)

    pytest.importorskip("onnxscript", reason="the 'onnx' extra is not installed")
    engine.to_onnx(str(tmp_path / "engine.onnx"))
    assert (tmp_path / "engine.onnx").stat().st_size > 0 and is_compiled(engine.network_)


def test_engine_inference_compiles_once_whatever_the_series_length():
    """The last batch is padded to the full batch when compiled: series whose window counts leave
    other remainders reuse the one graph (a ragged last batch recompiled on every new length), and
    the padded windows change nothing."""
    import torch

    engine = ReconstructionEngine(window_length=16, **TINY, **NO_DROPOUT, batch_size=4, accelerator="cpu")
    engine.fit(_values())
    eager = {rows: engine.reconstruct(_values(rows=rows)) for rows in (70, 83, 101)}
    windows = np.ones((7, 16, 3), dtype=bool)
    eager_windows = engine.reconstruct_windows(np.stack([_values(rows=16)] * 7), windows)
    engine.compile = TRACED
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    for rows, expected in eager.items():
        np.testing.assert_allclose(engine.reconstruct(_values(rows=rows)), expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        engine.reconstruct_windows(np.stack([_values(rows=16)] * 7), windows), eager_windows, rtol=0, atol=1e-6
    )
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: XCTFormerForecaster(input_chunk_length=12, **TINY, compile=TRACED, pl_trainer_kwargs=QUIET),
        lambda: XCTFormerImputer(window_length=16, **TINY, compile=TRACED, accelerator="cpu"),
        lambda: XCTFormerAnomalyDetector(window_length=16, **TINY, compile=TRACED, accelerator="cpu"),
        lambda: XCTFormerScorer(window_length=16, **TINY, compile=TRACED, accelerator="cpu"),
    ],
    ids=["forecaster", "imputer", "detector", "scorer"],
)
def test_every_estimator_passes_the_switch_to_its_network(make):
    estimator = make()
    frame = pd.DataFrame(_values(rows=120), columns=["a", "b", "c"])
    if isinstance(estimator, XCTFormerForecaster):
        estimator.fit(frame, fh=[1, 2])
        estimator.predict()
    elif isinstance(estimator, XCTFormerScorer):
        estimator.fit(TimeSeries.from_dataframe(frame))
    else:
        estimator.fit(frame)
    assert is_compiled(estimator.network_)


@pytest.mark.parametrize(
    "value, message",
    [
        ("yes", "compile must be True, False or a dict"),
        ({"mod": "max-autotune"}, "'mod' is not an argument of torch.compile"),
    ],
)
def test_bad_compile_values_are_refused_when_the_estimator_is_made(value, message):
    for make in (lambda: XCTFormerModel(24, 6, compile=value), lambda: ReconstructionEngine(compile=value)):
        with pytest.raises(ValueError, match=message):
            make()
    with pytest.raises(ValueError, match=message):
        XCTFormerImputer(window_length=16, **TINY, compile=value).fit(pd.DataFrame(_values()))
    assert compile_options(False) is None and compile_options(True) == {}


def test_compiling_without_a_cpp_compiler_names_the_fix(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(compiling.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"needs a C\+\+ compiler.*apt install g\+\+.*compile=False"):
        check_compile_supported({}, "cpu")
    check_compile_supported(TRACED, "cpu")  # another backend needs none
    check_compile_supported({}, "meta")  # nor does a device that is not the CPU

    engine = ReconstructionEngine(window_length=32, **TINY, compile=True, accelerator="cpu")
    with pytest.raises(RuntimeError, match="C\\+\\+ compiler"):
        engine.fit(_values())  # in the module's setup, before the first step


def test_attention_map_of_a_compiled_network_is_the_eager_one():
    import torch

    from xct_estimators.explain import attention_map
    from xct_estimators.nn import XCTFormerConfig, XCTFormerNet

    net = XCTFormerNet(XCTFormerConfig(seq_len=32, n_channels=3, out_len=8, patch_len=8, stride=4)).eval()
    window = _values(rows=32)
    eager = attention_map(net, window)
    net.compile(**TRACED)
    with torch.no_grad():
        net(torch.zeros(1, 32, 3))  # compiled before the hooks are added
    np.testing.assert_allclose(attention_map(net, window).values, eager.values, rtol=0, atol=1e-6)
    assert is_compiled(net)
