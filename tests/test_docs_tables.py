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
