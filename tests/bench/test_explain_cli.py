"""`xct-bench explain`: trains once, then loads the saved model; writes the picture and summaries."""

import pandas as pd

import xct_estimators.bench.explain as explain_module
from xct_estimators import XCTFormerModel
from xct_estimators.bench.cli import main


def test_explain_trains_saves_then_loads(monkeypatch, tmp_path, capsys):
    built = []

    def tiny(name, dataset, horizon, seq_len, epochs, seed, work_dir, **_):
        built.append((name, dataset, horizon))
        return XCTFormerModel(
            input_chunk_length=seq_len, output_chunk_length=horizon, patch_len=8, stride=8, d_model=8, n_heads=1,
            d_ff=16, n_epochs=1, random_state=seed, work_dir=str(work_dir),
            pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False},
        )  # fmt: skip

    monkeypatch.setattr(explain_module, "build_model", tiny)
    argv = ["explain", "--dataset", "synthetic", "--horizons", "24", "--seq-len", "48", "--output", str(tmp_path),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert built == [("xctformer", "synthetic", 24)]
    assert (tmp_path / "models" / "xctformer_synthetic_24_2021.pt").is_file()
    picture = tmp_path / "dependency_synthetic_24.png"
    assert picture.stat().st_size > 10_000
    channels = pd.read_csv(tmp_path / "dependency_synthetic_24_channels.csv", index_col=0)
    assert list(channels.index) == list(channels.columns) and "target" in channels.index  # MS: target + covariates
    assert "strongest channel pairs" in capsys.readouterr().out
    assert main(argv) == 0 and len(built) == 1  # the second run loads the saved model
    assert "loaded" in capsys.readouterr().out
