"""Results files written by ``xct-bench`` before its runs moved into one module per task (made with
the commands below by the code of tests/data/before_refactor) are resumed without rerunning a run:
the run identities did not change."""

import json
from pathlib import Path

import pytest

from xct_estimators.bench.parser import build_parser, settings_from
from xct_estimators.bench.results import ResultStore

SAVES = Path(__file__).parents[1] / "data" / "before_refactor"
COMMANDS = {
    "forecast": "forecast --dataset synthetic --models xctformer,dlinear --horizons 8 --seq-len 16 --epochs 1",
    # (made before the rollback on divergence: the paper's recipe is its setting, and a flag now)
    "impute": "impute --dataset synthetic --models xctformer_linear,linear --mask-rates 0.25 --epochs 1 "
    "--train-stride 50 --eval-stride 500 --batch-size 8 --paper-recipe",
    "detect": "detect --dataset MSL --models xctformer,window_mean --protocol point "
    "--arch d_model=8,d_ff=16,e_layers=1,n_heads=1 --train-stride 500 --epochs 1",
}


def _planner(command):
    from xct_estimators.bench.tasks import TASKS

    return TASKS[command].plan


@pytest.mark.parametrize("command", COMMANDS)
def test_every_run_of_an_old_results_file_counts_as_finished(command, tmp_path, capsys, request):
    argv = [*COMMANDS[command].split(), "--output", str(tmp_path), "--resume", "--no-progress"]
    if command == "detect":
        argv += ["--data-dir", str(request.getfixturevalue("shared_data"))]
    (tmp_path / "results.jsonl").write_text((SAVES / f"{command}_results.jsonl").read_text())
    finished = ResultStore(tmp_path).finished()
    assert len(finished) == 2
    jobs = _planner(command)(settings_from(build_parser().parse_args(argv)), finished, progress=False)
    assert jobs == []
    assert capsys.readouterr().out.count("skip (already in results)") == 2


def test_imputation_runs_of_the_papers_recipe_are_not_resumed_as_the_new_default(tmp_path, capsys):
    argv = [*COMMANDS["impute"].replace(" --paper-recipe", "").split(), "--output", str(tmp_path), "--resume"]
    (tmp_path / "results.jsonl").write_text((SAVES / "impute_results.jsonl").read_text())
    settings = settings_from(build_parser().parse_args([*argv, "--no-progress"]))
    jobs = _planner("impute")(settings, ResultStore(tmp_path).finished(), progress=False)
    assert [job.run["model"] for job in jobs] == ["xctformer_linear"]  # linear has no learning rate: resumed
    paper = json.loads((SAVES / "impute_results.jsonl").read_text().splitlines()[0])["settings"]
    assert jobs[0].run["settings"]["learning_rate"] == pytest.approx(paper["learning_rate"])
    assert "rollback_on_divergence" in jobs[0].run["settings"] and "rollback_on_divergence" not in paper
