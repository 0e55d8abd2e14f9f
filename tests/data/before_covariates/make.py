"""Forecasts of XCTFormerModel trained by the code before future and static covariates (commit
8a9de37), kept so a test can show that a model without them trains and forecasts exactly as then.

Training carries the rounding of the CPU's vector unit into the forecasts, so a machine whose
torch CPU capability (``torch.backends.cpu.get_cpu_capability()``) differs from the one the
``forecast_*.npy`` files were made on gets files of its own, ``forecast_*_<capability>.npy``,
made on that machine by this script with that commit's package first on the path:

    git worktree add /tmp/before 8a9de37
    cd /tmp/before && PYTHONPATH=/tmp/before python CHECKOUT/tests/data/before_covariates/make.py --capability
"""

from pathlib import Path

import numpy as np
from darts import TimeSeries

HERE = Path(__file__).parent


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

    import torch

    suffix = f"_{torch.backends.cpu.get_cpu_capability()}" if "--capability" in sys.argv else ""
    for past in (False, True):
        np.save(HERE / f"forecast_{'past' if past else 'plain'}{suffix}.npy", trained(past))
