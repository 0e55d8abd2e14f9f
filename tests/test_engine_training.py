"""ReconstructionEngine training: validation split, early stopping, best weights, quiet fit, fill."""

import warnings

import numpy as np
import pandas as pd
import pytest
import pytorch_lightning as pl
import torch

from xct_estimators import ReconstructionEngine, XCTFormerAnomalyDetector, XCTFormerImputer, XCTFormerScorer

TINY = dict(window_length=24, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, batch_size=16,
            random_state=0, accelerator="cpu")  # fmt: skip


def sines(n, channels=3, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None]
    return (np.sin(2 * np.pi * t / rng.uniform(8, 30, channels)) + 0.05 * rng.normal(size=(n, channels))).astype(
        np.float32
    )


def windows(values, length):
    view = np.lib.stride_tricks.sliding_window_view(values, length, axis=0)
    return np.ascontiguousarray(view.transpose(0, 2, 1))


def test_validation_tail_is_held_out_and_the_best_epochs_weights_are_kept():
    values = sines(400)
    engine = ReconstructionEngine(n_epochs=6, patience=None, **TINY)
    train, val = engine.split_validation(values)
    assert len(val) == 40 and np.array_equal(np.concatenate([train, val]), values)
    engine.fit(values)
    assert engine.epochs_trained == 6 and engine.best_epoch is not None
    # anomaly mode: the validation loss is the plain MSE over the held-out windows
    x = windows(val, 24)
    recon = engine.reconstruct_windows(x, np.ones_like(x, dtype=bool))
    assert float(np.mean((recon - x) ** 2)) == pytest.approx(engine.best_val_loss, rel=1e-4)


class _BatchSizes(pl.Callback):
    def __init__(self):
        self.sizes = []

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.sizes.append(len(batch[0]))


@pytest.mark.parametrize("n_windows, expected", [(33, [16, 16] * 2), (10, [10] * 2)])
def test_training_batches_are_full_unless_one_batch_holds_every_window(n_windows, expected):
    """A last batch of one window (33 = 2 x 16 + 1) is dropped: BatchNorm's statistics over it
    blew ETTh2's training up; with fewer windows than a batch, that one batch trains."""
    seen = _BatchSizes()
    engine = ReconstructionEngine(n_epochs=2, validation_fraction=0.0, **TINY, pl_trainer_kwargs={"callbacks": [seen]})
    engine.fit(sines(n_windows + 23))
    assert seen.sizes == expected


def test_a_short_validation_tail_grows_to_one_window():
    engine = ReconstructionEngine(validation_fraction=0.05, **TINY)
    train, val = engine.split_validation(sines(100))
    assert (len(train), len(val)) == (76, 24)


def test_early_stopping_ends_training_before_the_maximum():
    engine = ReconstructionEngine(
        n_epochs=200, patience=1, learning_rate=0.05, patience_after_warmup=False, **TINY
    ).fit(sines(300))
    assert engine.epochs_trained < 200
    assert engine.best_epoch < engine.epochs_trained


def test_patience_counts_only_after_the_learning_rate_peak():
    # a learning rate so high that the validation loss jumps during the one-cycle warm-up
    settings = dict(n_epochs=10, patience=1, learning_rate=3.0, **TINY)
    plain = ReconstructionEngine(patience_after_warmup=False, **settings).fit(sines(300))
    assert plain.epochs_trained < 4  # stopped while the rate was still rising
    engine = ReconstructionEngine(**settings).fit(sines(300))
    assert engine.epochs_trained >= 5  # 10 epochs: the rate peaks after 4, patience counts from there
    assert len(engine.val_losses) == engine.epochs_trained
    assert engine.best_val_loss == min(engine.val_losses)


def test_series_too_short_for_validation_warns_and_trains_every_epoch():
    engine = ReconstructionEngine(n_epochs=2, **TINY)
    with pytest.warns(UserWarning, match="too short to hold out a validation window of 24"):
        engine.fit(sines(40))
    assert engine.epochs_trained == 2 and engine.best_epoch is None


def test_validation_fraction_zero_trains_without_validation():
    engine = ReconstructionEngine(n_epochs=2, validation_fraction=0.0, **TINY).fit(sines(100))
    assert engine.epochs_trained == 2 and engine.best_val_loss is None


def test_explicit_validation_values_are_used_as_given():
    engine = ReconstructionEngine(n_epochs=2, patience=None, mask_rate=0.3, **TINY)
    engine.fit(sines(200), val_values=sines(60, seed=1))
    assert engine.best_val_loss is not None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(fill="cubic"), "fill must be one of"),
        (dict(validation_fraction=1.0), r"validation_fraction must be in \[0, 1\)"),
        (dict(patience=0), "patience must be a positive integer or None"),
        (dict(n_epochs=0), "n_epochs must be a positive integer"),
        (dict(train_stride=0), "train_stride must be a positive integer"),
    ],
)
def test_bad_training_settings_are_refused_with_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ReconstructionEngine(**{**TINY, **kwargs})


def test_fit_is_quiet_by_default(capfd):
    ReconstructionEngine(n_epochs=1, **TINY).fit(sines(200))
    XCTFormerImputer(n_epochs=1, **TINY).fit(pd.DataFrame(sines(200)))
    out, err = capfd.readouterr()
    for banner in ("GPU available", "TPU available", "Tip", "Loading", "Epoch", "train_dataloader"):
        assert banner not in out + err, (banner, out + err)


def test_linear_fill_shows_the_network_interpolated_inputs(monkeypatch):
    engine = ReconstructionEngine(n_epochs=1, mask_rate=0.25, fill="linear", validation_fraction=0.0, **TINY)
    engine.fit(sines(100))
    seen = {}

    def spy(x, mask=None):
        seen["x"], seen["mask"] = x.clone(), mask
        return x

    monkeypatch.setattr(engine.module.net, "forward", spy)
    x = np.tile(np.arange(24, dtype=np.float32)[None, :, None], (1, 1, 3))
    visible = np.ones_like(x, dtype=bool)
    visible[0, 5:9, 1] = False
    engine.reconstruct_windows(np.where(visible, x, 0.0), visible)
    assert seen["mask"] is None
    torch.testing.assert_close(seen["x"], torch.from_numpy(x))  # a ramp interpolates back to itself


@pytest.mark.parametrize("cls", [XCTFormerImputer, XCTFormerAnomalyDetector])
def test_estimators_store_the_new_training_parameters_as_given(cls):
    params = cls(patience=None, validation_fraction=0.2).get_params()
    assert params["patience"] is None and params["validation_fraction"] == 0.2
    assert params["n_epochs"] == 50 and params["progress_bar"] is False
    assert XCTFormerImputer(fill="linear").get_params()["fill"] == "linear"


def test_scorer_passes_training_parameters_to_its_engine():
    engine = XCTFormerScorer(patience=2, validation_fraction=0.3).engine
    assert (engine.patience, engine.validation_fraction, engine.n_epochs) == (2, 0.3, 50)


def test_inference_runs_where_training_ran_or_where_asked():
    values = np.sin(np.arange(300) / 5)[:, None].repeat(2, axis=1).astype(np.float32)
    tiny = dict(window_length=16, patch_len=4, stride=2, d_model=8, n_heads=1, d_ff=16, e_layers=1, n_epochs=1)
    engine = ReconstructionEngine(**tiny, accelerator="auto").fit(values)
    assert engine.trained_on == "cpu"  # Lightning's choice on this machine, not a guess of our own
    expected = engine.reconstruct(values)
    engine.trained_on = "cuda:0"  # e.g. an engine trained on a GPU, unpickled on a laptop
    if not torch.cuda.is_available():
        with pytest.warns(UserWarning, match="trained on cuda:0, which this machine does not have"):
            np.testing.assert_allclose(engine.reconstruct(values), expected, rtol=1e-6)
    engine.inference_device = "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.reconstruct(values)
    assert str(engine.module.net.head.linear.weight.device) == "cpu"
    with pytest.raises(ValueError, match="inference_device='gpu0' is not a torch device"):
        ReconstructionEngine(**tiny, inference_device="gpu0")
