"""`xct-bench` against bad input and faults (issue 12): every case ends in the right behaviour or
an error naming the problem and the fix, raised before anything trains."""

import errno
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli import FakeRun

import xct_estimators.bench.forecast.protocol as forecast_module
import xct_estimators.bench.runs as runs
from xct_estimators.bench.cli import main
from xct_estimators.bench.forecast.record import ForecastRecord
from xct_estimators.bench.results import ResultStore


def write_tiny_msl(root, rows=3000, channels=3):
    rng = np.random.default_rng(0)
    t = np.arange(rows)[:, None]
    folder = root / "MSL"
    folder.mkdir(parents=True)
    series = np.sin(t / rng.uniform(5, 20, channels)) + 0.1 * rng.normal(size=(rows, channels))
    np.save(folder / "MSL_train.npy", series.astype(np.float32))
    np.save(folder / "MSL_test.npy", series[::-1].astype(np.float32))
    labels = np.zeros(rows)
    labels[500:520] = 1
    np.save(folder / "MSL_test_label.npy", labels)


def start_slow_run(tmp_path):
    """A real `xct-bench detect`: window_mean finishes at once, then XCTFormer trains for minutes."""
    write_tiny_msl(tmp_path / "data")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "xct_estimators.bench", "detect", "--models", "window_mean,xctformer",
            "--arch", "d_model=8,d_ff=16,e_layers=1,n_heads=1", "--epochs", "500", "--batch-size", "8",
            "--data-dir", str(tmp_path / "data"), "--output", str(out), "--no-progress"]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (out / "results.jsonl").is_file():
        assert process.poll() is None, process.communicate()
        assert time.time() < deadline, "the first record never came"
        time.sleep(0.2)
    time.sleep(3)  # XCTFormer is training now
    return process, out


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_stop_with_the_shells_code_and_keep_finished_records(tmp_path, signum, code, capsys):
    process, out = start_slow_run(tmp_path)
    # a second run on the same folder is refused at once, naming the folder and the holder
    assert main(["detect", "--models", "window_mean", "--output", str(out), "--data-dir", str(tmp_path / "data"),
                 "--no-progress"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert f"Another xct-bench run (PID {process.pid}) is writing to {out}" in err
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "Interrupted. Finished runs are kept in" in stderr and "--resume" in stderr
    (record,) = ResultStore(out).records()
    assert record.model == "window_mean"
    assert not (out / ".xct-bench.pid").exists()  # the lock is released with the run


def test_resume_never_reuses_a_run_made_with_other_settings(monkeypatch, tmp_path):
    quick = FakeRun()
    monkeypatch.setattr(forecast_module, "run_forecast", quick)
    argv = ["forecast", "--models", "dlinear", "--horizons", "96", "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    two_processes = ["--devices", "2", "--accelerator", "cpu"]  # a batch per process: other numbers
    for other in (["--epochs", "4"], ["--seq-len", "48"], ["--features", "M"], ["--seed", "1"], two_processes):
        calls = len(quick.calls)
        assert main([*argv, "--resume", *other]) == 0
        assert len(quick.calls) == calls + 1, other  # a different run, trained
    assert main([*argv, "--resume"]) == 0 and len(quick.calls) == 6  # the same run, skipped
    assert main([*argv, "--resume", "--devices", "1", "--accelerator", "cpu"]) == 0 and len(quick.calls) == 6
    runs = [r.run for r in ResultStore(tmp_path).records()]
    assert len({json.dumps(r, sort_keys=True) for r in runs}) == 6 and runs[-1]["processes"] == 2
    assert all(r["settings"]["n_epochs"] == r["epochs"] for r in runs)


def test_report_keeps_runs_with_other_settings_apart(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(forecast_module, "run_forecast", FakeRun())
    argv = ["forecast", "--models", "dlinear", "--horizons", "96", "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 0 and main([*argv, "--epochs", "5"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| synthetic | 96 ")]
    assert any("| epochs=10, n_epochs=10 " in row and "| 0.100 " in row for row in rows)  # the page's variants
    assert any("| epochs=5, n_epochs=5 " in row and "| 0.200 " in row for row in rows)


@pytest.mark.parametrize(
    "argv, message",
    [(["forecast", "--epochs", "-1"], "argument --epochs: expected a positive integer"),
     (["forecast", "--epochs", "0"], "argument --epochs: expected a positive integer"),
     (["forecast", "--horizons", ","], "argument --horizons: empty entry in ','"),
     (["forecast", "--models", "naive,"], "argument --models: empty entry in 'naive,': remove the extra comma"),
     (["impute", "--mask-rates", "0.25,,0.5"], "argument --mask-rates: empty entry in '0.25,,0.5'"),
     (["forecast", "--covariates", "none,bogus"], "argument --covariates: expected a comma-separated list of none"),
     (["forecast", "--horizons", "96,-8"], "argument --horizons: expected a positive integer, got '-8'"),
     (["forecast", "--seq-len", "0"], "argument --seq-len: expected a positive integer"),
     (["profile", "--dataset", "FOO"], "argument --dataset: expected a comma-separated list of ETTm1"),
     (["impute", "--epochs", "x"], "argument --epochs: expected a positive integer")],
)  # fmt: skip
def test_options_are_validated_by_argparse(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and "Traceback" not in err


def test_output_that_is_a_file_or_read_only_is_refused_before_training(monkeypatch, tmp_path, capsys):
    run = FakeRun()
    monkeypatch.setattr(forecast_module, "run_forecast", run)
    a_file = tmp_path / "results.txt"
    a_file.write_text("x")
    assert main(["forecast", "--models", "dlinear", "--output", str(a_file), "--no-progress"]) == 2
    assert "is a file; results need a folder" in capsys.readouterr().err
    read_only = tmp_path / "ro"
    read_only.mkdir()

    def denied(*args, **kwargs):  # what a read-only folder answers (root writes anywhere, so simulate it)
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(runs.tempfile, "TemporaryFile", denied)
    assert main(["forecast", "--models", "dlinear", "--output", str(read_only), "--no-progress"]) == 2
    assert f"--output {read_only} is not writable (Permission denied)" in capsys.readouterr().err
    assert run.calls == []


def test_an_unknown_dataset_after_a_known_one_fails_before_training(monkeypatch, tmp_path, capsys):
    run = FakeRun()
    monkeypatch.setattr(forecast_module, "run_forecast", run)
    argv = ["forecast", "--dataset", "synthetic,nope", "--models", "dlinear", "--output", str(tmp_path),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    assert "Unknown dataset 'nope'" in capsys.readouterr().err and run.calls == []
    assert not (tmp_path / "results.jsonl").exists()


def test_a_csv_dataset_writes_only_under_output(monkeypatch, tmp_path):
    monkeypatch.setattr(forecast_module, "run_forecast", FakeRun())
    data = tmp_path / "data dir"
    data.mkdir()
    stamps = pd.date_range("2020", periods=2000, freq="h")  # every split holds a look-back + horizon window
    rows = ["date,a,OT"] + [f"{ts},{np.sin(i / 7):.4f},{np.cos(i / 9):.4f}" for i, ts in enumerate(stamps)]
    csv = data / "my data.csv"
    csv.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    before = set(data.iterdir())
    assert main(["forecast", "--dataset", str(csv), "--models", "dlinear", "--output", str(out), "--no-progress"]) == 0
    assert set(data.iterdir()) == before  # nothing written next to the CSV
    import hashlib

    part = "my_data-" + hashlib.sha256(csv.read_bytes()).hexdigest()[:8]  # the stem and the content's hash
    assert (out / f"forecast_{part}_96.png").is_file() and (out / "examples" / f"{part}_96_dlinear_2021.json").is_file()
    assert main(["report", "--output", str(out)]) == 0


@pytest.mark.parametrize(
    "content, fragment",
    [("date,a,OT\n2020-01-01 00:00:00,1,2\n2020-01-01 01:00:00,,3\n", "line 3 column 'a'"),
     ("date,a,OT\n2020-01-01 00:00:00,1,2\n2020-01-01 01:00:00,1", "line 3 column 'OT'"),
     ("date,a,OT\n2020-01-01 00:00:00,1,x\n", "line 2 column 'OT'")],
)  # fmt: skip
def test_incomplete_csv_is_refused_naming_file_row_and_column(tmp_path, content, fragment, capsys):
    csv = tmp_path / "torn.csv"
    csv.write_text(content)
    assert main(["forecast", "--dataset", str(csv), "--output", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(csv) in err and fragment in err and "must be complete" in err


def test_a_non_finite_metric_is_never_recorded_as_finished(monkeypatch, tmp_path, capsys):
    class NaNRun(FakeRun):
        def __call__(self, model, data, horizon):
            fields, example = super().__call__(model, data, horizon)
            return {**fields, "mse": float("nan")}, example

    monkeypatch.setattr(forecast_module, "run_forecast", NaNRun())
    assert main(["forecast", "--models", "dlinear", "--output", str(tmp_path), "--no-progress"]) == 2
    assert "non-finite mse (nan)" in capsys.readouterr().err
    assert ResultStore(tmp_path).records() == []


JUNK_LINES = [b"[1, 2]", b"42", b"null", b'{"mse": 1.0}', b"\xff\xfe{not utf-8", b'{"task": "fo']
#: Lines that look like records but lack a field a report reads, or hold one of another type.
RECORD_LIKE = [
    b'{"task": "forecast", "dataset": "x", "model": "m"}',
    b'{"task": "forecast", "dataset": null, "model": "m", "seed": 0, "horizon": 96, "mse": 1, "mae": 1,'
    b' "fit_seconds": 1, "eval_seconds": 1}',
    b'{"task": "forecast", "dataset": "x", "model": "m", "seed": 0, "horizon": "96", "mse": 1, "mae": 1,'
    b' "fit_seconds": 1, "eval_seconds": 1}',
    b'{"task": "impute", "dataset": "x", "model": "m", "seed": 0, "mse": 1, "mae": 1, "fit_seconds": 1,'
    b' "eval_seconds": 1}',
    b'{"task": "detect", "dataset": "MSL", "model": "m", "seed": 0, "protocol": "tslib", "f1": true,'
    b' "f1_adjusted": 1, "auc_pr": 1, "fit_seconds": 1, "eval_seconds": 1}',
    b'{"task": "other", "dataset": "x", "model": "m", "seed": 0}',
]


@pytest.mark.parametrize("line", JUNK_LINES + RECORD_LIKE)
def test_lines_that_are_not_records_are_skipped_with_one_warning(tmp_path, line, capsys):
    store = ResultStore(tmp_path)
    store.append(ForecastRecord(dataset="d", horizon=96, model="m", seed=0, mse=1.0, mae=1.0, fit_seconds=1.0,
                                eval_seconds=1.0))  # fmt: skip
    with store.path.open("ab") as f:
        f.write(line + b"\n")
    with pytest.warns(UserWarning, match=r"skipped line\(s\) 2, which are not result records"):
        assert len(store.records()) == 1
    with pytest.warns(UserWarning, match="skipped line") as warned:
        assert main(["report", "--output", str(tmp_path)]) == 0
    assert sum("skipped line" in str(w.message) for w in warned) == 1  # the folder is read once


def test_seeds_run_each_seed_once_and_report_mean_and_std(monkeypatch, tmp_path, capsys):
    run = FakeRun()
    monkeypatch.setattr(forecast_module, "run_forecast", run)
    argv = ["forecast", "--models", "dlinear", "--horizons", "96", "--seeds", "2021,2022,2023", "--output",
            str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    records = ResultStore(tmp_path).records()
    assert [r.seed for r in records] == [2021, 2022, 2023] and len(run.calls) == 3
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| synthetic | 96 "))
    assert [cell.strip() for cell in row.strip("|").split("|")][:3] == ["synthetic", "96", "0.200 ± 0.100"]
    assert main([*argv, "--resume"]) == 0 and len(run.calls) == 3


@pytest.mark.parametrize(
    "argv, fragment",
    [(["forecast", "--dataset", "{dir}/empty.csv"], "{dir}/empty.csv is not a readable CSV"),
     (["forecast", "--dataset", "{dir}/dates.csv"], "{dir}/dates.csv: line 2 has a date pandas cannot read"),
     (["tune", "--task", "forecast", "--space", "{dir}/bad.json"], "--space {dir}/bad.json: not valid JSON")],
)  # fmt: skip
def test_every_message_about_a_file_names_the_file(tmp_path, argv, fragment, capsys):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "dates.csv").write_text("date,a,OT\nnot a date,1,2\n2020-01-01 01:00:00,1,3\n")
    (tmp_path / "bad.json").write_text("{bad")
    argv = [part.format(dir=tmp_path) for part in argv]
    assert main([*argv, "--output", str(tmp_path / "out"), "--no-progress"]) == 2
    assert fragment.format(dir=tmp_path) in capsys.readouterr().err


def test_a_csv_too_short_for_a_split_is_refused_before_any_model_trains(tmp_path, capsys):
    i = np.arange(130)
    stamps = pd.date_range("2020", periods=130, freq="h")
    pd.DataFrame({"date": stamps, "a": np.sin(i / 5), "OT": np.cos(i / 5)}).to_csv(tmp_path / "s.csv", index=False)
    argv = ["forecast", "--dataset", str(tmp_path / "s.csv"), "--seq-len", "24", "--horizons", "24"]
    assert main([*argv, "--models", "dlinear", "--output", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert (
        f"{tmp_path / 's.csv'}: the validation split (the next 10 %, with the 24 rows of look-back before it) has "
        "37 rows, fewer than look-back 24 + horizon 24. The dataset has 130 rows and needs at least 224" in err
    )
    assert not (tmp_path / "out" / "results.jsonl").exists()


# -- issue 64, item 1: a page never replaces records ----------------------------------------
def _records_folder(tmp_path):
    folder = tmp_path / "F"
    folder.mkdir()
    source = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "cpu" / "main-job" / "results.jsonl"
    (folder / "results.jsonl").write_bytes(source.read_bytes())
    return folder


@pytest.mark.parametrize(
    "page, fragment",
    [
        ("F/results.jsonl", "F/results.jsonl is a file of run records, and the page would overwrite it"),
        ("F", "F is a folder: give the page's file name, e.g. F/results.md"),
        ("F/", "F/ is a folder"),
        (
            "notes.md",
            "notes.md is not a results page xct-bench wrote (one opens with its generated header), and the "
            "page would overwrite it",
        ),
        ("mentions.md", "mentions.md is not a results page xct-bench wrote"),
        ("F/report.md", "F/report.md is the report of a results folder (xct-bench rewrites it there after every run)"),
        ("page.txt", "page.txt is not a Markdown file name: give one ending in .md"),
        ("missing/page.md", "folder missing does not exist"),
    ],
)
def test_report_refuses_a_page_path_that_would_replace_anything_else(tmp_path, monkeypatch, page, fragment, capsys):
    folder = _records_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.md").write_text("# my notes\n")
    mentions = "# my notes\nrebuild: xct-bench report --markdown results.md F\n"  # the command, but not a page
    (tmp_path / "mentions.md").write_text(mentions)
    (folder / "report.md").write_text("# xct-bench results\n\nEvery number below comes from a record\n")
    before = (folder / "results.jsonl").read_bytes()
    with pytest.raises(SystemExit) as stop:
        main(["report", "--markdown", page, "F"])
    assert stop.value.code == 2
    assert fragment in capsys.readouterr().err
    assert (folder / "results.jsonl").read_bytes() == before
    assert (tmp_path / "notes.md").read_text() == "# my notes\n" and (tmp_path / "mentions.md").read_text() == mentions


def test_report_rewrites_its_own_page_and_names_an_unwritable_one(tmp_path, monkeypatch, capsys):
    _records_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--markdown", "page.md", "F"]) == 0
    first = (tmp_path / "page.md").read_text()
    assert main(["report", "--markdown", "page.md", "F"]) == 0  # its own page: replaced
    assert (tmp_path / "page.md").read_text() == first
    assert main(["report", "--output", "F"]) == 0
    assert "No results yet" not in capsys.readouterr().out

    def refuse(path, write, companions=()):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("xct_estimators.bench.results_page.write_atomically", refuse)
    assert main(["report", "--markdown", "page.md", "F"]) == 2
    assert "cannot write the page page.md (Permission denied)" in capsys.readouterr().err


# -- issue 64, item 4: a CSV is read right or refused with the file, line and column -------------
def _csv_cases(folder):
    i = np.arange(400)
    stamps = pd.date_range("2020", periods=400, freq="h")
    base = pd.DataFrame({"date": stamps, "a": np.sin(i / 5), "OT": np.cos(i / 5)})
    big = base.copy()
    big.loc[5, "a"] = 1e39
    offsets = base.assign(date=[f"{t}+0{1 + (k >= 200)}:00" for k, t in enumerate(stamps)])
    files = {
        "only_date": base[["date"]],
        "header_only": base.iloc[:0],
        "big": big,
        "timestamp": base.rename(columns={"date": "timestamp"}),
        "mixed_offsets": offsets,
        "gap": base.drop(index=range(100, 110)),
        "integer_dates": base.assign(date=i),
    }
    for name, frame in files.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    base.to_csv(folder / "semicolon.csv", index=False, sep=";")


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("only_date", "only_date.csv has no value column (header 'date'): the file must be comma-separated"),
        ("header_only", "header_only.csv has a header ('date,a,OT') but no rows: the file must be comma-separated"),
        ("big", "big.csv has 1 value(s) beyond ±1e+17 (line 7 column 'a')"),
        ("timestamp", "column 'timestamp' holds dates, but the dates are read from a column named 'date'"),
        ("semicolon", "semicolon.csv separates its columns with semicolons (header 'date;a;OT')"),
        ("mixed_offsets", "the dates mix UTC offsets (line 2: '2020-01-01 00:00:00+01:00', line 202:"),
        ("gap", "line 102 (2020-01-05 14:00:00) comes 0 days 11:00:00 after line 101 (2020-01-05 03:00:00) (1 "
                "irregular step(s), about 10 missing time step(s) in all)"),
        ("integer_dates", "column 'date' holds numbers (line 2: 0), not dates"),
    ],
)  # fmt: skip
def test_a_csv_is_read_right_or_refused_with_its_file_line_and_column(tmp_path, name, fragment, capsys):
    _csv_cases(tmp_path)
    argv = ["forecast", "--dataset", str(tmp_path / f"{name}.csv"), "--models", "naive", "--seq-len", "24"]
    assert main([*argv, "--horizons", "24", "--covariates", "calendar", "--output", str(tmp_path / "out")]) == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_a_csv_too_short_names_the_split_and_the_rows_it_needs(tmp_path, capsys):
    stamps = pd.date_range("2020", periods=60, freq="h")
    pd.DataFrame({"date": stamps, "a": np.arange(60.0), "OT": np.arange(60.0)}).to_csv(tmp_path / "s.csv", index=False)
    argv = ["forecast", "--dataset", str(tmp_path / "s.csv"), "--models", "naive", "--seq-len", "48"]
    assert main([*argv, "--output", str(tmp_path / "out"), "--no-progress"]) == 2
    assert (
        "s.csv: the training split (the first 70 %) has 42 rows, fewer than look-back 48 + horizon 96. The dataset "
        "has 60 rows and needs at least 944" in capsys.readouterr().err
    )


def test_rows_needed_is_the_fewest_rows_that_hold_every_window():
    from xct_estimators.bench.forecast.protocol import expected_windows
    from xct_estimators.bench.splits import rows_needed, split_borders

    for seq_len, horizon in ((48, 96), (24, 24), (96, 720)):
        needed = rows_needed("ratio", seq_len, horizon)
        for rows, fits in ((needed, True), (needed - 1, False)):
            splits = split_borders(rows, "ratio", seq_len)
            windows = [expected_windows(stop - start, seq_len, horizon) for start, stop in vars(splits).values()]
            assert (min(windows) >= 1) is fits


def test_a_published_file_with_a_repeated_step_is_read_by_row_as_published(tmp_path):
    """The paper's weather.csv repeats one time stamp and skips another: the Time-Series-Library
    reads its rows as they are, and so does xct-bench (a user's file with the same faults is refused)."""
    from xct_estimators.bench.datasets import load_forecast_dataset

    stamps = list(pd.date_range("2020", periods=300, freq="10min"))
    stamps[100] = stamps[99]
    (tmp_path / "weather").mkdir()
    frame = pd.DataFrame({"date": stamps, "a": np.arange(300.0), "OT": np.ones(300)})
    frame.to_csv(tmp_path / "weather" / "weather.csv", index=False)
    series = load_forecast_dataset("weather", tmp_path).series
    assert isinstance(series.time_index, pd.RangeIndex) and len(series) == 300
    with pytest.raises(ValueError, match="appears twice"):
        load_forecast_dataset(str(tmp_path / "weather" / "weather.csv"))


# -- issue 64, item 5: training processes end with the run, quietly --------------------------------
def _spawned(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as children:
        found = [int(child) for child in children.read().split()]
    return [child for child in found if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_while_training_processes_start_stops_them_without_tracebacks(tmp_path):
    write_tiny_msl(tmp_path / "data")
    argv = [sys.executable, "-m", "xct_estimators.bench", "detect", "--models", "xctformer", "--devices", "2",
            "--arch", "d_model=8,d_ff=16,e_layers=1,n_heads=1", "--epochs", "500", "--batch-size", "8",
            "--accelerator", "cpu", "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out"),
            "--no-progress"]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (children := _spawned(process.pid)):
        assert process.poll() is None and time.time() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)  # the training processes are still starting up
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143
    assert "Interrupted" in err and "Traceback" not in err, err[-3000:]
    assert all(
        not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text() for child in children
    )


def test_fit_seconds_leave_the_kernel_build_out(monkeypatch):
    """The first XCTFormer run on a machine compiles the CPU kernel for minutes: off the clock."""
    import xct_estimators.bench.models as models
    from xct_estimators.nn import crab_kernel

    clock = [0.0]
    monkeypatch.setattr(models.time, "perf_counter", lambda: clock[0])

    def passes(seconds):
        return lambda: clock.__setitem__(0, clock[0] + seconds)

    monkeypatch.setattr(crab_kernel, "load", passes(130.0))  # the build
    assert models.timed_fit(passes(3.0), xctformer=True) == 3.0 and clock[0] == 133.0
    assert models.timed_fit(passes(2.0), xctformer=False) == 2.0 and clock[0] == 135.0  # a baseline builds nothing


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_stop_children_kills_a_spawned_process_that_multiprocessing_never_registered():
    """A signal between the spawn and the write of the start-up data leaves such a child; left
    alive, it reads an end of file when this process exits and prints a traceback."""
    from xct_estimators.bench.runs import stop_children

    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # spawn_main"])
    deadline = time.time() + 30
    while b"spawn_main" not in Path(f"/proc/{waiting.pid}/cmdline").read_bytes():  # until its exec
        assert time.time() < deadline
        time.sleep(0.01)
    stop_children()
    assert not Path(f"/proc/{waiting.pid}").exists()


def test_report_never_writes_over_a_report_md_it_did_not_write(tmp_path, capsys):
    folder = _records_folder(tmp_path)
    (folder / "report.md").write_text("# My own notes\n")
    assert main(["report", "--output", str(folder)]) == 2
    assert "report.md is not a report xct-bench wrote" in capsys.readouterr().err
    assert (folder / "report.md").read_text() == "# My own notes\n"
