"""What the benchmark's tasks share about XCTFormer: the ablation models, the preset each
dataset trains with, and the reconstruction engine of ``impute`` and ``detect``."""

from __future__ import annotations

import time

from ..nn.hyperparameters import ABLATIONS
from .covariate_suite import DATASETS as COVARIATE_SUITE
from .provenance import timestamp

#: The paper's ablations (its ablation table, plus the clipped-negative-weights variant) as models:
#: the dataset's preset with one switch changed (``xct_estimators.nn.hyperparameters.ABLATIONS``).
ABLATION_MODELS = {f"xctformer_{name.replace('_', '')}": name for name in ABLATIONS}
#: How each ablation model reads in ``--help``: the switches it changes.
ABLATION_DESCRIPTIONS = {
    model: ", ".join(f"{key}={value!r}" for key, value in ABLATIONS[name].items())
    for model, name in ABLATION_MODELS.items()
}

#: The preset each benchmark dataset trains XCTFormer with (App. D: synthetic uses ETTm1's).
PRESET_FOR_DATASET = {
    "synthetic": "ETTm1",
    "control": "ETTm1",  # generated sets too
    "sites": "ETTm1",
    **dict.fromkeys(COVARIATE_SUITE, "ETTm1"),
    "weather": "Weather",
    "electricity": "ECL",
    "traffic": "Traffic",
    "exchange_rate": "ETTh1",  # no published preset
    "illness": "ETTh1",  # no published preset
}


#: Estimator switches that came after the records: at these defaults they stay out of a run's
#: identity, so the runs recorded before them keep theirs.
LATER_SWITCHES = {"fused_attention": True}


def without_later_defaults(params: dict) -> dict:
    """``params`` without the :data:`LATER_SWITCHES` that are at their defaults."""
    return {k: v for k, v in params.items() if k not in LATER_SWITCHES or v != LATER_SWITCHES[k]}


def preset_name(dataset: str) -> str:
    return PRESET_FOR_DATASET.get(dataset, dataset if dataset.startswith("ETT") else "ETTh1")


def timed_fit(fit, xctformer: bool) -> float:
    """Seconds ``fit()`` takes. XCTFormer's one-time build of its CPU attention kernel (minutes on a
    fresh machine, against seconds an epoch once cached) happens first, off the clock."""
    if xctformer:
        from ..nn import crab_kernel

        crab_kernel.load()
    start = time.perf_counter()
    fit()
    return time.perf_counter() - start


def finished(fit_seconds: float, eval_started: float) -> dict:
    """A record's timing fields: training seconds, evaluation seconds up to now, the finishing time."""
    eval_seconds = time.perf_counter() - eval_started
    return {"fit_seconds": fit_seconds, "eval_seconds": eval_seconds, "finished_at": timestamp()}


def compiled_graphs() -> int:
    """Graphs ``torch.compile`` has compiled in this process so far (0 where it never ran): a
    record's ``eval_compilations`` is its difference over the evaluation."""
    import sys

    dynamo = sys.modules.get("torch._dynamo.utils")
    return int(dynamo.counters["stats"]["unique_graphs"]) if dynamo is not None else 0


def reconstruction_engine(preset_dataset: str, task: str, settings, **extra):
    """The engine of an ``impute`` / ``detect`` run: the preset's row for ``task``, the command's
    epochs, batch size, learning rate, compile switch and precision where given, ``extra`` on top."""
    from ..reconstruction import ReconstructionEngine, preset_params

    params = preset_params(preset_dataset, task)
    if settings.epochs:
        params["n_epochs"] = settings.epochs
    for name in ("batch_size", "learning_rate"):
        if getattr(settings, name, None):
            params[name] = getattr(settings, name)
    params.update(extra)
    where = dict(accelerator=settings.accelerator, devices=settings.devices, progress_bar=not settings.no_progress)
    where.update(compile=settings.compile, precision=settings.precision, fused_attention=not settings.plain_attention)
    # patience_after_warmup=False: the paper's early stopping counts from the first epoch
    return ReconstructionEngine(**params, patience_after_warmup=False, random_state=settings.seed, **where)
