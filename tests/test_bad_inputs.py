"""The estimators against bad input (issue 12): each case ends in correct behaviour or an error that
names the problem and the fix, raised before any training."""

import numpy as np
import pandas as pd
import pytest
from darts import TimeSeries

from xct_estimators import (
    ReconstructionEngine,
    XCTFormerAnomalyDetector,
    XCTFormerForecaster,
    XCTFormerImputer,
    XCTFormerModel,
    XCTFormerScorer,
)
from xct_estimators.nn import XCTFormerConfig

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False}
RECON = dict(window_length=24, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, n_epochs=1,
             random_state=0, accelerator="cpu", validation_fraction=0.0)  # fmt: skip


def model(tmp_path, **changes):
    kwargs = dict(input_chunk_length=24, output_chunk_length=6, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16,
                  e_layers=1, n_epochs=1, batch_size=16, random_state=0, work_dir=str(tmp_path),
                  pl_trainer_kwargs=QUIET)  # fmt: skip
    return XCTFormerModel(**{**kwargs, **changes})


def sines(n=200, channels=2, scale=1.0, dtype=np.float32):
    t = np.arange(n)[:, None]
    return (scale * np.sin(t / (3.0 + np.arange(channels)))).astype(dtype)


# -- 9. epochs ---------------------------------------------------------------------------
@pytest.mark.parametrize("n_epochs", [-1, 0, 2.5, True])
def test_model_refuses_non_positive_or_non_integer_epochs(tmp_path, n_epochs):
    with pytest.raises(ValueError, match="n_epochs must be a positive integer"):
        model(tmp_path, n_epochs=n_epochs)


# -- 10. overflow ------------------------------------------------------------------------
@pytest.mark.parametrize("scale, dtype", [(1e30, np.float32), (1e200, np.float64)])
def test_values_that_overflow_float32_statistics_are_refused(tmp_path, scale, dtype):
    values = sines(dtype=np.float64)
    values[:, 1] *= scale
    series = TimeSeries.from_values(values.astype(dtype), columns=["calm", "huge"])
    with pytest.raises(ValueError, match=r"'huge' \(\|value\| up to .*\) exceed 1e\+17.*Scale the data"):
        model(tmp_path).fit(series)
    frame = pd.DataFrame(values.astype(dtype), columns=["calm", "huge"])
    with pytest.raises(ValueError, match=r"channel\(s\) 1 .*exceed 1e\+17"):
        XCTFormerImputer(**RECON).fit(frame)
    fitted = XCTFormerAnomalyDetector(**RECON).fit(pd.DataFrame(sines(dtype=np.float64), columns=["calm", "huge"]))
    with pytest.raises(ValueError, match="exceed 1e"):
        fitted.transform_scores(frame)
    scorer = XCTFormerScorer(**RECON).fit(TimeSeries.from_values(sines()))
    with pytest.raises(ValueError, match="exceed 1e"):
        scorer.score(series)


def test_large_but_safe_values_are_fine(tmp_path):
    series = TimeSeries.from_values(sines(scale=1e12))
    forecast = model(tmp_path).fit(series).predict(6)
    assert np.isfinite(forecast.values()).all()


# -- 11. numpy integers ------------------------------------------------------------------
def test_numpy_integers_from_a_grid_are_accepted(tmp_path):
    ints = {k: np.int64(v) for k, v in dict(input_chunk_length=24, output_chunk_length=6, patch_len=8, stride=4,
                                             d_model=8, d_ff=16, batch_size=16, n_epochs=1).items()}  # fmt: skip
    forecast = model(tmp_path, **ints).fit(TimeSeries.from_values(sines())).predict(3)
    assert forecast.shape == (3, 2, 1)
    grid = {k: np.int64(v) for k, v in RECON.items() if isinstance(v, int)}
    filled = XCTFormerImputer(**{**RECON, **grid, "window_stride": np.int64(6)}).fit_transform(
        pd.DataFrame(sines(dtype=np.float64)).mask(np.eye(200, 2, dtype=bool))
    )
    assert not filled.isna().any().any()


@pytest.mark.parametrize("field", ["d_model", "n_heads", "patch_len"])
def test_bools_are_not_integers(field):
    with pytest.raises(ValueError, match=f"{field} must be a positive integer, got True"):
        XCTFormerConfig(seq_len=24, n_channels=2, out_len=6, **{field: True})


@pytest.mark.parametrize("name, value", [("n_epochs", True), ("patience", np.float64(2.0)), ("batch_size", 0)])
def test_engine_refuses_non_integers(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
        ReconstructionEngine(**{**RECON, name: value})


# -- 12. memory guard with the batch ------------------------------------------------------
def test_memory_guard_counts_the_training_batch(tmp_path):
    """The softmax variant takes the plain path, whose score tensors grow with the batch
    (tests/nn/test_config.py checks the fused path's estimate)."""
    softmax = dict(patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, activation="softmax")
    config = XCTFormerConfig(24, 2, 6, **softmax)
    bound = 4 * config.attention_memory_bytes(1)  # one sample fits, a batch of 16 does not
    with pytest.raises(ValueError, match=r"A training batch of 16 windows needs .*Lower batch_size to [1-9] or less"):
        model(tmp_path, max_attention_bytes=bound, activation="softmax").fit(TimeSeries.from_values(sines()))
    engine_bound = 4 * XCTFormerConfig(24, 2, 24, **softmax).attention_memory_bytes(1)
    with pytest.raises(ValueError, match="A training batch of 32 windows needs .*Lower batch_size"):
        ReconstructionEngine(**RECON, max_attention_bytes=engine_bound, activation="softmax").fit(sines())


# -- 13. lists of series -----------------------------------------------------------------
def test_series_with_different_component_counts_are_named(tmp_path):
    series = [TimeSeries.from_values(sines(channels=2)), TimeSeries.from_values(sines(channels=3))]
    with pytest.raises(ValueError, match=r"series\[1\] has 3 components but series\[0\] has 2 .*\[2, 3\]"):
        model(tmp_path).fit(series)


# -- 14. damaged saves -------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["truncate", "empty", "flip", "truncate_ckpt"])
def test_a_damaged_save_gives_one_clear_error(tmp_path, damage):
    fitted = model(tmp_path).fit(TimeSeries.from_values(sines()))
    path = str(tmp_path / "model.pt")
    fitted.save(path)
    target = path + ".ckpt" if damage == "truncate_ckpt" else path
    data = open(target, "rb").read()
    if damage in ("truncate", "truncate_ckpt"):
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    else:
        data = bytearray(data)
        for i in range(10, len(data), max(len(data) // 50, 1)):
            data[i] ^= 0xFF
        data = bytes(data)
    open(target, "wb").write(data)
    with pytest.raises(ValueError, match="is not a complete XCTFormerModel save"):
        XCTFormerModel.load(path)


def test_loading_a_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="No saved model at .*nothing.pt"):
        XCTFormerModel.load(str(tmp_path / "nothing.pt"))


# -- 15. sktime forecaster indexes ---------------------------------------------------------
FORECASTER = XCTFormerForecaster.get_test_params()[0]


def test_forecaster_names_the_rows_x_lacks():
    index = pd.date_range("2020", periods=120, freq="D")
    y = pd.DataFrame({"a": sines(120, 1)[:, 0]}, index=index)
    X = pd.DataFrame({"x": sines(100, 1)[:, 0]}, index=index[:100])
    with pytest.raises(ValueError, match=r"X does not cover y: 20 of y's 120 time points .*2020-04-10"):
        XCTFormerForecaster(**FORECASTER).fit(y, X=X, fh=[1, 2])


def test_forecaster_refuses_a_datetime_index_with_gaps_naming_them():
    index = pd.date_range("2020", periods=120, freq="D").delete([10, 50, 51])
    y = pd.DataFrame({"a": sines(len(index), 1)[:, 0]}, index=index)
    with pytest.raises(ValueError, match=r"without a regular frequency: 2 step\(s\) .*2020-01-12.*2020-02-22"):
        XCTFormerForecaster(**FORECASTER).fit(y, fh=[1, 2])


# -- 16. imputer columns, strides, detector alpha -------------------------------------------
def test_imputer_checks_columns_and_follows_their_order():
    frame = pd.DataFrame(sines(200, 3, dtype=np.float64), columns=["a", "b", "c"])
    gappy = frame.mask(np.random.default_rng(0).random(frame.shape) < 0.2)
    imputer = XCTFormerImputer(**RECON).fit(gappy)
    with pytest.raises(ValueError, match=r"fitted on \['a', 'b', 'c'\] \(missing: \['c'\], unexpected: \['z'\]\)"):
        imputer.transform(gappy.rename(columns={"c": "z"}))
    reordered = imputer.transform(gappy[["c", "a", "b"]])
    assert list(reordered.columns) == ["c", "a", "b"]
    pd.testing.assert_frame_equal(reordered, imputer.transform(gappy)[["c", "a", "b"]])


@pytest.mark.parametrize("window_stride", [0, -3])
def test_window_stride_must_be_positive(window_stride):
    with pytest.raises(ValueError, match="window_stride must be None .* or a positive integer"):
        XCTFormerImputer(**{**RECON, "window_stride": window_stride}).fit(pd.DataFrame(sines()))
    with pytest.raises(ValueError, match="window_stride must be None"):
        ReconstructionEngine(**{**RECON, "window_stride": window_stride})


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, "0.1", True, None])
def test_detector_alpha_must_be_a_share(alpha):
    with pytest.raises(ValueError, match="alpha must be a number in \\(0, 1\\)"):
        XCTFormerAnomalyDetector(alpha=alpha)


def test_a_checkpoint_of_another_model_beside_a_save_is_refused(tmp_path):
    import os

    series = TimeSeries.from_values(sines())
    small, large = model(tmp_path, d_model=8), model(tmp_path, d_model=16)
    small.fit(series)
    large.fit(series)
    small.save(str(tmp_path / "small.pt"))
    large.save(str(tmp_path / "large.pt"))
    assert XCTFormerModel.load(str(tmp_path / "small.pt")).network_.config.d_model == 8
    os.replace(tmp_path / "large.pt.ckpt", tmp_path / "small.pt.ckpt")
    with pytest.raises(ValueError, match=r"small.pt.ckpt is not the checkpoint of .*small.pt: d_model 8 in .*, 16 in"):
        XCTFormerModel.load(str(tmp_path / "small.pt"))
