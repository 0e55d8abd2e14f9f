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


@pytest.mark.parametrize(
    "arguments, error",
    [
        (["--flag", "temperature"], "not a covariate of known-multiplicative"),
        (["--family", "retail", "--flag", "temperature"], "retail's temperature is not a 0/1 flag"),
        (["--family", "panel"], "invalid choice: 'panel'"),  # one test split per member: not split here
    ],
)
def test_a_flag_that_cannot_split_the_steps_is_refused_before_any_training(arguments, error, tmp_path, capsys):
    from benchmarks.covariate_errors import main

    with pytest.raises(SystemExit):
        main([*arguments, "--output", str(tmp_path)])
    assert error in capsys.readouterr().err
    assert not (tmp_path / "rows.jsonl").exists()


def test_the_error_table_gives_each_model_and_mode_its_means(tmp_path):
    import json

    from benchmarks.measure.covariate_tables import error_split_table

    def row(model, covariates, seed, mse):
        lead = {"0": mse / 4, "47": mse, "95": 2 * mse}
        return {"model": model, "covariates": covariates, "seed": seed, "family": "multiplicative", "flag": "promo",
                "horizon": 96, "mse": mse, "mse_flag_on": 2 * mse, "mse_flag_off": mse / 2, "share_on": 0.25,
                "mse_by_lead": lead, "git_commit": "abcdef1234", "device": {"cpu": "test CPU"},
                "command": "python -m benchmarks.covariate_errors"}  # fmt: skip

    rows = [row("xctformer", "all", 1, 0.2), row("xctformer", "all", 2, 0.4), row("tsmixer", "none", 1, 0.3)]
    path = tmp_path / "results" / "cpu" / "covariate-errors" / "rows.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = error_split_table(tmp_path / "results", tmp_path)
    assert "| model | covariates | MSE | promo on | promo off | step 1 | step 48 | step 96 |" in table
    assert "| `xctformer` | all | 0.300 ± 0.141 | 0.600 ± 0.283 | 0.150 ± 0.071 | 0.075 ± 0.035 |" in table
    assert "| `tsmixer` | none | 0.300 | 0.600 | 0.150 | 0.075 | 0.300 | 0.600 |" in table
    assert "a share 0.25 of them" in table and "commit abcdef1 on test CPU" in table
    other = {**row("tide", "all", 1, 0.3), "family": "retail"}
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, other]))
    with pytest.raises(ValueError, match="several \\(family, flag, horizon\\)"):
        error_split_table(tmp_path / "results", tmp_path)
