"""RollBackOnDivergence: inert while the validation loss behaves, a rollback at a lower rate when it diverges."""

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from xct_estimators import ReconstructionEngine
from xct_estimators.callbacks import RollBackOnDivergence

TINY = dict(window_length=24, patch_len=8, stride=4, d_model=8, n_heads=1, d_ff=16, e_layers=1, batch_size=16,
            n_epochs=4, patience=None, random_state=0, accelerator="cpu")  # fmt: skip


def sines(n=400, channels=3):
    t = np.arange(n)[:, None]
    return np.sin(2 * np.pi * t / np.array([9.0, 17.0, 29.0])[:channels]).astype(np.float32)


class Watch(pl.Callback):
    """Each step's learning rate, the weights at each validation end and at each epoch's start;
    optionally blows the weights up at the last training batch of ``corrupt_epoch``."""

    def __init__(self, corrupt_epoch=None):
        self.corrupt_epoch, self.lrs, self.validated, self.started = corrupt_epoch, [], [], []

    def _weights(self, module):
        return {k: v.detach().clone() for k, v in module.state_dict().items() if torch.is_tensor(v)}

    def on_train_epoch_start(self, trainer, module):
        self.started.append(self._weights(module))

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if trainer.current_epoch == self.corrupt_epoch and batch_idx == trainer.num_training_batches - 1:
            with torch.no_grad():
                for p in module.parameters():
                    p.mul_(-30.0)

    def on_validation_end(self, trainer, module):
        self.validated.append(self._weights(module))


def fit(*callbacks):
    engine = ReconstructionEngine(mask_rate=0.25, pl_trainer_kwargs={"callbacks": list(callbacks)}, **TINY)
    return engine.fit(sines())


def test_a_run_that_does_not_diverge_trains_exactly_as_without_it():
    guard, watched, plain = RollBackOnDivergence(), Watch(), Watch()
    guarded = fit(guard, watched)
    unguarded = fit(plain)
    assert guard.rolled_back_at == [] == guard.undone_epochs(guarded.val_losses)
    assert guarded.val_losses == unguarded.val_losses
    for ours, theirs in zip(watched.validated, plain.validated, strict=True):
        assert all(torch.equal(ours[k], theirs[k]) for k in theirs)


def test_a_diverged_epoch_is_undone_and_the_rest_of_the_schedule_runs_at_a_lower_rate():
    guard, watch, reference = RollBackOnDivergence(threshold=1.5, rate_factor=0.5), Watch(corrupt_epoch=1), Watch()
    engine = fit(guard, watch)
    fit(reference)
    assert engine.val_losses[1] > 1.5 * engine.val_losses[0]  # the corrupted epoch diverged ...
    assert guard.rolled_back_at == [1] == guard.undone_epochs(engine.val_losses)
    after_epoch_0 = watch.validated[0]
    assert all(torch.equal(watch.started[2][k], after_epoch_0[k]) for k in after_epoch_0)  # ... and was undone
    steps = len(watch.lrs) // 4
    np.testing.assert_allclose(watch.lrs[: 2 * steps], reference.lrs[: 2 * steps])
    np.testing.assert_allclose(watch.lrs[2 * steps :], 0.5 * np.array(reference.lrs[2 * steps :]), rtol=1e-12)
    assert np.isfinite(engine.val_losses).all() and min(engine.val_losses[2:]) < engine.val_losses[1]


def test_a_second_divergence_halves_the_rate_again():
    guard, watch, reference = RollBackOnDivergence(), Watch(corrupt_epoch=1), Watch()
    second = Watch(corrupt_epoch=2)
    engine = fit(guard, watch, second)
    fit(reference)
    assert guard.rolled_back_at == [1, 2] == guard.undone_epochs(engine.val_losses)
    steps = len(watch.lrs) // 4
    np.testing.assert_allclose(watch.lrs[3 * steps :], 0.25 * np.array(reference.lrs[3 * steps :]), rtol=1e-12)


@pytest.mark.parametrize("options", [{"threshold": 1.0}, {"rate_factor": 1.0}, {"rate_factor": 0.0}])
def test_settings_that_cannot_guard_are_refused(options):
    with pytest.raises(ValueError, match="threshold > 1 and 0 < rate_factor < 1"):
        RollBackOnDivergence(**options)


def test_the_epochs_undone_are_found_from_the_validation_losses_alone():
    guard = RollBackOnDivergence(threshold=1.5)
    # the ETTh2 12.5 % run at the paper's peak: the fifth epoch jumps above 1.5 x the best
    assert guard.undone_epochs([0.08485, 0.05681, 0.05431, 0.05111, 0.08559, 0.04389]) == [4]
    assert guard.undone_epochs([0.3, 0.2, 0.29, float("nan"), 0.31, 0.1]) == [3, 4]  # 0.29 < 1.5 x 0.2: kept
    assert guard.undone_epochs([float("nan"), 0.2]) == []  # nothing to go back to
