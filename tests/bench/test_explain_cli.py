"""`xct-bench explain`: trains once, then loads the saved model; writes the picture and summaries."""

import numpy as np
import pandas as pd

import xct_estimators.bench.explain as explain_module
from xct_estimators import XCTFormerModel
from xct_estimators.bench.cli import main


def test_explain_trains_saves_then_loads(monkeypatch, tmp_path, capsys):
    built, fitted = [], []

    def tiny(name, dataset, horizon, seq_len, epochs, seed, work_dir, **_):
        built.append((name, dataset, horizon))
        return XCTFormerModel(
            input_chunk_length=seq_len, output_chunk_length=horizon, patch_len=8, stride=8, d_model=8, n_heads=1,
            d_ff=16, n_epochs=1, random_state=seed, work_dir=str(work_dir),
            pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False},
        )  # fmt: skip

    monkeypatch.setattr(explain_module, "build_model", tiny)
    fit = explain_module.fit_model
    monkeypatch.setattr(explain_module, "fit_model", lambda model, data: fitted.append(1) or fit(model, data))
    argv = ["explain", "--dataset", "synthetic", "--horizons", "24", "--seq-len", "48", "--output", str(tmp_path),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert built == [("xctformer", "synthetic", 24)] and len(fitted) == 1
    (saved,) = (tmp_path / "models").glob("xctformer_synthetic_24_2021_*.pt")  # named by the run's identity
    assert saved.with_name(saved.name + ".ckpt").is_file() and not list((tmp_path / "models").glob(".*"))
    picture = tmp_path / "dependency_synthetic_24.png"
    assert picture.stat().st_size > 10_000
    channels = pd.read_csv(tmp_path / "dependency_synthetic_24_channels.csv", index_col=0)
    assert list(channels.index) == list(channels.columns) and "target" in channels.index  # MS: target + covariates
    assert "strongest channel pairs" in capsys.readouterr().out
    assert main(argv) == 0 and len(fitted) == 1  # the second run loads the saved model
    assert "loaded" in capsys.readouterr().out
    assert main([*argv, "--epochs", "2"]) == 0 and len(fitted) == 2  # other settings: another model
    assert len(list((tmp_path / "models").glob("*.pt"))) == 2
    saved.write_bytes(b"")  # a 0-byte save: the CLI user is told to delete it, not to call model.save
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{saved} is a saved model this command cannot read" in err and f"Delete {saved}" in err


def test_explain_never_loads_a_model_of_another_file_with_the_same_name(monkeypatch, tmp_path, capsys):
    fitted = []
    fit = explain_module.fit_model
    monkeypatch.setattr(explain_module, "fit_model", lambda model, data: fitted.append(model) or fit(model, data))

    def tiny(name, dataset, horizon, seq_len, epochs, seed, work_dir, **_):
        return XCTFormerModel(
            input_chunk_length=seq_len, output_chunk_length=horizon, patch_len=8, stride=8, d_model=8, n_heads=1,
            d_ff=16, n_epochs=epochs, random_state=seed, work_dir=str(work_dir),
            pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False},
        )  # fmt: skip

    monkeypatch.setattr(explain_module, "build_model", tiny)
    stamps = pd.date_range("2020", periods=400, freq="h")
    seven, one = tmp_path / "a" / "data.csv", tmp_path / "b" / "data.csv"
    for path, columns in ((seven, [f"c{i}" for i in range(6)] + ["OT"]), (one, ["OT"])):
        path.parent.mkdir()
        frame = pd.DataFrame({c: np.sin(np.arange(400) / (3 + i)) for i, c in enumerate(columns)}, index=stamps)
        frame.rename_axis("date").to_csv(path)
    common = ["--horizons", "8", "--seq-len", "16", "--epochs", "1", "--output", str(tmp_path / "out"), "--no-progress"]
    assert main(["explain", "--dataset", str(seven), *common]) == 0
    assert main(["explain", "--dataset", str(one), *common]) == 0
    assert len(fitted) == 2  # the one-channel file trained its own model
    channels = sorted((tmp_path / "out").glob("dependency_data-*_8_channels.csv"))
    assert sorted(len(pd.read_csv(path, index_col=0)) for path in channels) == [1, 7]
