import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from darts import TimeSeries
from darts.metrics import mse
from darts.utils.likelihood_models.torch import GaussianLikelihood, QuantileRegression
from darts.utils.serialization import safe_globals

from xct_estimators import KeepBestValidationWeights, XCTFormerModel

IN, OUT = 32, 8


class Recorder(pl.Callback):
    """Records each epoch's validation loss and weights."""

    def __init__(self):
        self.history = []

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            state = {k: v.detach().clone() for k, v in pl_module.state_dict().items()}
            self.history.append((float(trainer.callback_metrics["val_loss"]), state))


def make_series(n=400, channels=3, seed=0, offset=0.0, noise=0.05):
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None]
    periods = np.array([12.0, 17.0, 9.0, 23.0, 7.0, 13.0, 29.0][:channels])
    values = np.sin(2 * np.pi * t / periods) + noise * rng.standard_normal((n, channels)) + offset
    return TimeSeries.from_values(values.astype(np.float32))


class SpoilLastEpoch(pl.Callback):
    """Wrecks the weights during the last epoch, so its validation loss is never the best."""

    def on_train_batch_end(self, trainer, pl_module, *args):
        if trainer.current_epoch == trainer.max_epochs - 1:
            with torch.no_grad():
                for p in pl_module.parameters():
                    p.add_(torch.randn_like(p))


def noise_series(n=600, channels=3):
    values = np.random.default_rng(0).standard_normal((n, channels))
    return TimeSeries.from_values(values.astype(np.float32))


@pytest.fixture
def small(tmp_path):
    """Keyword arguments for a tiny, quiet XCTFormerModel that writes only under tmp_path."""

    def build(**changes):
        kwargs = dict(
            input_chunk_length=IN,
            output_chunk_length=OUT,
            patch_len=8,
            stride=4,
            d_model=16,
            n_heads=2,
            d_ff=32,
            e_layers=1,
            n_epochs=2,
            batch_size=32,
            random_state=0,
            work_dir=str(tmp_path),
            pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False},
        )
        kwargs.update(changes)
        return XCTFormerModel(**kwargs)

    return build


def test_fit_predict_multivariate_and_autoregressive(small):
    series = make_series()
    model = small().fit(series)
    short, long = model.predict(OUT - 3), model.predict(3 * OUT + 2)
    assert short.shape == (OUT - 3, 3, 1) and long.shape == (3 * OUT + 2, 3, 1)
    assert short.start_time() == series.end_time() + 1
    assert np.isfinite(long.values()).all()
    # the first steps of an autoregressive forecast are the one-shot forecast
    np.testing.assert_allclose(long.values()[: OUT - 3], short.values(), atol=1e-5)


def test_fit_predict_list_of_series(small):
    series = [make_series(seed=1), make_series(300, seed=2, offset=5.0)]
    model = small().fit(series)
    forecasts = model.predict(OUT, series=series)
    assert [f.shape for f in forecasts] == [(OUT, 3, 1), (OUT, 3, 1)]
    assert forecasts[1].values().mean() > 3  # instance norm keeps each series' level


def test_past_covariates_are_channels_ms_setting(small):
    data = make_series(channels=4)
    target, covariates = data["3"], data[["0", "1", "2"]]
    model = small().fit(target, past_covariates=covariates)
    assert model.network.config.n_channels == 4
    forecast = model.predict(OUT, series=target, past_covariates=covariates)
    assert forecast.shape == (OUT, 1, 1)
    assert forecast.components.tolist() == ["3"]
    # the covariate channels matter: shifting them in time changes the forecast (an affine
    # change would not: every channel is instance-normalised)
    shifted = covariates.with_values(np.roll(covariates.all_values(), 5, axis=0))
    moved = model.predict(OUT, series=target, past_covariates=shifted)
    assert np.abs(moved.values() - forecast.values()).max() > 1e-4


def test_same_random_state_gives_identical_forecasts(small):
    series = make_series()
    a = small(random_state=7).fit(series).predict(OUT)
    b = small(random_state=7).fit(series).predict(OUT)
    c = small(random_state=8).fit(series).predict(OUT)
    np.testing.assert_array_equal(a.values(), b.values())
    assert not np.array_equal(a.values(), c.values())


def test_save_load_round_trip(small, tmp_path):
    series = make_series()
    model = small().fit(series)
    path = str(tmp_path / "xct.pt")
    model.save(path)
    loaded = XCTFormerModel.load(path)  # Darts' default safe loading
    np.testing.assert_array_equal(loaded.predict(OUT).values(), model.predict(OUT).values())


def test_load_from_checkpoint_best_restores_best_epoch(small, tmp_path):
    recorder = Recorder()
    series = noise_series()
    train, val = series[:400], series[400 - IN :]
    model = small(
        n_epochs=4,
        model_name="best",
        save_checkpoints=True,
        force_reset=True,
        optimizer_kwargs={"lr": 0.05},
        pl_trainer_kwargs={"enable_progress_bar": False, "callbacks": [recorder, SpoilLastEpoch()]},
    )
    model.fit(train, val_series=val)
    losses = [loss for loss, _ in recorder.history]
    best_epoch = int(np.argmin(losses))
    assert best_epoch < len(losses) - 1, losses  # "best" differs from "last"
    with safe_globals([Recorder, SpoilLastEpoch]):
        best = XCTFormerModel.load_from_checkpoint("best", work_dir=str(tmp_path), best=True)
    for name, value in recorder.history[best_epoch][1].items():
        torch.testing.assert_close(best.model.state_dict()[name], value)


def test_keep_best_validation_weights_restores_lowest_val_loss_epoch(small):
    recorder, keeper = Recorder(), KeepBestValidationWeights()
    series = noise_series()
    model = small(
        n_epochs=4,
        optimizer_kwargs={"lr": 0.05},
        pl_trainer_kwargs={"enable_progress_bar": False, "callbacks": [recorder, SpoilLastEpoch(), keeper]},
    )
    model.fit(series[:400], val_series=series[400 - IN :])
    losses = [loss for loss, _ in recorder.history]
    assert keeper.best_epoch == int(np.argmin(losses)) < len(losses) - 1, losses
    for name, value in recorder.history[keeper.best_epoch][1].items():
        torch.testing.assert_close(model.model.state_dict()[name], value)


def windows(values, starts, length):
    return np.stack([values[s : s + length] for s in starts])


def test_historical_forecasts_equal_direct_batched_forward(small):
    series = make_series(300)
    model = small().fit(series[:200])
    forecasts = model.historical_forecasts(
        series,
        start=200,
        forecast_horizon=OUT,
        stride=1,
        retrain=False,
        last_points_only=False,
        verbose=False,
    )
    values = series.values()
    starts = np.arange(200 - IN, len(series) - IN - OUT + 1)
    assert len(forecasts) == len(starts)
    net = model.network.eval()
    with torch.no_grad():
        direct = net(torch.from_numpy(windows(values, starts, IN))).numpy()
    stacked = np.stack([f.values() for f in forecasts])
    np.testing.assert_allclose(stacked, direct, atol=1e-5, rtol=0)

    errors = model.backtest(series, historical_forecasts=forecasts, metric=mse, last_points_only=False)
    truth = windows(values, starts + IN, OUT)
    assert errors == pytest.approx(np.mean((direct - truth) ** 2), rel=1e-5)


def test_gridsearch_over_two_values(small, tmp_path):
    series = make_series(300)
    best, params, score = XCTFormerModel.gridsearch(
        parameters={
            "input_chunk_length": [IN],
            "output_chunk_length": [OUT],
            "patch_len": [8],
            "stride": [4],
            "d_model": [8, 16],
            "n_heads": [1],
            "d_ff": [16],
            "e_layers": [1],
            "n_epochs": [1],
            "random_state": [0],
            "work_dir": [str(tmp_path)],
            "pl_trainer_kwargs": [{"enable_progress_bar": False}],
        },
        series=series[:220],
        val_series=series[220 - IN :],
        metric=mse,
    )
    assert params["d_model"] in (8, 16) and np.isfinite(score)
    assert isinstance(best, XCTFormerModel)


def test_quantile_regression_is_ordered_and_median_close_to_deterministic(small):
    series = make_series(800, channels=2, noise=0.3)  # quantiles well apart
    deterministic = small(n_epochs=8, optimizer_kwargs={"lr": 0.01}).fit(series)
    quantiles = [0.1, 0.5, 0.9]
    probabilistic = small(n_epochs=8, optimizer_kwargs={"lr": 0.01}, likelihood=QuantileRegression(quantiles)).fit(
        series
    )
    params = probabilistic.predict(OUT, predict_likelihood_parameters=True)
    assert params.n_components == 2 * 3
    q = params.values().reshape(OUT, 2, 3)
    assert (q[..., 0] < q[..., 1]).all() and (q[..., 1] < q[..., 2]).all()
    samples = probabilistic.predict(OUT, num_samples=200)
    assert samples.n_samples == 200
    median = q[..., 1]
    reference = deterministic.predict(OUT).values()
    amplitude = series.values().std()
    assert np.abs(median - reference).mean() < 0.25 * amplitude


def test_other_likelihoods_are_rejected_clearly(small):
    with pytest.raises(ValueError, match="supports likelihood=QuantileRegression"):
        small(likelihood=GaussianLikelihood())


def test_too_short_series_is_a_clear_error(small):
    with pytest.raises(ValueError, match=r"has 39 time steps, too short.*32 \+ 8 \+ 0 = 40"):
        small().fit(make_series(39))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_values_are_a_clear_error(small, bad):
    values = make_series().values().copy()
    values[10, 1] = bad
    with pytest.raises(ValueError, match="MissingValuesFiller or xct_estimators.XCTFormerImputer"):
        small().fit(TimeSeries.from_values(values))


def test_predict_with_other_component_count_is_a_clear_error(small):
    model = small().fit(make_series(channels=3))
    with pytest.raises(
        ValueError,
        match="has 2 components, but XCTFormerModel was fitted on series with 3 components",
    ):
        model.predict(OUT, series=make_series(channels=2))


def test_too_many_tokens_suggests_decop_k(small):
    series = make_series(200, channels=3)
    with pytest.raises(ValueError, match="Too many tokens for full CRAB.*Set decop_k"):
        small(max_attention_bytes=10_000).fit(series)
    model = small(max_attention_bytes=10_000, decop_k=4).fit(series)
    assert model.network.config.decop_k == 4


def test_decop_auto_follows_paper_rule(small):
    narrow = small(decop_k="auto").fit(make_series(channels=3))
    assert narrow.network.config.decop_k is None
    wide = TimeSeries.from_values(np.random.default_rng(0).standard_normal((120, 61)).astype("f4"))
    model = small(decop_k="auto", n_epochs=1).fit(wide)
    assert model.network.config.decop_k == 64


def test_invalid_architecture_fails_at_construction(small):
    with pytest.raises(ValueError, match="not divisible by n_heads"):
        small(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="decop_k must be None, 'auto'"):
        small(decop_k="yes")


def test_from_preset_sets_the_paper_recipe(tmp_path):
    model = XCTFormerModel.from_preset(
        "ETTh1",
        output_chunk_length=24,
        n_epochs=2,
        work_dir=str(tmp_path),
        pl_trainer_kwargs={"enable_progress_bar": False},
    )
    assert (model.input_chunk_length, model.d_model, model.n_heads, model.e_layers) == (96, 8, 1, 1)
    assert model.batch_size == 32 and model.n_epochs == 2
    series = make_series(96 + 24 + 32 * 4, channels=7)  # 4 batches per epoch ... plus one sample
    model.fit(series)
    scheduler = model.trainer.lr_scheduler_configs[0]
    assert scheduler.interval == "step"
    sched = scheduler.scheduler
    assert isinstance(sched, torch.optim.lr_scheduler.OneCycleLR)
    assert sched.total_steps == model.trainer.estimated_stepping_batches == 2 * 5
    assert sched.last_epoch == sched.total_steps  # stepped once per batch
    assert any(isinstance(c, KeepBestValidationWeights) for c in model.trainer.callbacks)
    optimizer = model.trainer.optimizers[0]
    assert optimizer.defaults["lr"] == pytest.approx(0.001)


def test_one_cycle_momentum_cycles_adam_beta1(tmp_path):
    model = XCTFormerModel.from_preset(
        "ETTh1",
        output_chunk_length=8,
        n_epochs=1,
        batch_size=4,
        work_dir=str(tmp_path),
        pl_trainer_kwargs={"enable_progress_bar": False},
    )
    betas = []

    class Beta(pl.Callback):
        def on_train_batch_start(self, trainer, *args):
            betas.append(trainer.optimizers[0].param_groups[0]["betas"][0])

    model.trainer_params["callbacks"].append(Beta())
    model.fit(make_series(96 + 8 + 40, channels=7))
    assert betas[0] == pytest.approx(0.95)
    assert min(betas) == pytest.approx(0.85, abs=0.01)


def test_the_searched_recipe_is_the_nearest_searched_horizon_s_with_its_own_input(monkeypatch):
    import dataclasses

    from xct_estimators.nn import presets

    paper = presets.get_preset("ETTh1")
    at_96 = dataclasses.replace(paper, input_len=336, patch_len=24, stride=12, learning_rate=0.005)
    at_336 = dataclasses.replace(paper, input_len=512, patch_len=32, stride=16, d_model=16, d_ff=32)
    monkeypatch.setattr(presets, "SEARCHED", {("ETTh1", 96): at_96, ("ETTh1", 336): at_336})
    for horizon, length in ((96, 336), (192, 336), (216, 336), (217, 512), (720, 512)):  # 216: a tie, the shorter
        model = XCTFormerModel.from_preset("etth1", horizon, recipe="searched")
        assert model.input_chunk_length == length and model.output_chunk_length == horizon
    assert (model.patch_len, model.stride, model.d_model, model.d_ff) == (32, 16, 16, 32)
    model = XCTFormerModel.from_preset("ETTh1", 96, recipe="searched", input_chunk_length=192)  # an override wins
    assert model.input_chunk_length == 192 and model.patch_len == 24
    assert XCTFormerModel.from_preset("ETTh1", 96).input_chunk_length == 96  # the paper's stays the default
    missing = r"No searched recipe for ETTm2 yet \(the project's recorded searches: ETTh1\)\. Take the paper's"
    with pytest.raises(ValueError, match=missing):
        XCTFormerModel.from_preset("ETTm2", 96, recipe="searched")
    with pytest.raises(ValueError, match="recipe='best': choose 'paper' or 'searched'"):
        XCTFormerModel.from_preset("ETTh1", 96, recipe="best")
