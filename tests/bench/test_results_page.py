"""``xct-bench report --markdown``: record folders as a page, with where each number comes from."""

import json
from pathlib import Path

import pytest

from xct_estimators.bench.cli import main
from xct_estimators.bench.results import parse_record
from xct_estimators.bench.results_page import PAGE_MARK, provenance_lines, rebuild_command, results_page

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results.md"


def _write(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


RECORD = {"task": "forecast", "dataset": "ETTh1", "horizon": 96, "model": "xctformer", "seed": 2021, "mse": 0.39,
          "mae": 0.4, "fit_seconds": 1.0, "eval_seconds": 1.0, "features": "M", "seq_len": 96,
          "epochs": 10}  # fmt: skip


def test_every_table_says_where_its_numbers_come_from(tmp_path):
    where = {"git_commit": "a" * 40, "git_dirty": False, "device": {"cpu": "Some CPU", "cpu_threads": 2, "gpu": None}}
    new = _write(tmp_path / "new", [{**RECORD, **where, "precision": "32", "command": "xct-bench forecast --full"}])
    old = _write(tmp_path / "old", [dict(RECORD, accelerator="gpu")])
    page = results_page([new, old], "rebuild")
    assert "- device: Some CPU, 2 threads" in page and "- code: commit aaaaaaa; precision: 32" in page
    assert "- command: `xct-bench forecast --full`" in page
    assert "commit not recorded (older code)" in page and "predate the provenance fields" in page
    assert page.count("| ETTh1   | 96      | 0.390     | 0.389     |") == 2  # beside the paper's MSE
    gpu = provenance_lines([parse_record({**RECORD, **where, "device": {"gpu": "NVIDIA H200"}, "git_dirty": True})])
    assert gpu[0] == "- device: NVIDIA H200" and "(uncommitted changes)" in gpu[1]
    both = [parse_record({**RECORD, **where, "command": f"xct-bench forecast --full --seq-len {n}"}) for n in (96, 336)]
    assert provenance_lines(both)[2:] == [
        "- commands: `xct-bench forecast --full --seq-len 336`; `xct-bench forecast --full --seq-len 96`"
    ]  # one line however many settings a folder ran, in distinct_commands' order


def test_the_command_writes_the_page_and_refuses_folders_without_markdown(tmp_path, capsys):
    folder = _write(tmp_path / "runs", [RECORD])
    page = tmp_path / "results.md"
    assert main(["report", "--markdown", str(page), str(folder)]) == 0
    assert page.read_text() == results_page([folder], rebuild_command(PAGE_MARK, page, [folder]))
    assert f"xct-bench report --markdown {page} {folder}" in page.read_text()  # its own rebuild command
    with pytest.raises(SystemExit):
        main(["report", str(folder)])
    assert "FOLDER arguments need --markdown" in capsys.readouterr().err
    assert main(["report", "--markdown", str(page), str(tmp_path / "empty")]) == 2
    assert "holds no results.jsonl records" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # a folder where the page goes: argparse's error
        main(["report", "--markdown", str(tmp_path), str(folder)])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert f"--markdown: {tmp_path} is a folder: give the page's file name" in err and "--resume" not in err


def test_a_folder_with_runs_from_two_machines_gets_a_table_each(tmp_path):
    """One table per device; a commit alone does not split a folder (its rows name their commits)."""
    where = {"git_dirty": False, "precision": "32", "command": "xct-bench forecast"}
    h100 = {**RECORD, **where, "git_commit": "a" * 40, "device": {"gpu": "NVIDIA H100"}}
    h200 = {**RECORD, **where, "dataset": "ETTh2", "git_commit": "b" * 40, "device": {"gpu": "NVIDIA H200"}}
    page = results_page([_write(tmp_path / "runs", [h100, h200])], "rebuild")
    first, second = page.split("## `")[1:]
    assert first.startswith(f"{tmp_path / 'runs'}`: NVIDIA H100") and "| ETTh2" not in first
    assert "- device: NVIDIA H200" in second and "| ETTh2" in second and "| ETTh1" not in second


def test_a_machine_s_table_labels_its_rows_by_the_folder_s_settings(tmp_path):
    """Runs with covariates on one machine and without on another: each table names its variant, and
    a model's missing variant is a dash, never the other variant's number."""
    where = {"git_dirty": False, "precision": "32", "command": "xct-bench forecast", "git_commit": "a" * 40}
    runs = [
        {**RECORD, **where, "model": model, "mse": mse, "device": {"cpu": cpu, "cpu_threads": 1, "gpu": None},
         "covariates": covariates, "run": {"model": model, **({"covariates": covariates} if covariates else {})}}
        for model, covariates, mse, cpu in (("xctformer", None, 0.9, "Old CPU"), ("tide", None, 0.8, "Old CPU"),
                                           ("tide", "future", 0.3, "Old CPU"), ("xctformer", "future", 0.2, "New CPU"))
    ]  # fmt: skip
    page = results_page([_write(tmp_path / "runs", runs)], "rebuild")
    new, old = page.split("## `")[-2:]
    assert page.count("MSE with covariates against the same runs without them") == 1  # once a folder
    assert "`tide` -62.5% (future on ETTh1), `xctformer` -77.8% (future on ETTh1)." in page  # across machines
    assert "| ETTh1   | 96      | covariates=future | 0.200     |" in new
    assert "| ETTh1   | 96      | covariates=future | -         | 0.300     |" in old
    assert "| ETTh1   | 96      | covariates=none   | 0.900     | **0.800** |" in old


def test_runs_on_one_cpu_with_other_thread_counts_share_its_table(tmp_path):
    where = {"git_dirty": False, "precision": "32", "command": "xct-bench forecast", "git_commit": "a" * 40}
    runs = [
        {**RECORD, **where, "dataset": dataset, "device": {"cpu": "Some CPU", "cpu_threads": threads, "gpu": None}}
        for dataset, threads in (("ETTh1", 1), ("ETTh2", 2))
    ]
    runs[1]["device"]["cpu_capability"] = "AVX2"  # recorded since; older records lack it
    page = results_page([_write(tmp_path / "runs", runs)], "rebuild")
    assert page.count(f"## `{tmp_path / 'runs'}") == 1
    assert "- device: Some CPU (AVX2), 2 threads; Some CPU, 1 threads" in page


def test_runs_of_one_setting_show_one_command_that_runs_them_all():
    from xct_estimators.bench.results_page import distinct_commands

    def record(seed, command):
        return parse_record({**RECORD, "seed": seed, "command": command})

    records = [
        record(2021, "xct-bench forecast --dataset ETTh1 --horizons 336 --models naive --output /a --resume"),
        record(2022, "xct-bench forecast --dataset ETTh2 --horizons 96 --models tide --seeds 2022 --output /b"),
        record(2021, "xct-bench forecast --dataset ETTh1 --epochs 2 --data-dir /x --no-progress"),
    ]
    assert distinct_commands(records) == [
        "xct-bench forecast --dataset ETTh1 --epochs 2 --data-dir DATA",
        "xct-bench forecast --dataset ETTh1,ETTh2 --horizons 96,336 --models naive,tide --seeds 2021,2022",
    ]
    # a list left at its default is not merged into one given: the command would drop the default
    records = [record(2021, "xct-bench detect --dataset MSL"), record(2021, "xct-bench detect --protocol point")]
    assert distinct_commands(records) == ["xct-bench detect --dataset MSL", "xct-bench detect --protocol point"]
