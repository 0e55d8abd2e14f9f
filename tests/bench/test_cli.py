import json

import pytest

import xct_estimators.bench.forecast.protocol as forecast_module
from xct_estimators.bench.cli import main
from xct_estimators.bench.forecast.record import ForecastRecord
from xct_estimators.bench.parser import build_parser
from xct_estimators.bench.results import ResultStore


class FakeRun:
    """Stands in for training: records calls, fails on the chosen call like a crash or Ctrl-C."""

    def __init__(self, fail_on=None, error=KeyboardInterrupt):
        self.calls, self.fail_on, self.error = [], fail_on, error

    def __call__(self, model, data, horizon):
        self.calls.append((model.model_name, horizon))
        if len(self.calls) == self.fail_on:
            raise self.error()
        fields = {"mse": 0.1 * len(self.calls), "mae": 0.2, "n_windows": 1, "fit_seconds": 1.0, "eval_seconds": 0.1}
        example = {"channel": "target", "history": [0.0, 1.0], "truth": [1.0], "forecast": [0.9]}
        return fields, example


ARGS = ["forecast", "--models", "dlinear,nlinear", "--horizons", "96,192", "--no-progress"]


def test_resume_after_interrupt_keeps_finished_runs(monkeypatch, tmp_path, capsys):
    interrupted = FakeRun(fail_on=3)
    monkeypatch.setattr(forecast_module, "run_forecast", interrupted)
    assert main([*ARGS, "--output", str(tmp_path)]) == 130
    assert "--resume" in capsys.readouterr().err
    done = ResultStore(tmp_path).records()
    assert [(r.horizon, r.model) for r in done] == [(96, "dlinear"), (96, "nlinear")]

    resumed = FakeRun()
    monkeypatch.setattr(forecast_module, "run_forecast", resumed)
    assert main([*ARGS, "--output", str(tmp_path), "--resume"]) == 0
    assert [h for _, h in resumed.calls] == [192, 192]  # only the unfinished runs
    records = ResultStore(tmp_path).records()
    assert len(records) == 4
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    for field in ("dataset", "task", "horizon", "model", "seed", "mse", "mae", "fit_seconds", "eval_seconds"):
        assert all(line[field] is not None for line in lines)
    out = capsys.readouterr().out
    assert "| synthetic | 192" in out and (tmp_path / "report.md").is_file()
    assert (tmp_path / "forecast_synthetic_96.png").is_file()


def test_crash_mid_run_loses_nothing_finished(monkeypatch, tmp_path):
    monkeypatch.setattr(forecast_module, "run_forecast", FakeRun(fail_on=2, error=RuntimeError))
    with pytest.raises(RuntimeError):
        main([*ARGS, "--output", str(tmp_path)])
    assert len(ResultStore(tmp_path).records()) == 1


def test_torn_last_line_is_ignored(tmp_path):
    store = ResultStore(tmp_path)
    timing = {"mae": 1.0, "fit_seconds": 1.0, "eval_seconds": 0.1}
    store.append(ForecastRecord(dataset="d", horizon=96, model="m", seed=0, mse=1.0, **timing))
    with store.path.open("a") as f:
        f.write('{"dataset": "d", "task": "fore')  # a crash mid-write
    assert len(store.records()) == 1
    store.append(ForecastRecord(dataset="d", horizon=192, model="m", seed=0, mse=1.0, **timing))
    assert [r.horizon for r in store.records()] == [96, 192]


def test_bad_input_gives_a_clear_error(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["forecast", "--models", "prophet", "--output", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "expected a comma-separated list of xctformer" in capsys.readouterr().err
    assert main(["forecast", "--dataset", "nope", "--output", str(tmp_path), "--no-progress"]) == 2
    assert "Unknown dataset 'nope'" in capsys.readouterr().err


def test_no_arguments_is_the_main_job():
    args = build_parser().parse_args(["forecast"])
    assert args.dataset == ["synthetic"] and args.horizons is None and not args.full
    help_text = build_parser().format_help()
    for command in ("forecast", "impute", "detect", "profile", "report"):
        assert command in help_text


@pytest.mark.parametrize("argv", [["tune", "--resume"], ["tune", "--seeds", "1,2"], ["explain", "--resume"]])
def test_options_a_command_would_ignore_are_not_offered(argv, capsys):
    """A study always continues from its storage and has one seed; explain always reuses its saved models."""
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2 and f"unrecognized arguments: {' '.join(argv[1:])}" in capsys.readouterr().err


def test_every_option_of_a_training_command_lands_in_its_settings():
    """``settings_from`` passes on only the settings' fields: an option without one would be ignored."""
    import argparse

    from xct_estimators.bench.parser import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, parser in commands.items():
        settings_cls = parser.get_default("settings_cls")
        if settings_cls is not None:  # profile and report take no training settings
            options = {action.dest for action in parser._actions if action.dest != "help"}
            assert options <= set(settings_cls.__dataclass_fields__), (
                name,
                options - set(settings_cls.__dataclass_fields__),
            )
            assert {"output", "seed", "devices"} <= options, name


def test_a_command_without_options_runs_at_its_settings_defaults():
    """The parser takes every default from the settings' fields: none is typed twice."""
    import argparse

    from xct_estimators.bench.parser import settings_from

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    trained = [name for name, parser in commands.items() if parser.get_default("settings_cls") is not None]
    assert set(trained) == {"forecast", "impute", "detect", "explain", "tune"}
    for name in trained:
        settings = settings_from(build_parser().parse_args([name]))
        assert settings == type(settings)(), name


def test_a_report_of_records_copied_without_their_saved_forecasts_draws_quietly(tmp_path):
    import shutil
    import warnings
    from pathlib import Path

    from xct_estimators.bench.report import write_report

    committed = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "cpu" / "main-job" / "results.jsonl"
    shutil.copy(committed, tmp_path / "results.jsonl")  # no examples/ beside it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text, files = write_report(tmp_path)
    assert "xctformer" in text and (tmp_path / "forecast_synthetic_96.png") in files
