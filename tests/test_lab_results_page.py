"""The project's results page (``python -m benchmarks.results_page``): the committed records, the
lab's own sections among them."""

import json
from pathlib import Path

from benchmarks import results_page
from benchmarks.measure.page_sections import NOT_RUN, missing_section
from benchmarks.results_page import lab_section
from xct_estimators.bench.results import parse_record

ROOT = Path(__file__).resolve().parents[1]
RECORD = {"task": "forecast", "dataset": "ETTh1", "horizon": 96, "model": "xctformer", "seed": 2021, "mse": 0.39,
          "mae": 0.4, "fit_seconds": 1.0, "eval_seconds": 1.0, "features": "M", "seq_len": 96,
          "epochs": 10}  # fmt: skip


def test_the_results_page_is_the_committed_records(monkeypatch):
    monkeypatch.chdir(ROOT)
    page, folders = results_page.committed_command()
    folders = [Path(folder) for folder in folders]
    records = [
        *Path("benchmarks/results").glob("**/results.jsonl"),
        *Path("benchmarks/results").glob("gpu_check/*/report.json"),
        *Path("benchmarks/results").glob("**/analysis.json"),
    ]
    committed = sorted(path.parent for path in records)
    assert sorted(folders) == committed, "every committed records folder is on the page"
    assert results_page.main(["--check"]) == 0, "docs/results.md is stale: run python -m benchmarks.results_page"
    assert page == "docs/results.md"


def test_a_gpu_check_folder_shows_its_converged_comparison(tmp_path):
    folder = tmp_path / "gpu"
    folder.mkdir()
    environment = {"gpu": "Some GPU", "git commit": "b" * 40, "torch": "2.13.0", "command": "benchmarks/gpu_check.py"}
    runs = {"fp32": 0.100, "bf16-mixed": 0.101, "fp32, seed 2022": 0.098}
    converged = [{"preset": "MSL anomaly", "epochs": 6, "runs": {k: {"best_val_loss": v} for k, v in runs.items()}}]
    (folder / "report.json").write_text(json.dumps({"environment": environment, "converged": converged}))
    page = lab_section(folder)
    assert "- device: Some GPU" in page and "commit bbbbbbb" in page
    assert "| MSL anomaly | 6      | 0.1  | 0.101      | 0.098           | +1.0%        | -2.0%        |" in page


def test_the_page_names_what_the_paper_reports_and_no_record_covers(tmp_path):
    """ETTh1 at horizon 96 only: its other horizons are listed as not run, Electricity with the
    reason its data is absent, MSL not at all once a protocol ran, and a baseline covers nothing."""
    scores = {"f1": 0.1, "f1_adjusted": 0.1, "auc_pr": 0.1, "fit_seconds": 1.0, "eval_seconds": 1.0}
    detect = {"task": "detect", "dataset": "MSL", "model": "xctformer", "seed": 2021, "protocol": "point", **scores}
    baseline = {**RECORD, "dataset": "ETTh2", "model": "dlinear"}
    rows = {
        tuple(cell.strip() for cell in line.strip("|").split("|")[:3]): line.strip("|").split("|")[3].strip()
        for line in missing_section([parse_record(r) for r in (RECORD, detect, baseline)]).splitlines()[5:]
    }
    assert rows[("forecast", "ETTh1", "192, 336, 720")] == NOT_RUN
    assert rows[("forecast", "ETTh2", "96, 192, 336, 720")] == NOT_RUN
    assert "not obtainable" in rows[("forecast", "electricity", "96, 192, 336, 720")]
    assert not any(dataset == "MSL" for _, dataset, _ in rows) and ("detect", "SMAP", "all") in rows


def test_a_gpu_check_the_estimates_do_not_read_shows_its_sentence_and_a_current_one_its_tables(monkeypatch):
    from benchmarks.measure import page_sections
    from benchmarks.measure.page_sections import kernel_section

    current = (ROOT / "benchmarks/results/gpu_check/2026-11-28-h200-2").resolve()  # in estimates.STEP_RECORDS
    older = (ROOT / "benchmarks/results/gpu_check/2026-11-28-h200").resolve()
    assert "### Training step" in kernel_section(current)  # an absolute path is the same folder
    for other in (older, ROOT / "benchmarks/results/gpu_check/2026-11-27-h100"):  # that GPU's, another GPU's
        text = kernel_section(other)
        assert "### " not in text
        assert "not one of the checks the estimates read (`benchmarks/results/gpu_check/2026-11-28-h200-2`" in text
    assert "The fused path the device took in float32 (PyTorch operations) matches" in kernel_section(older)
    monkeypatch.setattr(page_sections, "current_checks", lambda: {})  # none current: every check shows its tables
    assert "### Training step" in kernel_section(older) and "estimates read" not in kernel_section(older)


def test_the_committed_page_opens_with_its_answer_and_stays_under_700_lines():
    text = (ROOT / "docs" / "results.md").read_text()
    assert len(text.splitlines()) < 700, (
        "the results page is a guide to the records, not a dump of them"
    )  # the covariate suite: 12 datasets; the GPU tables' baselines, run on the CPU
    assert text.split("\n## ")[1].startswith("When XCTFormer helps")
