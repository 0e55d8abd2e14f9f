import numpy as np
import pytest

from benchmarks.covariate_errors import split_errors


def test_split_errors_against_a_plain_rebuild():
    rng = np.random.default_rng(0)
    seq_len, horizon, rows, channels = 4, 96, 110, 2
    truth = rng.normal(size=(rows, channels))
    flag = (rng.random(rows) < 0.3).astype(float)
    forecasts = [rng.normal(size=(horizon, channels)) for _ in range(rows - seq_len - horizon + 1)]
    on, off, lead = [], [], np.zeros(horizon)
    for i, forecast in enumerate(forecasts):
        for step in range(horizon):
            error = (forecast[step] - truth[seq_len + i + step]) ** 2
            (on if flag[seq_len + i + step] else off).extend(error)
            lead[step] += error.mean() / len(forecasts)
    errors = split_errors(truth, forecasts, flag, seq_len)
    assert errors["mse_flag_on"] == pytest.approx(np.mean(on))
    assert errors["mse_flag_off"] == pytest.approx(np.mean(off))
    assert errors["mse"] == pytest.approx(np.mean(on + off))
    assert errors["share_on"] == pytest.approx(len(on) / len(on + off))
    assert errors["mse_by_lead"]["95"] == pytest.approx(lead[95])


def test_an_unknown_flag_is_refused_before_any_training(tmp_path, capsys):
    from benchmarks.covariate_errors import main

    with pytest.raises(SystemExit):
        main(["--flag", "temperature", "--output", str(tmp_path)])
    assert "not a covariate of known-multiplicative" in capsys.readouterr().err
    assert not (tmp_path / "rows.jsonl").exists()
