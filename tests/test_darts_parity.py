"""What Darts users expect of a torch model (issue 13): MC dropout, sample weights, encoders, shifts
(covariates: tests/test_covariates.py)."""

import numpy as np
from darts import TimeSeries

from xct_estimators import XCTFormerModel


def fitted(tmp_path, **changes):
    kwargs = dict(input_chunk_length=24, output_chunk_length=6, patch_len=8, stride=4, d_model=8, d_ff=16,
                  n_epochs=2, random_state=0, work_dir=str(tmp_path),
                  pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False})  # fmt: skip
    series = TimeSeries.from_values(np.sin(np.arange(300) / 5)[:, None].astype(np.float32))
    return XCTFormerModel(**{**kwargs, **changes}).fit(series), series


def test_mc_dropout_samples_forecasts_with_spread(tmp_path):
    model, series = fitted(tmp_path)
    assert model.supports_probabilistic_prediction
    sampled = model.predict(6, num_samples=50, mc_dropout=True)
    assert sampled.n_samples == 50 and sampled.all_values().std(axis=2).mean() > 1e-3
    same = model.predict(6, num_samples=5)  # without mc_dropout the network is deterministic
    assert same.all_values().std(axis=2).max() < 1e-6  # float32 rounding of equal samples' mean, no spread
    history = model.historical_forecasts(series, start=250, forecast_horizon=6, num_samples=20, retrain=False,
                                         predict_kwargs={"mc_dropout": True})  # fmt: skip
    assert history.n_samples == 20 and history.all_values().std(axis=2).mean() > 1e-3


def test_the_network_is_built_with_darts_monte_carlo_dropout_where_it_drops(tmp_path):
    from darts.utils.torch import MonteCarloDropout

    model, _ = fitted(tmp_path)
    monte_carlo = [m for m in model.network.modules() if isinstance(m, MonteCarloDropout)]
    assert monte_carlo and all(m.p > 0 for m in monte_carlo)
    assert model.model.supports_probabilistic_prediction  # Darts' own test for mc_dropout sampling


def test_sample_weights_encoders_and_output_chunk_shift_work(tmp_path):
    """The Darts features the support table in docs/forecasting.md claims."""
    series = TimeSeries.from_values(np.sin(np.arange(300) / 5)[:, None].astype(np.float32))
    weighted, _ = fitted(tmp_path)
    weights = TimeSeries.from_values(np.linspace(0.1, 1.0, 300)[:, None].astype(np.float32))
    weighted.fit(series, sample_weight=weights)
    assert weighted.predict(6).shape == (6, 1, 1)
    encoded = fitted(tmp_path, add_encoders={"position": {"past": ["relative"]}})[0]  # range index: no calendar
    assert encoded.predict(6).shape == (6, 1, 1)
    shifted = fitted(tmp_path, output_chunk_shift=3)[0]
    forecast = shifted.predict(6)
    assert forecast.start_time() == series.end_time() + 4  # the forecast starts 3 steps after the next one
