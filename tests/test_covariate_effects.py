"""benchmarks/covariate_effects.py: per-channel errors against a plain rebuild, the decoder switched
off, and bad options refused before any training."""

import numpy as np
import pytest


def test_per_channel_errors_match_a_plain_rebuild():
    from benchmarks.covariate_effects import per_channel_mse

    rng = np.random.default_rng(0)
    truth, seq_len, horizon = rng.standard_normal((30, 3)), 5, 4
    forecasts = [rng.standard_normal((horizon, 3)) for _ in range(30 - seq_len - horizon + 1)]
    expected = np.zeros(3)
    for i, forecast in enumerate(forecasts):
        for step in range(horizon):
            expected += (forecast[step] - truth[seq_len + i + step]) ** 2
    np.testing.assert_allclose(per_channel_mse(truth, forecasts, seq_len), expected / (len(forecasts) * horizon))


def test_effects_off_gives_the_forecast_of_the_backbone_alone(tmp_path):
    import torch

    from benchmarks.covariate_effects import effects_off
    from tests.test_covariates import driven, model

    series, control = driven()
    fitted = model(tmp_path, n_epochs=1)
    fitted.fit(series, future_covariates=control)
    decoder = fitted.model.net.known_future
    with torch.no_grad():  # effects that vary with the covariate, so "off" differs from "on"
        decoder.decode.skip.weight.fill_(1.0)
    on = fitted.predict(8, future_covariates=control).values()
    with effects_off(fitted):
        off = fitted.predict(8, future_covariates=control).values()
    with torch.no_grad():
        for layer in (decoder.decode.skip, decoder.decode.mlp[-1], decoder.gain.skip, decoder.gain.mlp[-1]):
            layer.weight.zero_(), layer.bias.zero_()  # zero effects, the decoder's own way
    np.testing.assert_allclose(off, fitted.predict(8, future_covariates=control).values(), atol=1e-5)
    assert not np.allclose(on, off)


@pytest.mark.parametrize(
    "arguments, error",
    [
        (["--columns", "hour,month"], "--columns: unknown month; choose from hour, dayofweek"),
        (["--covariates", "none"], "--covariates none: synthetic gets no future covariates"),
    ],
)
def test_bad_options_are_refused_before_any_training(arguments, error, tmp_path, capsys):
    from benchmarks.covariate_effects import main

    with pytest.raises(SystemExit):
        main(["--dataset", "synthetic", *arguments, "--output", str(tmp_path)])
    assert error in capsys.readouterr().err
    assert not (tmp_path / "rows.jsonl").exists()
