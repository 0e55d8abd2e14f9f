"""Training on 2 CPU processes (ddp_spawn, gloo), predicting on one: the Darts model and the engine.

Two processes with per-process batch b take the same optimizer steps as one process with batch
2b (only the shuffling differs), so the comparisons use those pairs.
"""

import numpy as np
import pytest
from darts import TimeSeries

from xct_estimators import ReconstructionEngine, XCTFormerModel
from xct_estimators._devices import device_count, is_distributed, single_device
from xct_estimators.training import SPAWN

DDP = {"accelerator": "cpu", "devices": 2, "strategy": "ddp_spawn"}


def _values(n=600):
    t = np.arange(n)
    return np.stack([np.sin(t / 6), np.cos(t / 9)], axis=1).astype(np.float32)


def _darts_model(batch_size, trainer):
    return XCTFormerModel(
        32, 8, patch_len=8, stride=4, d_model=16, n_heads=1, d_ff=32, e_layers=1, n_epochs=8, random_state=0,
        batch_size=batch_size, optimizer_kwargs={"lr": 3e-3},
        pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False, **trainer},
    )  # fmt: skip


def _forecast_mse(model, series):
    forecasts = model.historical_forecasts(
        series[450:], start=32, start_format="position", forecast_horizon=8, retrain=False, last_points_only=False
    )
    return float(np.mean([(f.values() - series.slice_intersect(f).values()) ** 2 for f in forecasts]))


def test_trainer_arguments_for_inference():
    assert device_count("auto") == 1 and device_count(2) == 2 and device_count([0, 1]) == 2 and device_count("0,1") == 2
    assert is_distributed(DDP) and not is_distributed({"accelerator": "cpu", "devices": 1})
    assert single_device({**DDP, "num_nodes": 2, "precision": "bf16-mixed"}) == {
        "accelerator": "cpu", "devices": 1, "precision": "bf16-mixed"
    }  # fmt: skip
    assert single_device({"accelerator": "gpu", "devices": [2, 3], "strategy": "ddp"})["devices"] == [2]


def test_darts_model_trains_on_two_processes_predicts_saves_and_loads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    series = TimeSeries.from_values(_values())
    single = _darts_model(32, {})
    single.fit(series[:450], val_series=series[418:500])
    ddp = _darts_model(16, {"devices": 2, "strategy": "ddp_spawn"})
    ddp.fit(series[:450], val_series=series[418:500])

    one = ddp.predict(8, series=series[:450])  # one window: Lightning's sampler failed on 2 processes
    both = ddp.predict(8, series=[series[:450], series[:460]])
    assert len(one) == 8 and [len(p) for p in both] == [8, 8]
    np.testing.assert_allclose(both[0].values(), one.values(), rtol=1e-6)
    generic = ddp.historical_forecasts(
        series[450:530], start=32, start_format="position", forecast_horizon=8, retrain=False,
        predict_kwargs={"n_jobs": 1, "roll_size": 8},  # Darts' generic path (predict_from_dataset)
    )  # fmt: skip
    assert len(generic) == 80 - 32 - 8 + 1

    untrained = float(np.mean(series[450:].values() ** 2))
    mse_single, mse_ddp = _forecast_mse(single, series), _forecast_mse(ddp, series)
    assert mse_ddp < untrained / 50 and mse_single < untrained / 50
    assert 0.5 < mse_ddp / mse_single < 2.0, (mse_ddp, mse_single)

    ddp.save(str(tmp_path / "ddp.pt"))
    loaded = XCTFormerModel.load(str(tmp_path / "ddp.pt"))
    np.testing.assert_allclose(loaded.predict(8, series=series[:450]).values(), one.values(), rtol=1e-5, atol=1e-6)


def test_engine_trains_on_two_processes_and_keeps_its_history():
    values = _values()
    common = dict(
        window_length=32, patch_len=8, stride=4, d_model=16, n_heads=1, d_ff=32, e_layers=1, n_epochs=6,
        random_state=0, accelerator="cpu", mask_rate=0.25, patience=None,
    )  # fmt: skip
    single = ReconstructionEngine(**common, batch_size=32).fit(values[:450])
    # ddp_spawn by default; each spawned process compiles its copy (pickling drops the compiled function)
    ddp = ReconstructionEngine(**common, batch_size=16, devices=2, compile={"backend": "aot_eager"}).fit(values[:450])
    assert ddp.epochs_trained == 6 and len(ddp.val_losses) == 6
    assert ddp.best_epoch == int(np.argmin(ddp.val_losses))
    np.testing.assert_allclose(ddp.val_losses, single.val_losses, rtol=0.5)
    x = values[450:]
    visible = np.random.default_rng(0).random(x.shape) > 0.25
    errors = [np.mean((e.reconstruct(np.where(visible, x, np.nan)) - x)[~visible] ** 2) for e in (single, ddp)]
    assert errors[1] < 0.02 and 0.5 < errors[1] / errors[0] < 2.0, errors


@pytest.mark.parametrize("devices", [[0, 1], "2"])
def test_engine_picks_spawn_for_several_devices(devices, monkeypatch):
    seen = {}

    class Stop(Exception):
        pass

    def fake_trainer(**kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr("xct_estimators.reconstruction.pl.Trainer", fake_trainer)
    engine = ReconstructionEngine(window_length=32, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16,
                                  e_layers=1, accelerator="cpu", devices=devices)  # fmt: skip
    with pytest.raises(Stop):
        engine.fit(_values(200))
    assert seen["strategy"] == SPAWN


def _gone(pid: int) -> bool:
    """Exited (a zombie no one has reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _descendants(pid: int) -> list[int]:
    """Every living process under ``pid`` (from /proc)."""
    import os

    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if fields[0] not in ("Z", "X"):
                children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="reads /proc")
def test_a_process_orphaned_while_it_started_dies_as_it_binds_to_its_parent(tmp_path):
    """A spawned process whose parent is killed before it reaches its work (it is still importing)
    exits as soon as it binds to the parent: the parent-death signal would never come."""
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, time\n"
        "import multiprocessing as mp\n"
        "def work(path):\n"
        "    open(path + '.started', 'w').write(str(os.getpid()))\n"
        "    time.sleep(3)  # slow imports\n"
        "    from xct_estimators._devices import die_with_parent\n"
        "    die_with_parent()\n"
        "    open(path, 'w').write('bound')\n"
        "    time.sleep(300)\n"
        "if __name__ == '__main__':\n"
        "    mp.get_context('spawn').Process(target=work, args=(sys.argv[1],)).start()\n"
        "    time.sleep(300)\n"
    )
    marker = tmp_path / "child"
    parent = subprocess.Popen([sys.executable, str(script), str(marker)])
    started = tmp_path / "child.started"
    deadline = time.time() + 60
    while not (started.is_file() and started.read_text()):
        assert time.time() < deadline, "the child never started"
        time.sleep(0.1)
    child = int(started.read_text())
    parent.kill()
    parent.wait()
    deadline = time.time() + 30
    while not _gone(child) and time.time() < deadline:
        time.sleep(0.2)
    assert _gone(child) and not marker.exists(), "the orphaned child went on to its work"


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="reads /proc")
def test_xct_bench_s_trainers_die_with_it_at_any_moment(tmp_path):
    """``xct-bench forecast --devices 2`` with a Darts baseline, killed with SIGKILL two seconds after
    its trainer processes start: none of its processes outlives it."""
    import subprocess
    import sys
    import time

    argv = [sys.executable, "-m", "xct_estimators.bench", "forecast", "--models", "nlinear", "--horizons", "24",
            "--accelerator", "cpu", "--devices", "2", "--no-progress", "--output", str(tmp_path / "out")]  # fmt: skip
    bench = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180

    def trainers() -> list[int]:  # the spawned processes, not multiprocessing's resource tracker
        found = []
        for pid in _descendants(bench.pid):
            try:
                with open(f"/proc/{pid}/cmdline") as cmdline:
                    found += [pid] if "spawn_main" in cmdline.read() else []
            except FileNotFoundError:
                pass
        return found

    while len(trainers()) < 2:
        assert bench.poll() is None and time.time() < deadline, "the trainers never started"
        time.sleep(0.1)
    time.sleep(2)
    left = _descendants(bench.pid)
    bench.kill()
    bench.wait()
    deadline = time.time() + 10
    while any(not _gone(pid) for pid in left) and time.time() < deadline:
        time.sleep(0.2)
    alive = {pid: open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:120] for pid in left if not _gone(pid)}
    assert not alive, f"processes outlived xct-bench: {alive}"


def test_only_a_process_the_package_spawned_binds_to_its_parent():
    """A process that inherits the launcher's variable but was not spawned by it (a shell's, say)
    imports the package as usual."""
    import os
    import subprocess
    import sys

    from xct_estimators._devices import SPAWNED_BY

    env = {**os.environ, SPAWNED_BY: "1"}
    probe = subprocess.run([sys.executable, "-c", "import xct_estimators; print('alive')"], env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert probe.returncode == 0 and probe.stdout.strip() == "alive"
