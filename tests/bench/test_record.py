"""Records: every committed line parses into its task's record and writes back as it was."""

import json
from pathlib import Path

import pytest

from xct_estimators.bench.detect.record import DetectRecord
from xct_estimators.bench.forecast.record import ForecastRecord
from xct_estimators.bench.impute.record import ImputeRecord
from xct_estimators.bench.results import parse_record

RESULTS = Path(__file__).parents[2] / "benchmarks" / "results"
LINE = {"task": "forecast", "dataset": "ETTh1", "horizon": 96, "model": "naive", "seed": 2021, "mse": 0.5,
        "mae": 0.4, "fit_seconds": 0.0, "eval_seconds": 1.0}  # fmt: skip


def test_every_committed_record_parses_into_its_tasks_class_and_writes_back_unchanged():
    lines = [json.loads(line) for path in RESULTS.rglob("results.jsonl") for line in path.open() if line.strip()]
    assert len(lines) > 100
    kinds = {"forecast": ForecastRecord, "impute": ImputeRecord, "detect": DetectRecord}
    for line in lines:
        record = parse_record(line)
        assert type(record) is kinds[line["task"]] and record.extra == {}
        written = record.to_json()
        assert {key: written[key] for key in line} == line


def test_a_field_unknown_to_this_version_is_kept_and_written_back():
    record = parse_record({**LINE, "from_a_later_version": [1, 2]})
    assert record.extra == {"from_a_later_version": [1, 2]}
    assert record.to_json()["from_a_later_version"] == [1, 2]


@pytest.mark.parametrize(
    "change",
    [{"seed": True}, {"mse": "0.5"}, {"horizon": None}, {"task": "classify"}, {"dataset": 7}],
)
def test_a_line_without_what_the_tables_read_is_not_a_record(change):
    assert parse_record({**LINE, **change}) is None
    assert parse_record({k: v for k, v in LINE.items() if k not in change}) is None


def test_each_task_places_its_runs_by_its_own_field():
    forecast = parse_record(LINE)
    assert (forecast.where, forecast.describe()) == (96, "horizon 96")
    impute = ImputeRecord(dataset="ETTh2", model="linear", seed=0, fit_seconds=0.0, eval_seconds=1.0,
                          mask_rate=0.125, mse=0.1, mae=0.2)  # fmt: skip
    assert (impute.where, impute.describe(), impute.protocol) == (0.125, "mask rate 0.125, series", "series")
    assert forecast.replace(horizon="avg").describe() == "average"


def test_only_a_checkout_of_this_project_names_a_commit(tmp_path, monkeypatch):
    """A wheel installed into a virtualenv inside another project's checkout names the release,
    not that project's commit."""
    import subprocess

    from xct_estimators import __version__
    from xct_estimators.bench.provenance import SOURCE_ROOT, git_state

    monkeypatch.delenv("XCT_GIT_COMMIT", raising=False)  # a device machine names the commit so
    other = tmp_path / "other-project"
    site = other / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (other / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    git = dict(cwd=other, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q"], **git)
    subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"], **git
    )
    assert git_state(site) == (f"v{__version__}", None)
    assert git_state(other) == (f"v{__version__}", None)  # a checkout, but of another project
    if (SOURCE_ROOT / ".git").exists():
        assert len(git_state()[0]) == 40
