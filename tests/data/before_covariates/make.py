"""Forecasts of XCTFormerModel trained by the code before future and static covariates (commit
8a9de37), kept so a test can show that a model without them trains and forecasts exactly as then.

Training carries the rounding of the CPU's kernels into the forecasts, and they differ with the
torch CPU capability (``torch.backends.cpu.get_cpu_capability()``) and with the vendor (an AMD and
an Intel CPU, both AVX512, differ by up to 2e-3). A machine unlike those the ``forecast_*.npy``
files were made on gets files of its own, ``forecast_*_<capability>_<vendor>.npy``, made on that
machine by this script with that commit's package first on the path (the test takes the most
specific file there is: :func:`reference`):

    git worktree add /tmp/before 8a9de37
    cd /tmp/before && PYTHONPATH=/tmp/before python CHECKOUT/tests/data/before_covariates/make.py --machine
"""

import platform
from pathlib import Path

import numpy as np
from darts import TimeSeries

HERE = Path(__file__).parent


def vendor() -> str:
    """The CPU's vendor as Linux names it (``GenuineIntel``, ``AuthenticAMD``), else the platform's."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":")[1].strip() for line in lines if line.startswith("vendor_id"))
    except (OSError, StopIteration):
        return platform.machine()


def suffixes() -> list[str]:
    """This machine's file suffixes, the most specific first."""
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    return [f"_{capability}_{vendor()}", f"_{capability}", ""]


def reference(kind: str) -> Path:
    """The forecasts made on the machine most like this one (``kind``: plain or past)."""
    return next(p for p in (HERE / f"forecast_{kind}{suffix}.npy" for suffix in suffixes()) if p.exists())


def series() -> tuple[TimeSeries, TimeSeries]:
    t = np.arange(240, dtype=np.float32)
    targets = np.stack([np.sin(t / 6), np.cos(t / 9) + 0.1 * np.sin(t / 2)], axis=1).astype(np.float32)
    covariate = (np.sin(t / 4) * 0.5)[:, None].astype(np.float32)
    return TimeSeries.from_values(targets, columns=["a", "b"]), TimeSeries.from_values(covariate, columns=["x"])


def trained(past_covariates: bool):
    from xct_estimators import XCTFormerModel

    target, covariate = series()
    model = XCTFormerModel(
        input_chunk_length=32, output_chunk_length=8, patch_len=8, stride=4, d_model=8, n_heads=2, d_ff=16,
        e_layers=1, n_epochs=2, batch_size=16, random_state=0,
        pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False, "logger": False},
    )  # fmt: skip
    model.fit(target[:200], past_covariates=covariate if past_covariates else None)
    return model.predict(8, series=target[:200], past_covariates=covariate if past_covariates else None).values()


if __name__ == "__main__":
    import sys

    suffix = suffixes()[0] if "--machine" in sys.argv else ""
    for past in (False, True):
        np.save(HERE / f"forecast_{'past' if past else 'plain'}{suffix}.npy", trained(past))
