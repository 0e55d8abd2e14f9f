"""One definition of the network's hyperparameters: every signature, docstring and name list agrees with it."""

import dataclasses
import inspect

import pytest

from xct_estimators import (
    ReconstructionEngine,
    XCTFormerAnomalyDetector,
    XCTFormerForecaster,
    XCTFormerImputer,
    XCTFormerModel,
    XCTFormerScorer,
)
from xct_estimators.nn import XCTFormerConfig
from xct_estimators.nn.config import COVARIATE_FIELDS
from xct_estimators.nn.hyperparameters import (
    ARCHITECTURE_PARAMS,
    DECOP_AUTO_DOC,
    NETWORK_PARAMS,
    PLACEHOLDER,
    RECONSTRUCTION_DEFAULTS,
    defaults,
    hyperparameters_of,
    parameter_entries,
)

FORECASTING = (XCTFormerModel, XCTFormerForecaster)
RECONSTRUCTION = (ReconstructionEngine, XCTFormerScorer, XCTFormerImputer, XCTFormerAnomalyDetector)


def test_the_config_has_every_hyperparameter_with_its_default_in_the_tables_order():
    fields = [f for f in dataclasses.fields(XCTFormerConfig)[3:] if f.name not in COVARIATE_FIELDS]  # data sizes
    assert [f.name for f in fields] == list(NETWORK_PARAMS)
    assert {f.name: f.default for f in fields} == defaults()


@pytest.mark.parametrize("estimator", FORECASTING + RECONSTRUCTION, ids=lambda c: c.__name__)
def test_every_signature_default_is_the_tables(estimator):
    names = hyperparameters_of(estimator)
    assert set(ARCHITECTURE_PARAMS) - {"head_dropout"} <= set(names)  # every estimator takes the architecture
    expected = defaults(reconstruction=estimator in RECONSTRUCTION)
    parameters = inspect.signature(estimator.__init__).parameters
    assert {name: parameters[name].default for name in names} == {name: expected[name] for name in names}


def test_the_two_sets_of_defaults_differ_in_the_documented_entry_only():
    forecasting, reconstruction = defaults(), defaults(reconstruction=True)
    assert (
        {k for k in forecasting if forecasting[k] != reconstruction[k]}
        == set(RECONSTRUCTION_DEFAULTS)
        == {"attn_dropout"}
    )


def _documentation():
    """Each estimator: the docstring style, what it adds to an entry, its own table of entries, and
    the entries it writes in its own words."""
    from xct_estimators.nn.compiling import COMPILE
    from xct_estimators.reconstruction import TRAINING_PARAMETERS

    hardware = {name: TRAINING_PARAMETERS[name] for name in ("accelerator", "devices", "precision")}
    decop = {"decop_k": DECOP_AUTO_DOC}
    return {
        XCTFormerConfig: ("darts", None, None, ()),
        XCTFormerModel: ("darts", decop, {"compile": COMPILE}, ()),
        XCTFormerForecaster: ("sktime", decop, {**hardware, "compile": COMPILE}, ()),
        ReconstructionEngine: ("darts", None, TRAINING_PARAMETERS, ()),
        XCTFormerScorer: ("darts", None, TRAINING_PARAMETERS, ()),
        XCTFormerImputer: ("sktime", None, TRAINING_PARAMETERS, ("mask_rate", "fill")),  # no anomaly mode here
        XCTFormerAnomalyDetector: ("sktime", None, TRAINING_PARAMETERS, ()),
    }


@pytest.mark.parametrize("estimator", (XCTFormerConfig,) + FORECASTING + RECONSTRUCTION, ids=lambda c: c.__name__)
def test_every_docstring_holds_each_parameters_entry_from_its_table(estimator):
    """Each docstring's ``{parameters}`` line became the entries as the table writes them, in the
    style of the estimator's ecosystem; the entries in its own words stay."""
    doc = " ".join((estimator.__init__.__doc__ if estimator is XCTFormerModel else estimator.__doc__).split())
    assert PLACEHOLDER not in doc
    style, extra, more, own_words = _documentation()[estimator]
    entries = parameter_entries(estimator, style, extra, more)
    assert set(hyperparameters_of(estimator)) <= set(entries) and all(f"{name} : " in doc for name in own_words)
    stale = [name for name, entry in entries.items() if name not in own_words and " ".join(entry.split()) not in doc]
    assert not stale, f"rewrite these entries of {estimator.__name__}'s docstring from parameter_entries: {stale}"


def test_the_name_lists_are_derived_from_the_table():
    from xct_estimators.bench.option_types import ARCH_KEYS
    from xct_estimators.sktime._engine_params import ENGINE_PARAMS

    assert list(ARCH_KEYS) == list(ARCHITECTURE_PARAMS)
    assert ARCH_KEYS["d_model"] is int and ARCH_KEYS["attn_dropout"] is float
    assert set(hyperparameters_of(ReconstructionEngine)) <= set(ENGINE_PARAMS)
    assert set(hyperparameters_of(XCTFormerForecaster)) <= set(hyperparameters_of(XCTFormerModel))


def test_both_adapters_carry_the_architecture_as_attributes():
    model = XCTFormerModel(24, 8, d_model=8, n_heads=1, attn_dropout=0.2)
    engine = ReconstructionEngine(window_length=24, d_model=8, n_heads=1, attn_dropout=0.2)
    for estimator in (model, engine):
        assert estimator.d_model == 8 and estimator.n_heads == 1 and estimator.attn_dropout == 0.2
    assert engine.architecture == {name: getattr(engine, name) for name in hyperparameters_of(ReconstructionEngine)}
    config = model._network_config(n_channels=3, nr_params=1, decop_k=None, max_attention_bytes=None)
    assert (config.d_model, config.n_heads, config.attn_dropout, config.n_channels) == (8, 1, 0.2, 3)
    plain = XCTFormerModel(24, 8, d_model=8, n_heads=1, fused_attention=False)
    assert (
        plain._network_config(n_channels=3, nr_params=1, decop_k=None, max_attention_bytes=None).fused_attention
        is False
    )


@pytest.mark.parametrize("estimator", RECONSTRUCTION[1:], ids=lambda c: c.__name__)
def test_the_reconstruction_estimators_take_the_engines_parameters_in_its_order(estimator):
    """Network, training and hardware parameters (devices, pl_trainer_kwargs, max_attention_bytes
    included) with the engine's names, defaults and order; only what a task adds or drops differs."""
    engine = inspect.signature(ReconstructionEngine.__init__).parameters
    own = inspect.signature(estimator.__init__).parameters
    task_only = {"self", "alpha", "component_wise", "mask_rate", "fill", "error_scaling", "channel_aggregation"}
    task_only.add("hidden_passes")
    assert [n for n in own if n not in task_only] == [n for n in engine if n not in task_only]
    assert all(own[n].default == engine[n].default for n in own if n not in task_only)


def test_the_scorer_hands_every_argument_to_its_engine():
    from xct_estimators.scorer import XCTFormerScorer

    changed = dict(window_length=40, patch_len=8, stride=4, d_model=12, n_heads=3, d_ff=20, e_layers=1)
    changed.update(dropout=0.2, fc_dropout=0.1, attn_dropout=0.4, decop_k=None, use_mask=False, activation="softmax")
    changed.update(mixing="time", max_attention_bytes=2**20, n_epochs=7, batch_size=5, learning_rate=0.02)
    changed.update(patience=None, validation_fraction=0.3, patience_after_warmup=False, window_stride=10)
    changed.update(train_stride=2, random_state=9, accelerator="cpu", devices=1, precision="bf16-mixed")
    changed.update(progress_bar=True, inference_device="cpu", pl_trainer_kwargs={"gradient_clip_val": 1.0})
    changed.update(compile={"mode": "reduce-overhead"}, fused_attention=False, mask_rate=0.5, fill="zero")
    scoring = {"self", "component_wise", "error_scaling", "channel_aggregation", "hidden_passes"}
    scorer_parameters = set(inspect.signature(XCTFormerScorer.__init__).parameters) - scoring
    assert set(changed) == scorer_parameters
    engine = XCTFormerScorer(**changed).engine
    assert {name: getattr(engine, name) for name in changed} == changed
    assert XCTFormerScorer(decop_k=3).engine.decop_k == 3  # the one left at its default above


HARDWARE = ("random_state", "accelerator", "devices", "precision", "pl_trainer_kwargs", "compile")


@pytest.mark.parametrize("estimator", (XCTFormerForecaster, *RECONSTRUCTION), ids=lambda c: c.__name__)
def test_every_sktime_estimator_and_the_engine_take_the_hardware_parameters_and_train_with_them(estimator):
    """(XCTFormerModel takes them as Darts models do, in ``pl_trainer_kwargs``.)"""
    import numpy as np
    import pandas as pd
    import pytorch_lightning as pl

    assert set(HARDWARE) <= set(inspect.signature(estimator.__init__).parameters)
    seen = {}

    class Record(pl.Callback):
        def on_fit_start(self, trainer, pl_module):
            seen.update(precision=trainer.precision, devices=trainer.num_devices)

    tiny = dict(patch_len=4, stride=2, d_model=8, n_heads=1, d_ff=16, e_layers=1, n_epochs=1, random_state=0)
    tiny.update(fused_attention=False)
    hardware = dict(accelerator="cpu", devices=1, precision="bf16-mixed", pl_trainer_kwargs={"callbacks": [Record()]})
    t = np.arange(120)
    frame = pd.DataFrame({"a": np.sin(t / 5), "b": np.cos(t / 7)})
    length = {"input_chunk_length": 16} if estimator is XCTFormerForecaster else {"window_length": 16}
    model = estimator(**length, **tiny, **hardware)
    if estimator is XCTFormerForecaster:
        model.fit(frame, fh=[1, 2])
    elif estimator is XCTFormerScorer:
        from darts import TimeSeries

        model.fit(TimeSeries.from_dataframe(frame.astype("float32")))
    else:
        model.fit(frame.to_numpy() if estimator is ReconstructionEngine else frame)
    assert seen == {"precision": "bf16-mixed", "devices": 1}
    assert model.network_.config.fused_attention is False  # the plain path, as asked


def test_the_plain_and_fused_paths_train_alike_without_dropout():
    """``fused_attention`` changes how CRAB is computed, not what: without dropout (the one place
    the two paths draw different random numbers) the same seed gives the same reconstruction. The
    learning rate is tiny because Adam's normalised steps amplify float rounding over an epoch: the
    paths sum in other orders (AVX2 and AVX-512 builds of the kernel too), so they agree to float32's
    1e-5, as the fused path's own float32 test asks; a wrong formula is off by tenths."""
    import numpy as np

    t = np.arange(160)
    values = np.stack([np.sin(t / 5), np.cos(t / 7), np.sin(t / 3)], axis=1)
    no_dropout = dict(dropout=0.0, fc_dropout=0.0, attn_dropout=0.0)
    tiny = dict(window_length=16, patch_len=4, stride=4, d_model=8, n_heads=2, d_ff=16, e_layers=2, **no_dropout)
    common = dict(n_epochs=1, batch_size=8, learning_rate=1e-6, random_state=0, accelerator="cpu")
    out = {}
    for fused in (True, False):
        engine = ReconstructionEngine(**tiny, **common, validation_fraction=0.0, fused_attention=fused).fit(values)
        assert engine.network_.config.fused_attention is fused
        out[fused] = engine.reconstruct(values)
    np.testing.assert_allclose(out[True], out[False], rtol=1e-5, atol=1e-5)


def test_a_class_without_the_placeholder_is_refused_by_name():
    from xct_estimators.nn.hyperparameters import documented

    class Undocumented:
        """No parameters line."""

        def __init__(self, d_model=32):
            self.d_model = d_model

    with pytest.raises(ValueError, match=r"Undocumented's docstring needs a line \{parameters\}"):
        documented("sktime")(Undocumented)
