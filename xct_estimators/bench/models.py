"""What the benchmark's tasks share about XCTFormer: the ablation models, the preset each
dataset trains with, and the reconstruction engine of ``impute`` and ``detect``."""

from __future__ import annotations

from ..nn.presets import ABLATIONS  # noqa: F401  (the switches each ablation model applies)

#: The paper's ablations (its ablation table, plus the clipped-negative-weights variant) as models:
#: the dataset's preset with one switch changed (``xct_estimators.nn.presets.ABLATIONS``).
ABLATION_MODELS = {
    "xctformer_nomask": "no_mask",
    "xctformer_softmax": "softmax",
    "xctformer_vanilla": "vanilla",
    "xctformer_time": "time",
    "xctformer_channel": "channel",
    "xctformer_clipped": "clipped",
}
#: The preset each benchmark dataset trains XCTFormer with (App. D: synthetic uses ETTm1's).
PRESET_FOR_DATASET = {
    "synthetic": "ETTm1",
    "weather": "Weather",
    "electricity": "ECL",
    "traffic": "Traffic",
    "exchange_rate": "ETTh1",  # no published preset
    "illness": "ETTh1",  # no published preset
}


def preset_name(dataset: str) -> str:
    return PRESET_FOR_DATASET.get(dataset, dataset if dataset.startswith("ETT") else "ETTh1")


def reconstruction_engine(preset_dataset: str, task: str, settings, **extra):
    """The engine of an ``impute`` / ``detect`` run: the preset's row for ``task``, the command's
    epochs, batch size and learning rate where given, ``extra`` on top."""
    from ..reconstruction import ReconstructionEngine, preset_params

    params = preset_params(preset_dataset, task)
    if settings.epochs:
        params["n_epochs"] = settings.epochs
    for name in ("batch_size", "learning_rate"):
        if getattr(settings, name, None):
            params[name] = getattr(settings, name)
    params.update(extra)
    return ReconstructionEngine(
        **params,
        patience_after_warmup=False,  # the paper's early stopping counts from the first epoch
        random_state=settings.seed,
        accelerator=settings.accelerator,
        devices=settings.devices,
        progress_bar=not settings.no_progress,
    )
