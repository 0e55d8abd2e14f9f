"""Adam's fused implementation is the default where torch has it; the user's choice stands."""

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from darts import TimeSeries

from xct_estimators import ReconstructionEngine, XCTFormerModel
from xct_estimators._optim import optimizer_kwargs_with_fused

PARAMS = [torch.nn.Parameter(torch.randn(3, 2))]


def test_adam_and_adamw_on_cpu_get_the_fused_kernel():
    for cls in (torch.optim.Adam, torch.optim.AdamW):
        kwargs = optimizer_kwargs_with_fused(cls, {"lr": 1e-3}, PARAMS)
        assert kwargs == {"lr": 1e-3, "fused": True}
        cls(PARAMS, **kwargs).zero_grad()  # torch accepts it


@pytest.mark.parametrize("given", [{"fused": False}, {"foreach": True}, {"differentiable": True}])
def test_an_implementation_the_user_chose_is_kept(given):
    assert optimizer_kwargs_with_fused(torch.optim.Adam, {"lr": 1e-2, **given}, PARAMS) == {"lr": 1e-2, **given}


def test_other_optimizers_devices_and_dtypes_are_left_alone():
    assert optimizer_kwargs_with_fused(torch.optim.SGD, {"lr": 0.1}, PARAMS) == {"lr": 0.1}
    meta = [torch.nn.Parameter(torch.empty(2, device="meta"))]
    assert optimizer_kwargs_with_fused(torch.optim.Adam, {}, meta) == {}
    assert optimizer_kwargs_with_fused(torch.optim.Adam, {}, []) == {}
    mixed = [*PARAMS, torch.zeros(2, dtype=torch.int64)]
    assert optimizer_kwargs_with_fused(torch.optim.Adam, {}, mixed) == {}


def test_fused_and_for_loop_adam_take_the_same_steps():
    torch.manual_seed(0)
    start = torch.randn(50, 20)
    updated = []
    for kwargs in ({"fused": True}, {"foreach": False}):
        p = torch.nn.Parameter(start.clone())
        opt = torch.optim.Adam([p], lr=1e-2, **kwargs)
        for step in range(5):
            p.grad = torch.sin(start * (step + 1))
            opt.step()
        updated.append(p.detach())
    torch.testing.assert_close(updated[0], updated[1], rtol=1e-5, atol=1e-6)


class _Optimizer(pl.Callback):
    def on_train_start(self, trainer, module):
        self.defaults = dict(trainer.optimizers[0].defaults)


def _series():
    t = np.arange(160)[:, None]
    return TimeSeries.from_values(np.sin(2 * np.pi * t / np.array([12.0, 17.0])).astype(np.float32))


@pytest.mark.parametrize("optimizer_kwargs, fused", [(None, True), ({"lr": 1e-3, "fused": False}, False)])
def test_darts_model_trains_with_fused_adam_and_keeps_the_users_arguments(tmp_path, optimizer_kwargs, fused):
    seen = _Optimizer()
    model = XCTFormerModel(
        input_chunk_length=32, output_chunk_length=8, patch_len=8, stride=8, d_model=8, n_heads=1, d_ff=16,
        e_layers=1, n_epochs=1, batch_size=16, random_state=0, work_dir=str(tmp_path),
        optimizer_kwargs=optimizer_kwargs,
        pl_trainer_kwargs={"enable_progress_bar": False, "enable_model_summary": False, "callbacks": [seen]},
    )  # fmt: skip
    model.fit(_series())
    assert bool(seen.defaults["fused"]) is fused
    # the module's saved arguments stay the user's
    assert model.model.optimizer_kwargs.get("fused") == (optimizer_kwargs or {}).get("fused")


def test_reconstruction_engine_trains_with_fused_adam():
    seen = _Optimizer()
    engine = ReconstructionEngine(
        window_length=24, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, batch_size=16,
        n_epochs=1, random_state=0, accelerator="cpu", pl_trainer_kwargs={"callbacks": [seen]},
    )  # fmt: skip
    engine.fit(np.asarray(_series().values(), dtype=np.float32))
    assert seen.defaults["fused"] is True
