"""`xct-bench --compile --precision`: what they reach, what they add to a run's identity, what they refuse."""

import re
import shlex

import numpy as np
import pytest
import torch
from test_tasks import sines, tiny_presets  # noqa: F401 (a fixture)

import xct_estimators.bench.impute.protocol as impute_module
from xct_estimators.bench.cli import main
from xct_estimators.bench.forecast.protocol import forecast_jobs
from xct_estimators.bench.forecast.settings import ForecastSettings
from xct_estimators.bench.impute.protocol import build_imputer
from xct_estimators.bench.impute.settings import ImputeSettings
from xct_estimators.bench.results import ResultStore
from xct_estimators.nn import compiling


def test_forecast_runs_name_the_switches_only_where_they_apply(tmp_path):
    models = ["xctformer", "dlinear"]
    plain = ForecastSettings(models=models, output=tmp_path)
    runs = {job.run["model"]: job.run for job in forecast_jobs(plain, set(), progress=False)}
    for run in runs.values():  # at their defaults: the identity of runs recorded before the options
        assert "compile" not in run and "precision" not in run and "compile" not in run["settings"]

    fast = plain.replace(compile=True, precision="bf16-mixed")
    jobs = forecast_jobs(fast, set(), progress=False)
    switched = {job.run["model"]: job.run for job in jobs}
    assert switched["xctformer"]["compile"] is True and switched["xctformer"]["precision"] == "bf16-mixed"
    assert "compile" not in switched["dlinear"] and switched["dlinear"]["precision"] == "bf16-mixed"
    build = jobs[0].work.args[0]  # what the job builds its model from
    assert build["compile"] is True and build["precision"] == "bf16-mixed"


def test_plain_attention_reaches_xctformer_and_makes_it_another_run(tmp_path):
    default = ForecastSettings(models=["xctformer", "dlinear"], output=tmp_path)
    plain = default.replace(plain_attention=True)
    before, after = (
        {job.run["model"]: job for job in forecast_jobs(s, set(), progress=False)} for s in (default, plain)
    )
    assert "fused_attention" not in before["xctformer"].run["settings"]  # runs recorded before the option
    assert after["xctformer"].run["settings"]["fused_attention"] is False
    assert after["xctformer"].work.args[0]["fused_attention"] is False  # what the job builds its model from
    assert after["dlinear"].run == before["dlinear"].run  # nothing of it applies to a baseline
    imputer = build_imputer("xctformer", "ETTh1", 0.25, ImputeSettings(plain_attention=True))
    assert imputer.engine.fused_attention is False and imputer.settings["fused_attention"] is False


def test_impute_records_and_resumes_by_the_switches(monkeypatch, tmp_path, tiny_presets):  # noqa: F811
    splits = (sines(300), sines(120, seed=2), sines(120, seed=1))
    monkeypatch.setattr(impute_module, "imputation_splits", lambda name, data_dir, seed: splits)
    monkeypatch.setattr(impute_module, "TASK_SEQ_LEN", {"impute": 32})
    argv = ["impute", "--mask-rates", "0.25", "--models", "xctformer,linear", "--train-stride", "8",
            "--eval-stride", "8", "--output", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main([*argv, "--compile", "--precision", "bf16-mixed"]) == 0  # inductor, bf16 autocast on the CPU
    xct, linear = ResultStore(tmp_path).records()
    assert xct.run["compile"] is True and xct.run["precision"] == "bf16-mixed"
    assert (xct.compile, xct.precision) == (True, "bf16-mixed") and np.isfinite(xct.mse)
    assert "compile" not in linear.run and "precision" not in linear.run  # nothing of it applies
    assert xct.eval_compilations <= 1 and linear.eval_compilations == 0  # one inference graph at most
    assert (linear.compile, linear.precision) == (False, "32")
    for record in (xct, linear):  # where each number comes from
        assert record.command == shlex.join(["xct-bench", *argv, "--compile", "--precision", "bf16-mixed"])
        assert record.git_commit == "unknown" or re.fullmatch("[0-9a-f]{40}", record.git_commit)
        assert record.git_dirty in (True, False, None) and record.device["gpu"] is None
        assert record.device["cpu"] and record.device["cpu_threads"] >= 1
        assert record.device["cpu_capability"] == torch.backends.cpu.get_cpu_capability()  # e.g. AVX2
        assert {"torch", "pytorch_lightning", "darts", "sktime", "xct_estimators"} <= set(record.versions)
        assert record.fit_seconds >= 0 and record.eval_seconds > 0

    # without the switches XCTFormer is another run; the linear baseline is the same one
    assert main([*argv, "--resume"]) == 0
    records = ResultStore(tmp_path).records()
    assert [r.model for r in records] == ["xctformer", "linear", "xctformer"]
    assert "compile" not in records[-1].run and records[-1].compile is False


def test_the_switches_reach_the_engine(tiny_presets):  # noqa: F811
    settings = ImputeSettings(compile=True, precision="bf16-mixed")
    engine = build_imputer("xctformer", "ETTh1", 0.25, settings).engine
    assert engine.compile is True and engine.precision == "bf16-mixed"
    engine = build_imputer("xctformer", "ETTh1", 0.25, ImputeSettings()).engine
    assert engine.compile is False and engine.precision == "32"


def test_compile_without_a_cpp_compiler_is_refused_before_any_data_is_read(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(compiling.shutil, "which", lambda name: None)

    def no_data(*args, **kwargs):
        raise AssertionError("data read before the check")

    monkeypatch.setattr(impute_module, "imputation_splits", no_data)
    argv = ["impute", "--compile", "--accelerator", "cpu", "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--compile: torch.compile's inductor backend needs a C++ compiler" in err
    assert "Or run without --compile." in err


@pytest.mark.parametrize("command", ["forecast", "impute", "detect"])
def test_precision_takes_lightning_names_only(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--precision", "16"])
    assert exit_info.value.code == 2 and "invalid choice: '16'" in capsys.readouterr().err


def test_exact_fp32_is_one_switch_named_in_identity_and_records(monkeypatch):
    """TF32 on by default where runs execute (GPU products only), off with --exact-fp32; the
    switch joins the run's identity, and each record's device says what the run used."""
    import torch

    from xct_estimators.bench import provenance
    from xct_estimators.bench.backends import LocalBackend, make_backend
    from xct_estimators.bench.parser import build_parser

    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", torch.backends.cuda.matmul.allow_tf32)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", torch.backends.cudnn.allow_tf32)
    cpu_precision = torch.backends.mkldnn.matmul.fp32_precision
    args = build_parser().parse_args(["impute", "--exact-fp32"])
    assert args.exact_fp32 and not build_parser().parse_args(["impute"]).exact_fp32
    for exact in (False, True):
        settings = ImputeSettings(exact_fp32=exact)
        assert settings.identity(compiles=True, mixed=True) == ({"exact_fp32": True} if exact else {})
        backend = make_backend(settings)
        assert isinstance(backend, LocalBackend) and backend.exact_fp32 == exact
        backend.run([], finished=None, failed=None)
        assert torch.backends.cuda.matmul.allow_tf32 is (not exact) and torch.backends.cudnn.allow_tf32 is (not exact)
        assert torch.backends.mkldnn.matmul.fp32_precision == cpu_precision
    assert provenance.device("cpu")["tf32"] is None  # a CPU run: no TF32 to speak of
