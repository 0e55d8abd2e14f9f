"""`xct-bench` never attributes a number or a picture to the wrong data, model or settings, a
crash leaves nothing that breaks the next run, and bad options end in one line before any work."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from test_bench_bad_inputs import write_tiny_msl
from test_cli import FakeRun

import xct_estimators.bench.forecast.protocol as forecast_module
import xct_estimators.bench.report as report_module
from xct_estimators.bench.cli import main
from xct_estimators.bench.results import ResultStore


def write_csv(path, rows=600, columns=("a", "OT"), shift=0.0, dates=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    stamps = pd.date_range("2020", periods=rows, freq="h") if dates is None else dates
    frame = pd.DataFrame({c: np.sin(np.arange(rows) / (5 + i)) + shift for i, c in enumerate(columns)})
    frame.insert(0, "date", stamps)
    frame.to_csv(path, index=False)
    return path


def forecast(csv, out, *extra):
    return main(["forecast", "--dataset", str(csv), "--models", "dlinear", "--horizons", "24", "--seq-len", "48",
                 "--output", str(out), "--no-progress", *extra])  # fmt: skip


def part(csv) -> str:
    return f"{csv.stem}-{hashlib.sha256(csv.read_bytes()).hexdigest()[:8]}"


@pytest.fixture
def fake_training(monkeypatch):
    run = FakeRun()
    monkeypatch.setattr(forecast_module, "run_forecast", run)
    return run


def test_a_changed_file_is_a_new_run_and_files_of_one_name_keep_their_own_pictures(fake_training, tmp_path):
    csv = write_csv(tmp_path / "a" / "data.csv")
    out = tmp_path / "out"
    assert forecast(csv, out) == 0 and forecast(csv, out, "--resume") == 0
    assert len(fake_training.calls) == 1  # the same file: resumed
    before = part(csv)
    write_csv(csv, shift=1.0)  # edited in place
    assert forecast(csv, out, "--resume") == 0 and len(fake_training.calls) == 2  # trained again
    other = write_csv(tmp_path / "b" / "data.csv", columns=("OT",))
    assert forecast(other, out, "--resume") == 0
    records = ResultStore(out).records()
    assert len({r.run["data_sha256"] for r in records}) == 3
    for name in (before, part(csv), part(other)):
        assert (out / f"forecast_{name}_24.png").is_file() and (
            out / "examples" / f"{name}_24_dlinear_2021.json"
        ).is_file()


def test_repeated_list_values_run_once(fake_training, tmp_path):
    csv = write_csv(tmp_path / "data.csv")
    assert forecast(csv, tmp_path / "out", "--horizons", "24,24", "--models", "dlinear,dlinear") == 0
    assert len(fake_training.calls) == 1


@pytest.mark.parametrize(
    "dates, fragment",
    [
        (pd.date_range("2020", periods=600, freq="h")[::-1], "dates are not in increasing order (line 3"),
        (pd.date_range("2020", periods=600, freq="h").insert(300, pd.Timestamp("2020-01-01 05:00")), "appears twice"),
    ],
)
def test_dates_out_of_order_or_repeated_are_refused(fake_training, tmp_path, capsys, dates, fragment):
    csv = write_csv(tmp_path / "data.csv", rows=len(dates), dates=dates)
    assert forecast(csv, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert fragment in err and str(csv) in err and fake_training.calls == []


def test_ms_without_the_target_column_is_one_line(fake_training, tmp_path, capsys):
    csv = write_csv(tmp_path / "data.csv", columns=("a", "b"))
    assert forecast(csv, tmp_path / "out", "--features", "MS") == 2
    err = capsys.readouterr().err
    assert "--features MS: data has no column 'OT'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["impute", "--mask-rates", "1.5"], "expected a mask rate between 0 and 1 (exclusive), got '1.5'"),
        (["impute", "--mask-rates", "0.25,0"], "got '0'"),
        (["impute", "--mask-rates", "nan"], "got 'nan'"),
        (["tune", "--task", "impute", "--mask-rate", "1"], "got '1'"),
        (["forecast", "--devices", "bogus"], "--devices: expected 'auto', a number of devices"),
        (["forecast", "--devices", "0"], "got '0'"),
    ],
)
def test_option_values_are_checked_by_the_parser(argv, fragment, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and fragment in capsys.readouterr().err


def test_accelerator_gpu_without_a_gpu_is_refused_before_data_is_read(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or torch.backends.mps.is_available():
        pytest.skip("this machine has a GPU")
    argv = ["forecast", "--dataset", str(tmp_path / "missing.csv"), "--accelerator", "gpu", "--output", str(tmp_path)]
    assert main(argv) == 2
    assert "--accelerator gpu: torch sees no GPU" in capsys.readouterr().err  # not the missing file: checked first


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_report_reads_an_existing_results_folder_only(tmp_path, capsys, kind):
    target = tmp_path / "results"
    if kind == "file":
        target.write_text("not a folder")
    with pytest.raises(SystemExit) as stop:
        main(["report", "--output", str(target)])
    assert stop.value.code == 2
    assert ("is a file" if kind == "file" else "does not exist") in capsys.readouterr().err
    assert target.is_file() if kind == "file" else not target.exists()


def test_detection_labels_without_an_anomaly_are_refused_before_training(tmp_path, capsys):
    write_tiny_msl(tmp_path / "data")
    np.save(tmp_path / "data" / "MSL" / "MSL_test_label.npy", np.zeros(3000))
    argv = ["detect", "--models", "window_mean", "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "o")]
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "MSL_test_label.npy marks no step as an anomaly" in err
    assert ResultStore(tmp_path / "o").records() == []


def test_a_full_disk_while_writing_an_example_leaves_no_torn_file(fake_training, tmp_path, monkeypatch):
    csv = write_csv(tmp_path / "data.csv")
    out = tmp_path / "out"
    real_write = report_module.Path.write_text

    def full_disk(self, text, *args, **kwargs):
        if self.parent.name == "examples":
            real_write(self, text[: len(text) // 2])  # half of it reached the disk
            raise OSError(28, "No space left on device")
        return real_write(self, text, *args, **kwargs)

    monkeypatch.setattr(report_module.Path, "write_text", full_disk)
    assert forecast(csv, out) != 0
    monkeypatch.undo()
    assert not (out / "examples").exists() or list((out / "examples").iterdir()) == []
    monkeypatch.setattr(forecast_module, "run_forecast", FakeRun())
    assert forecast(csv, out, "--resume") == 0  # the next run is not broken
    assert (out / "examples" / f"{part(csv)}_24_dlinear_2021.json").is_file()


def test_an_unreadable_example_is_left_out_of_the_plot_with_a_warning(fake_training, tmp_path):
    csv = write_csv(tmp_path / "data.csv")
    out = tmp_path / "out"
    assert forecast(csv, out) == 0
    example = out / "examples" / f"{part(csv)}_24_dlinear_2021.json"
    example.write_text("")  # a file torn before examples were written atomically
    with pytest.warns(UserWarning, match=f"{example.name}: unreadable example"):
        assert main(["report", "--output", str(out)]) == 0
    assert json.loads((out / "results.jsonl").read_text().splitlines()[0])["model"] == "dlinear"


def test_device_indices_on_the_cpu_are_refused_before_data_is_read(tmp_path, capsys):
    argv = ["forecast", "--dataset", str(tmp_path / "missing.csv"), "--accelerator", "cpu", "--devices", "0,1"]
    assert main([*argv, "--output", str(tmp_path)]) == 2
    assert "--devices 0,1: device indices name GPUs; on the CPU give a number of processes (--devices 2)" in (
        capsys.readouterr().err
    )
