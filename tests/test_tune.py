"""The Optuna search: the paper's space as data, trials through the real training paths, export."""

import numpy as np
import pytest
from darts import TimeSeries

optuna = pytest.importorskip("optuna", reason="the tune extra (optuna) is not installed")

from xct_estimators import ReconstructionEngine, XCTFormerModel, tune  # noqa: E402
from xct_estimators.sktime import XCTFormerForecaster  # noqa: E402

TINY_SPACE = {"d_model": {"low": 4, "high": 8, "step": 4}, "learning_rate": {"choices": [1e-3, 1e-2]}}
TINY_FORECAST = {"input_chunk_length": 32, "n_epochs": 1, "e_layers": 1, "n_heads": 1}
TINY_RECONSTRUCTION = {"window_length": 32, "n_epochs": 1, "e_layers": 1, "n_heads": 1, "train_stride": 4}


def _values(n=400, seed=0):
    t = np.arange(n)
    noise = np.random.default_rng(seed).standard_normal((n, 2)) * 0.1
    return (np.stack([np.sin(t / 6), np.cos(t / 9)], axis=1) + noise).astype(np.float32)


def test_paper_space_groups():
    etth1 = tune.search_space("forecast", "ETTh1")
    assert etth1["d_model"] == {"low": 4, "high": 64, "step": 2}
    assert etth1["dropout"] == {"low": 0.1, "high": 0.3, "step": 0.05}
    assert etth1["fc_dropout"] == {"low": 0.05, "high": 0.3, "step": 0.05}
    assert etth1["learning_rate"] == {"choices": [5e-4, 1e-3, 5e-3, 1e-2]}
    assert etth1["attn_dropout"] == {"low": 0.1, "high": 0.8, "step": 0.1}
    assert etth1["n_heads"] == {"choices": [1, 2, 4]} and etth1["e_layers"] == {"low": 1, "high": 3, "step": 1}
    assert "decop_k" not in etth1 and "patch_len" not in etth1
    weather = tune.search_space("forecast", "Weather")
    assert weather["d_model"] == {"low": 8, "high": 256, "step": 8} and "dropout" not in weather
    assert tune.search_space("forecast", "ECL")["decop_k"] == {"low": 64, "high": 256, "step": 64}
    assert "decop_k" in tune.search_space("forecast", "electricity") and "decop_k" in tune.search_space(
        "impute", "traffic"
    )
    assert "decop_k" not in tune.search_space("forecast", "my_data.csv")  # not a paper dataset: by its channels
    assert "decop_k" in tune.search_space("forecast", None, n_channels=61)
    assert "decop_k" not in tune.search_space("forecast", None, n_channels=60)
    impute = tune.search_space("impute", "ETTh1")
    assert impute["d_model"] == {"low": 32, "high": 256, "step": 32}
    assert impute["patch_len"] == {"choices": [16, 64, 128]}
    assert "decop_k" not in tune.search_space("detect", "MSL")
    with pytest.raises(ValueError, match="Unknown task 'classify'"):
        tune.search_space("classify")


def test_coupled_settings_follow_the_searched_values():
    space = tune.search_space("impute", "ETTh1")
    trial = optuna.trial.FixedTrial(
        {"learning_rate": 1e-3, "attn_dropout": 0.3, "n_heads": 2, "e_layers": 2, "d_model": 96, "patch_len": 64}
    )
    params = tune.derived_params(tune.base_params("impute", "ETTh1"), tune.suggest(trial, space))
    assert params["stride"] == 32 and params["d_ff"] == 192 and params["window_length"] == 1024
    assert params["batch_size"] == 32 and params["n_epochs"] == 10  # the ETTh1 imputation preset's
    assert params["attn_dropout"] == 0.3  # no 0.30000000000000004


@pytest.mark.parametrize(
    "space, fragment",
    [({}, "non-empty dict"), ({"d_model": [8, 16]}, "must be a dict"), ({"d_model": {"low": 9, "high": 8}}, "a <= b"),
     ({"d_model": {"choices": []}}, "non-empty list")],
)  # fmt: skip
def test_bad_spaces_are_refused(space, fragment):
    with pytest.raises(ValueError, match=fragment):
        tune.check_space(space)


def test_forecast_search_exports_arguments_every_estimator_takes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    series = TimeSeries.from_values(_values())
    study = tune.search(
        series, "forecast", space=TINY_SPACE, fixed=TINY_FORECAST, output_chunk_length=8, n_trials=2,
        accelerator="cpu",
    )  # fmt: skip
    assert len(study.trials) == 2 and all(t.state.name == "COMPLETE" for t in study.trials)
    params = tune.best_params(study)
    assert params["d_ff"] == 2 * params["d_model"] and params["input_chunk_length"] == 32
    assert study.best_value == pytest.approx(min(t.value for t in study.trials))
    model = XCTFormerModel.from_params(output_chunk_length=8, random_state=0, **params)
    assert model.model_params["optimizer_kwargs"] == {"lr": params["learning_rate"]}
    model.fit(series[:300], val_series=series[300 - 32 :], verbose=False)
    assert len(model.predict(8, series=series)) == 8
    forecaster = XCTFormerForecaster(**params)
    assert forecaster.get_params()["d_model"] == params["d_model"]
    assert list(tmp_path.iterdir()) == []  # no darts_logs / lightning_logs in the working directory


def test_reconstruction_search_exports_engine_arguments():
    study = tune.search(_values(), "detect", space=TINY_SPACE, fixed=TINY_RECONSTRUCTION, n_trials=2, accelerator="cpu")
    params = tune.best_params(study)
    assert params["batch_size"] == 128  # the paper's anomaly-detection batch size
    engine = ReconstructionEngine(**params, accelerator="cpu").fit(_values(seed=1))
    assert engine.score(_values(seed=2)).shape == (400, 2)


def test_trial_value_is_the_lowest_validation_loss_of_its_epochs():
    study = tune.search(
        _values(), "impute", space={"d_model": {"choices": [8]}}, fixed={**TINY_RECONSTRUCTION, "n_epochs": 3},
        n_trials=1, accelerator="cpu", pruner=optuna.pruners.NopPruner(),
    )  # fmt: skip
    trial = study.trials[0]
    assert len(trial.intermediate_values) == 3
    assert trial.value == pytest.approx(min(trial.intermediate_values.values()))


def test_pruned_and_infeasible_trials_and_a_study_without_result():
    space = {"d_model": {"choices": [6]}, "n_heads": {"choices": [4]}}  # 6 is not divisible by 4
    fixed = {k: v for k, v in TINY_RECONSTRUCTION.items() if k != "n_heads"}
    study = tune.search(_values(), "detect", space=space, fixed=fixed, n_trials=1, accelerator="cpu")
    assert study.trials[0].state.name == "PRUNED"
    assert "not divisible by n_heads" in study.trials[0].user_attrs["infeasible"]
    with pytest.raises(ValueError, match="no completed trial yet"):
        tune.best_params(study)
    (row,) = tune.summary(study)["trial_rows"]
    assert row["state"] == "pruned" and row["value"] is None and row["val_mse_by_epoch"] == []
    assert "not divisible by n_heads" in row["infeasible"] and row["searched"] == {"d_model": 6, "n_heads": 4}
    always = optuna.pruners.ThresholdPruner(upper=0.0)  # any positive loss is pruned after its first epoch
    study = tune.search(
        _values(), "detect", space={"d_model": {"choices": [8]}}, fixed={**TINY_RECONSTRUCTION, "n_epochs": 3},
        n_trials=1, pruner=always, accelerator="cpu",
    )  # fmt: skip
    assert study.trials[0].state.name == "PRUNED" and list(study.trials[0].intermediate_values) == [0]
    (row,) = tune.summary(study)["trial_rows"]
    assert row["val_mse_by_epoch"] == [study.trials[0].intermediate_values[0]] and row["infeasible"] is None


def test_patience_stops_a_forecasting_trial_counted_after_the_warm_up(monkeypatch):
    from xct_estimators.callbacks import EarlyStoppingAfterWarmup

    given = []
    fit_trial = tune._fit_trial

    def recording(task, data, params, callbacks, **kwargs):
        given.append(callbacks)
        return fit_trial(task, data, params, callbacks, **kwargs)

    monkeypatch.setattr(tune, "_fit_trial", recording)
    series = TimeSeries.from_values(_values())
    fixed = {**TINY_FORECAST, "n_epochs": 5}
    what = dict(space={"d_model": {"choices": [4]}}, fixed=fixed, output_chunk_length=8, n_trials=1, accelerator="cpu")
    tune.search(series, "forecast", patience=2, **what)
    (stopping,) = [c for c in given[0] if isinstance(c, EarlyStoppingAfterWarmup)]
    assert (stopping.patience, stopping.warmup_epochs, stopping.monitor) == (2, 2, "val_loss")  # ceil(0.4 * 5)
    tune.search(series, "forecast", **what)
    assert not any(isinstance(c, EarlyStoppingAfterWarmup) for c in given[1])
    with pytest.raises(ValueError, match="impute trials already stop after the paper's 6 epochs"):
        tune.search(_values(), "impute", patience=2, space={"d_model": {"choices": [8]}}, n_trials=1)
    with pytest.raises(ValueError, match="patience must be a positive whole number of epochs, got 0"):
        tune.search(series, "forecast", patience=0, **what)


def test_a_study_stored_before_patience_existed_ran_all_epochs():
    class Study:
        study_name, user_attrs = "old", {"task": "forecast"}

    tune._check_same_study(Study(), {"task": "forecast", "patience": None})
    with pytest.raises(ValueError, match=r"patience: null in the study, 3 now"):
        tune._check_same_study(Study(), {"task": "forecast", "patience": 3})


class _Signal(BaseException):
    pass


@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_a_stopped_worker_leaves_no_running_trial_and_a_rerun_continues(tmp_path, monkeypatch, kind):
    storage = str(tmp_path / "study.journal") if kind == "journal" else f"sqlite:///{tmp_path / 'study.db'}"
    kwargs = dict(space=TINY_SPACE, fixed=TINY_RECONSTRUCTION, accelerator="cpu", storage=storage, study_name="s")
    tune.search(_values(), "detect", n_trials=1, **kwargs)

    def stop(*args, **kwargs):
        raise _Signal()

    monkeypatch.setattr(tune, "_fit_trial", stop)
    with pytest.raises(_Signal):
        tune.search(_values(), "detect", n_trials=3, **kwargs)
    monkeypatch.undo()
    states = [t.state.name for t in optuna.load_study(study_name="s", storage=tune.open_storage(storage)).trials]
    assert states == ["COMPLETE", "FAIL"]
    study = tune.search(_values(), "detect", n_trials=3, **kwargs)  # 3 finished trials; the failed one is not
    assert [t.state.name for t in study.trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    again = tune.search(_values(), "detect", n_trials=3, **kwargs)
    assert len(again.trials) == 4


def test_without_optuna_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "optuna", None)
    with pytest.raises(ImportError, match=r"pip install 'xct-estimators\[tune\]'"):
        tune.search(_values(), "detect", n_trials=1)


def test_fixed_settings_leave_the_space():
    space = {"d_model": {"choices": [8]}, "n_heads": {"choices": [2]}}
    study = tune.search(
        _values(), "detect", space=space, fixed={**TINY_RECONSTRUCTION, "n_heads": 1}, n_trials=1, accelerator="cpu"
    )
    assert study.trials[0].params == {"d_model": 8} and tune.best_params(study)["n_heads"] == 1


def test_continuing_a_study_with_other_fixed_settings_names_the_difference(tmp_path):
    storage = str(tmp_path / "study.journal")
    kwargs = dict(space=TINY_SPACE, accelerator="cpu", storage=storage, study_name="s")
    tune.search(_values(), "detect", n_trials=1, fixed=TINY_RECONSTRUCTION, **kwargs)
    other = {**TINY_RECONSTRUCTION, "n_epochs": TINY_RECONSTRUCTION.get("n_epochs", 1) + 1}
    with pytest.raises(ValueError, match=r"Study 's' was started with other settings \(fixed: .*n_epochs"):
        tune.search(_values(), "detect", n_trials=2, fixed=other, **kwargs)
    assert len(optuna.load_study(study_name="s", storage=tune.open_storage(storage)).trials) == 1


def test_the_default_sampler_draws_per_trial_so_continued_studies_and_workers_draw_anew():
    """One seed, one study continued by a second process (a fresh sampler): the second draws a new
    value, and a study rerun from scratch draws the same values again."""
    import optuna

    from xct_estimators.tune import trial_seeded_tpe

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    objective = lambda trial: trial.suggest_float("x", 0.0, 1.0)  # noqa: E731
    storage = optuna.storages.InMemoryStorage()
    first = optuna.create_study(storage=storage, study_name="s", sampler=trial_seeded_tpe(2021))
    first.optimize(objective, n_trials=2)
    later = optuna.load_study(storage=storage, study_name="s", sampler=trial_seeded_tpe(2021))
    later.optimize(objective, n_trials=2)
    drawn = [t.params["x"] for t in later.trials]
    assert len(set(drawn)) == 4
    again = optuna.create_study(sampler=trial_seeded_tpe(2021))
    again.optimize(objective, n_trials=4)
    assert [t.params["x"] for t in again.trials] == drawn  # a start-up trial k draws from (seed, k) alone


def test_a_look_back_search_adds_the_input_and_patch_lengths_for_forecasting_only():
    space = tune.search_space("forecast", "ETTh1", look_backs=[720, 96, 336])
    assert space["input_chunk_length"] == {"choices": [96, 336, 720]}
    assert space["patch_len"] == {"low": 16, "high": 48, "step": 8}
    assert tune.search_space("forecast", "ETTh1", look_backs=[20])["patch_len"] == {"low": 16, "high": 16, "step": 8}
    assert tune.search_space("forecast", "ETTh1", look_backs=[12])["patch_len"] == {"low": 12, "high": 12, "step": 8}
    assert "input_chunk_length" not in tune.search_space("forecast", "ETTh1")  # the paper's 96
    with pytest.raises(ValueError, match="look-back search is for forecasting"):
        tune.search_space("impute", "ETTh1", look_backs=[96])
    with pytest.raises(ValueError, match=r"Look-backs \[720\] make more than 42 patches per channel even in the"):
        tune.search_space("forecast", "ETTh1", look_backs=[20, 720])  # patches of 16 at most: 720 never trains


def test_a_trial_is_offered_only_values_that_train_with_those_drawn_before_them():
    from xct_estimators.search_spaces import LOOK_BACKS, patches, suggest

    space = tune.search_space("forecast", "ETTh1", look_backs=LOOK_BACKS)  # d_model 4-64 step 2, heads 1-4
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    drawn = []
    for _ in range(300):
        trial = study.ask()
        values = suggest(trial, space, tune.base_params("forecast", "ETTh1"), tune.LOOK_BACK_MAX_PATCHES)
        assert values["d_model"] % values["n_heads"] == 0
        assert patches(values["input_chunk_length"], values["patch_len"]) <= tune.LOOK_BACK_MAX_PATCHES
        assert set(trial.params) == set(space)  # the narrowed parameters keep their names
        drawn.append(values)
    assert {v["patch_len"] for v in drawn if v["input_chunk_length"] == 720} == {40, 48}  # 720 / 32 makes 45
    assert {v["n_heads"] for v in drawn} == {1, 2, 4} and {v["patch_len"] for v in drawn} == {16, 24, 32, 40, 48}
    assert {v["d_model"] % 4 for v in drawn if v["n_heads"] == 1} == {0, 2}  # narrowed only where it must be
    # without a patch limit (the paper's space) nothing narrows the patch length
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    long_input = {"input_chunk_length": {"choices": [720]}, "patch_len": space["patch_len"]}
    assert {suggest(study.ask(), long_input)["patch_len"] for _ in range(60)} == {16, 24, 32, 40, 48}
    # a grid of plain names still drives every parameter
    grid = optuna.create_study(sampler=optuna.samplers.GridSampler({"n_heads": [4], "d_model": [8, 12]}))
    heads_and_width = {"n_heads": {"choices": [1, 2, 4]}, "d_model": {"low": 4, "high": 64, "step": 2}}
    assert sorted(suggest(grid.ask(), heads_and_width)["d_model"] for _ in range(2)) == [8, 12]


def test_every_look_back_is_scored_on_the_same_validation_targets(monkeypatch):
    seen = []
    fit = XCTFormerModel.fit

    def recording_fit(self, series, *args, val_series=None, **kwargs):
        length = self.model_params["input_chunk_length"]
        seen.append((length, [s.time_index[length] for s in val_series], [len(s) for s in val_series]))
        return fit(self, series, *args, val_series=val_series, **kwargs)

    monkeypatch.setattr(XCTFormerModel, "fit", recording_fit)
    series = TimeSeries.from_values(_values())
    grid = optuna.samplers.GridSampler({"input_chunk_length": [16, 32], "patch_len": [16], "d_model": [4]})
    tune.search(
        series, "forecast", space={"d_model": {"choices": [4]}}, look_backs=[16, 32],
        fixed={k: v for k, v in TINY_FORECAST.items() if k != "input_chunk_length"}, output_chunk_length=8,
        n_trials=2, sampler=grid, accelerator="cpu",
    )  # fmt: skip
    assert sorted(length for length, _, _ in seen) == [16, 32]
    first_targets = {tuple(targets) for _, targets, _ in seen}
    assert len(first_targets) == 1  # both trials score the validation split's first target onwards
    assert {n - length for length, _, (n,) in seen} == {80}  # the last 20 % of the 400 steps, after each input
    assert first_targets == {(series.time_index[400 - 80],)}


def test_a_look_back_longer_than_the_validation_data_is_refused_before_training():
    series = TimeSeries.from_values(_values())
    with pytest.raises(
        ValueError, match=r"the validation series has one of 50 steps, fewer than the longest input length 64"
    ):
        tune.search(
            series[:350], "forecast", val_series=series[350:], space={"d_model": {"choices": [4]}},
            look_backs=[32, 64], fixed={"n_epochs": 1}, output_chunk_length=8, n_trials=1, accelerator="cpu",
        )  # fmt: skip


def test_a_look_back_search_builds_no_more_patches_per_channel_than_patchtst_42():
    params = {**tune.base_params("forecast", "ETTh1"), "input_chunk_length": 720, "patch_len": 16, "stride": 8}
    problem = tune._feasibility("forecast", params, 7, 96, max_patches=tune.LOOK_BACK_MAX_PATCHES)
    assert (
        problem == "input 720 in patches of 16 (stride 8) makes 90 patches per channel, over the look-back search's 42"
    )
    assert tune._feasibility("forecast", {**params, "patch_len": 48, "stride": 24}, 7, 96, max_patches=42) is None
    assert tune._feasibility("forecast", params, 7, 96) is None  # the paper's space: no such limit
