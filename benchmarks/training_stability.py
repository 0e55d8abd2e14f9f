"""Per-epoch gradient norms and validation loss of the imputation engine as ``xct-bench impute`` trains it.

Trains XCTFormer (the paper's preset for the dataset, linear fill, the one-cycle recipe with
``--epochs`` as the schedule's length) on the imputation split and stops after ``--stop-after``
epochs, printing per epoch: the learning rate, the median and largest gradient norm (and at
which step), the validation loss. ``--keep-last-batch`` restores the incomplete last training
batch the engine used to train on (before it trained on full batches only), to show what it did:

    python -m benchmarks.training_stability --dataset ETTh2 --data-dir DATA                    # ~9 min on 2 cores
    python -m benchmarks.training_stability --dataset ETTh2 --data-dir DATA --keep-last-batch  # diverges
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch

from xct_estimators import reconstruction_module
from xct_estimators.bench.catalog import DATA_DIR_ENV
from xct_estimators.bench.impute.protocol import build_imputer, imputation_splits
from xct_estimators.bench.impute.settings import ImputeSettings
from xct_estimators.nn.presets import PAPER_SEED


class GradientWatch(pl.Callback):
    """Prints each epoch's learning rate, gradient norms and validation loss; stops after ``stop_after``."""

    def __init__(self, stop_after: int):
        self.stop_after, self.norms, self.start, self.rows = stop_after, [], time.perf_counter(), []

    def on_before_optimizer_step(self, trainer, module, optimizer):
        norms = [p.grad.norm() for p in module.parameters() if p.grad is not None]
        self.norms.append(float(torch.linalg.vector_norm(torch.stack(norms))))

    def on_train_epoch_end(self, trainer, module):
        norms, self.norms = np.array(self.norms), []
        row = {
            "epoch": trainer.current_epoch,
            "lr": trainer.optimizers[0].param_groups[0]["lr"],
            "grad_median": float(np.median(norms)),
            "grad_max": float(norms.max()),
            "grad_max_step": int(norms.argmax()),
            "steps": len(norms),
            "val_loss": float(trainer.callback_metrics.get("val_loss", float("nan"))),
        }
        self.rows.append(row)
        print(
            f"epoch {row['epoch']}: lr {row['lr']:.2e}, gradient norm median {row['grad_median']:.3g}, "
            f"max {row['grad_max']:.3g} (step {row['grad_max_step']} of {row['steps']}), "
            f"validation loss {row['val_loss']:.5g}, {time.perf_counter() - self.start:.0f} s"
        )
        if trainer.current_epoch + 1 >= self.stop_after:
            trainer.should_stop = True


class _KeepLastBatch(torch.utils.data.DataLoader):
    def __init__(self, *args, **kwargs):
        if kwargs.get("shuffle"):
            kwargs["drop_last"] = False
        super().__init__(*args, **kwargs)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ETTh2")
    parser.add_argument("--mask-rate", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=None, help="the schedule's length (default: the preset's)")
    parser.add_argument("--stop-after", type=int, default=4, help="epochs to run")
    parser.add_argument("--train-stride", type=int, default=1)
    parser.add_argument("--keep-last-batch", action="store_true", help="train on the incomplete last batch too")
    parser.add_argument("--clip", type=float, default=None, help="Lightning's gradient_clip_val (norm)")
    parser.add_argument(
        "--learning-rate", type=float, default=None, help="peak rate (default: the preset's, the paper's recipe)"
    )
    parser.add_argument(
        "--warmup-share", type=float, default=None, help="the one-cycle's warm-up share (default: the paper's 0.4)"
    )
    parser.add_argument("--data-dir", default=os.environ.get(DATA_DIR_ENV))
    parser.add_argument("--seed", type=int, default=PAPER_SEED)
    parser.add_argument("--output", type=Path, help="also write the rows and their provenance to this JSON file")
    args = parser.parse_args(argv)
    bench_args = ImputeSettings(
        epochs=args.epochs,
        accelerator="cpu",
        devices=1,
        no_progress=True,
        train_stride=args.train_stride,
        seed=args.seed,
        learning_rate=args.learning_rate,
        paper_recipe=args.learning_rate is None,  # what the script diagnoses: the paper's recipe
    )
    train, val, _ = imputation_splits(args.dataset, args.data_dir, args.seed)
    engine = build_imputer("xctformer_linear", args.dataset, args.mask_rate, bench_args).engine
    watch = GradientWatch(args.stop_after)
    engine.pl_trainer_kwargs = {"callbacks": [watch]}
    if args.clip is not None:
        engine.pl_trainer_kwargs["gradient_clip_val"] = args.clip
    real, warmup = torch.utils.data.DataLoader, reconstruction_module.PAPER_PCT_START
    if args.keep_last_batch:
        torch.utils.data.DataLoader = _KeepLastBatch
    if args.warmup_share is not None:  # a diagnosis, not an engine option: the schedule reads this constant
        reconstruction_module.PAPER_PCT_START = args.warmup_share
    try:
        engine.fit(train, val_values=val)
    finally:
        torch.utils.data.DataLoader, reconstruction_module.PAPER_PCT_START = real, warmup
    if args.output:
        from xct_estimators.bench.provenance import provenance

        argv = ["python", "-m", "benchmarks.training_stability", *(sys.argv[1:] if argv is None else argv)]
        record = {"epochs": watch.rows, **provenance(argv)}
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(record, indent=1) + "\n")
    return watch.rows


if __name__ == "__main__":
    main()
