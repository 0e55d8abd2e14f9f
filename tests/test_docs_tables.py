"""The docs' generated tables (``benchmarks/docs_tables.py``): rebuilt from the committed records,
they equal what the docs hold."""

import json

import pytest


def test_the_docs_tables_are_up_to_date(benchmark_script, capsys):
    tables = benchmark_script("docs_tables")
    assert tables.main(["--check"]) == 0, capsys.readouterr().err


def test_a_block_is_rebuilt_from_its_record(benchmark_script, tmp_path, monkeypatch):
    tables = benchmark_script("docs_tables")
    record = tmp_path / "benchmarks" / "results" / "step_time" / "2030-01-01-cpu" / "compile.json"
    record.parent.mkdir(parents=True)
    row = {"network": "ETTh1", "batch": 32, "tokens": 84}
    row.update(train_ms={"fused": 4.0, "compiled": 3.0}, infer_ms={"fused": 1.0, "compiled": 0.5})
    provenance = {"device": {"cpu": "Some CPU"}, "git_commit": "0123456789abcdef", "command": "python x.py"}
    record.write_text(json.dumps({"threads": 2, "torch": "2.13.0", "provenance": provenance, "rows": [row]}))
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    monkeypatch.setattr(tables, "RESULTS", tmp_path / "benchmarks" / "results")
    stale = "before\n<!-- generated: compile-cpu -->\n| typed by hand |\n<!-- end generated -->\nafter\n"
    text = tables.refreshed(stale, "doc.md")
    assert "typed by hand" not in text and text.startswith("before\n") and text.endswith("after\n")
    assert "| ETTh1 | 32 | 84 | 4.0 | 3.0 | 0.75 | 1.0 | 0.5 | 0.50 |" in text
    assert "Some CPU, 2 threads, torch 2.13.0, commit 0123456" in text
    assert "record: `benchmarks/results/step_time/2030-01-01-cpu/compile.json`" in text
    assert tables.refreshed(text, "doc.md") == text

    with pytest.raises(ValueError, match="doc.md: unknown generated block 'nope'"):
        tables.refreshed("<!-- generated: nope -->\n<!-- end generated -->", "doc.md")


def test_every_xct_bench_option_is_in_the_option_reference_with_its_default(benchmark_script):
    import argparse
    from pathlib import Path

    from xct_estimators.bench.parser import build_parser

    tables = benchmark_script("docs_tables")
    guide = (Path(tables.ROOT) / "docs" / "xct-bench-options.md").read_text()
    (subcommands,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subcommands.choices) == {"forecast", "impute", "detect", "explain", "tune", "profile", "report"}
    for name, parser in subcommands.choices.items():
        section = guide.split(f"#### `xct-bench {name}`")[1].split("####")[0]
        for action in parser._actions:
            if action.option_strings and action.option_strings != ["-h", "--help"]:
                assert action.help, f"xct-bench {name} {action.option_strings[0]} has no help"
                assert "(default: " in action.help, f"xct-bench {name} {action.option_strings[0]} hides its default"
                assert f"`{action.option_strings[0]}`" in section, f"{name} {action.option_strings[0]}"


def test_the_versions_table_says_what_pyproject_requires_and_records_ran(benchmark_script):
    tables = benchmark_script("docs_tables")
    table = tables.versions()
    required = tables._required()
    assert required["torch"].startswith(">=") and required["darts"].startswith(">=")
    assert f"| torch | {required['torch']} |" in table
    assert "tested (CPU)" in table and "commit " in table


def test_the_detection_ablation_never_pools_runs_of_other_epochs_as_seeds(benchmark_script, tmp_path):
    ablation = benchmark_script("detection_ablation")
    folder = tmp_path / "cpu" / ablation.RECORDS[0]
    folder.mkdir(parents=True)
    lines = []
    for seed, epochs, vus in ((1, 5, 0.7), (2, 5, 0.8), (1, 10, 0.1)):
        settings = {"window_length": 100, "n_epochs": epochs, "scoring": "none/mean/100"}
        lines.append(json.dumps({
            "dataset": "MSL", "protocol": "entity", "model": "xctformer", "seed": seed, "settings": settings,
            "vus_pr": vus, "auc_pr": vus / 2, "command": f"xct-bench detect --epochs {epochs}", "git_commit": "0" * 40,
        }))  # fmt: skip
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    table = ablation.table(tmp_path, tmp_path)
    assert "| MSL | entity | `xctformer` | none/mean/100 | 100 | 5 | 0.750 ± 0.071 | 0.375 ± 0.035 |" in table
    assert "| MSL | entity | `xctformer` | none/mean/100 | 100 | 10 | 0.100 (1 seed) | 0.050 (1 seed) |" in table
