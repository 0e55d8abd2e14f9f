"""The paper's hyperparameter search (App. B, "Hyperparameter Search Space") on Optuna.

A search space is plain data: a dict from parameter name to ``{"choices": [...]}`` or
``{"low": a, "high": b, "step": s}`` (:func:`search_space` gives the paper's). Every trial trains
through the same paths as the benchmarks (``XCTFormerModel.from_params`` for forecasting, the
:class:`~xct_estimators.reconstruction.ReconstructionEngine` for imputation and anomaly
detection) and its value is the lowest validation MSE of its epochs; Optuna's pruner stops bad
trials after any epoch. Studies live in any Optuna storage, so several processes or machines can
work on one study.

Optuna is an optional extra: ``pip install 'xct-estimators[tune]'``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pytorch_lightning as pl

from ._checks import is_positive_int
from ._optional import optional_import
from ._quiet import quiet_lightning
from ._tune_data import VALIDATION_FRACTION, SearchData, n_channels_of
from .nn.config import XCTFormerConfig
from .nn.hyperparameters import ARCHITECTURE_PARAMS
from .nn.presets import PAPER_PATIENCE, PAPER_SEED
from .search_spaces import (
    LOOK_BACK_MAX_PATCHES,
    base_params,
    check_space,
    check_task,
    derived_params,
    longest_look_back,
    look_back_space,
    search_space,
    suggest,
)
from .training import early_stopping


def _optuna():
    return optional_import("optuna", extra="tune", purpose="Hyperparameter search")


def trial_seeded_tpe(seed: Optional[int]):
    """Optuna's TPE sampler whose random draws for each trial come from (``seed``, the trial's
    number): workers on one study (numbers are unique in its storage) and a study continued later
    never draw alike, and a trial's draws are reproducible from its number. ``None``: unseeded TPE."""
    optuna = _optuna()
    if seed is None:
        return optuna.samplers.TPESampler()

    class TrialSeededTPESampler(optuna.samplers.TPESampler):
        def before_trial(self, study, trial) -> None:
            key = int(np.random.SeedSequence([seed, trial.number]).generate_state(1)[0])
            self._rng.rng.seed(key)  # TPE's own draws
            self._random_sampler._rng.rng.seed(key)  # the random start-up trials'
            super().before_trial(study, trial)

    return TrialSeededTPESampler(seed=seed)


class PruningCallback(pl.Callback):
    """Report each epoch's validation loss to an Optuna trial; stop the trial when its pruner says so.

    Optuna's own ``PyTorchLightningPruningCallback`` (optuna-integration) is written for the
    ``lightning`` package, whose callbacks Darts' ``pytorch_lightning`` trainer does not accept;
    this is the same protocol (``trial.report`` / ``trial.should_prune``) on ``pytorch_lightning``.
    It also keeps the lowest validation loss, the trial's value.
    """

    def __init__(self, trial, monitor: str = "val_loss"):
        self.trial = trial
        self.monitor = monitor
        self.best_score = math.inf

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking:
            return
        score = trainer.callback_metrics.get(self.monitor)
        if score is None:
            return
        score = float(score)
        self.best_score = min(self.best_score, score)
        self.trial.report(score, step=trainer.current_epoch)
        if self.trial.should_prune():
            raise _optuna().TrialPruned(f"pruned after epoch {trainer.current_epoch} ({self.monitor} {score:.5g})")


def _feasibility(
    task: str, params: dict[str, Any], n_channels: int, out_len: int, max_patches: Optional[int] = None
) -> Optional[str]:
    """Why the network of ``params`` cannot be built (or would not fit in memory, or has more than
    ``max_patches`` patches per channel), else None."""
    length = params["input_chunk_length"] if task == "forecast" else params["window_length"]
    try:
        architecture = {name: params[name] for name in ARCHITECTURE_PARAMS if name in params}
        config = XCTFormerConfig(seq_len=length, n_channels=n_channels, out_len=out_len, **architecture)
        config.check_attention_memory(params["batch_size"])
    except ValueError as error:
        return str(error)
    if max_patches is not None and config.patch_num > max_patches:
        return (
            f"input {length} in patches of {params['patch_len']} (stride {params['stride']}) makes {config.patch_num} "
            f"patches per channel, over the look-back search's {max_patches}"
        )
    return None


def _check_patience(task: str, patience) -> None:
    if patience is None:
        return
    if task != "forecast":
        raise ValueError(
            f"patience={patience!r}: {task} trials already stop after the paper's {PAPER_PATIENCE} epochs without a "
            "lower validation loss; set another with fixed={'patience': N}."
        )
    if not is_positive_int(patience):
        raise ValueError(f"patience must be a positive whole number of epochs, got {patience!r}.")


def _stopping(params: dict, patience: Optional[int]) -> list:
    """Early stopping of a forecasting trial after ``patience`` epochs past the warm-up (none without)."""
    return [] if patience is None else [early_stopping(patience, True, params["n_epochs"])]


def _fit_trial(task: str, data: SearchData, params: dict, callbacks: list, seed, accelerator, devices, extra):
    trainer_kwargs = {"callbacks": callbacks, **({"devices": devices} if devices is not None else {})}
    if task == "forecast":
        from .forecasting import XCTFormerModel
        from .training import trainer_kwargs as quiet_trainer

        model = XCTFormerModel.from_params(
            output_chunk_length=data.out_len,
            random_state=seed,
            pl_trainer_kwargs=quiet_trainer({"accelerator": accelerator}, trainer_kwargs),
            **params,
            **extra,
        )
        with quiet_lightning():
            model.fit(data.train, val_series=data.val_for(params["input_chunk_length"]), verbose=False)
        return
    from .reconstruction import ReconstructionEngine

    where = dict(accelerator=accelerator, pl_trainer_kwargs=trainer_kwargs, validation_fraction=VALIDATION_FRACTION)
    engine = ReconstructionEngine(**params, random_state=seed, **where, **extra)
    engine.fit(data.train, val_values=data.val)


@contextlib.contextmanager
def _optuna_quiet(optuna, verbose: bool):
    """Optuna logs every trial at INFO; the Python API is quiet unless asked."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.INFO if verbose else optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def default_study_name(task: str, dataset: Optional[str], output_chunk_length=None, mask_rate=None) -> str:
    name = f"xctformer-{task}-{dataset or 'data'}"
    if task == "forecast" and output_chunk_length:
        name += f"-H{output_chunk_length}"
    if task == "impute" and mask_rate:
        name += f"-mask{mask_rate}"
    return name


def search(
    series,
    task: str = "forecast",
    *,
    val_series=None,
    dataset: Optional[str] = None,
    space: Optional[dict[str, dict]] = None,
    fixed: Optional[dict[str, Any]] = None,
    n_trials: Optional[int] = 20,
    timeout: Optional[float] = None,
    output_chunk_length: int = 96,
    look_backs: Optional[Sequence[int]] = None,
    mask_rate: float = 0.25,
    storage: Union[str, Any, None] = None,
    study_name: Optional[str] = None,
    sampler=None,
    pruner=None,
    random_state: int = PAPER_SEED,
    patience: Optional[int] = None,
    accelerator: str = "auto",
    devices: Any = None,
    show_progress_bar: bool = False,
    verbose: bool = False,
):
    """Search XCTFormer's hyperparameters on ``series`` with Optuna; returns the ``optuna.Study``.

    Parameters
    ----------
    series
        Forecasting: a Darts ``TimeSeries`` (or a list of them), standardised as the model will see
        it. Imputation / anomaly detection: a (time, channels) array or ``TimeSeries`` (NaN =
        missing).
    task
        ``"forecast"``, ``"impute"`` or ``"detect"``.
    val_series
        Validation data of the same kind; the trials' value is its lowest epoch MSE. Default: the
        last 20 % of ``series`` (not trained on).
    dataset
        A benchmark dataset name: picks the paper's search-space group and the preset's fixed
        settings (batch size, epochs). Default: none (the paper's usual settings).
    space
        The search space (see :func:`search_space`, which gives the default).
    fixed
        Settings every trial uses, e.g. ``{"n_epochs": 3, "train_stride": 10}``; they win over the
        preset's and leave the search space.
    n_trials, timeout
        When to stop: after ``n_trials`` finished (complete or pruned) trials of this study in all
        (every process working on it counts, through ``optuna.study.MaxTrialsCallback``; a failed
        or interrupted trial does not) or after ``timeout`` seconds.
    output_chunk_length
        Forecasting horizon of the trials. Default: ``96``.
    look_backs
        Forecasting: search the input length among these (e.g. ``LOOK_BACKS``: 96, 192, 336, 512,
        720) and the patch length with it (:func:`~xct_estimators.search_spaces.look_back_space`).
        ``val_series``, if given, then holds the longest look-back before its first target; each
        trial drops the steps it does not read, so all are scored on the same targets. Default: the
        paper's input length.
    mask_rate
        Imputation: share of points hidden in training and validation windows. Default: ``0.25``.
    storage
        An Optuna storage, an RDB URL (``"sqlite:///study.db"``, ``"postgresql://..."``) or the path
        of an Optuna journal file (see :func:`open_storage`). Default: in memory (this process only).
    study_name
        The study to create or continue (``load_if_exists``). Default: from task, dataset,
        horizon / mask rate. Continuing a study with other fixed settings (``fixed``, the space,
        the dataset or horizon) raises ``ValueError`` naming the difference.
    sampler, pruner
        Optuna sampler and pruner. Default: TPE seeded per trial from ``random_state`` and the
        trial's number (:func:`trial_seeded_tpe`: parallel workers and continued studies draw new
        parameters), and ``MedianPruner(n_warmup_steps=2)``.
    random_state
        Seed of every trial's training (default: the paper's first seed) and of the default sampler.
    patience
        Forecasting: end a trial's training after this many epochs without a lower validation MSE,
        counted once the one-cycle warm-up is over (the rate falls after it, and the loss with it).
        Shorter trials; a trial whose loss would have fallen again later scores worse than it
        would with all epochs. Default: all epochs (reconstruction trials stop after the paper's 6).
    accelerator, devices
        Where trials train (Lightning's names).
    show_progress_bar, verbose
        Optuna's progress bar and its per-trial log lines. Default: quiet.

    Returns
    -------
    optuna.Study
        ``best_params(study)`` gives the best trial's keyword arguments.
    """
    optuna = _optuna()
    check_task(task)
    _check_patience(task, patience)
    params = {**base_params(task, dataset), **(fixed or {})}
    extra = {k: v for k, v in _reconstruction_training(task, mask_rate).items() if k not in params}
    space = check_space(space if space is not None else search_space(task, dataset, n_channels_of(task, series)))
    if look_backs:
        space.update(look_back_space(task, look_backs))
    space = {name: spec for name, spec in space.items() if name not in (fixed or {})}  # fixed wins
    look_back = longest_look_back(space, params.get("input_chunk_length", 0))
    data = SearchData(task, series, val_series, params, output_chunk_length, look_back)
    context = {"task": task, "dataset": dataset, "data_sha256": data.fingerprint(), "fixed": params, "extra": extra}
    context["space"] = space
    context["patience"] = patience
    if task == "forecast":
        context["output_chunk_length"] = output_chunk_length
    with _optuna_quiet(optuna, verbose):
        study = optuna.create_study(
            storage=open_storage(storage),
            study_name=study_name or default_study_name(task, dataset, output_chunk_length, mask_rate),
            load_if_exists=True,
            direction="minimize",
            sampler=sampler or trial_seeded_tpe(random_state),
            pruner=pruner or optuna.pruners.MedianPruner(n_warmup_steps=2),
        )
    _check_same_study(study, context)
    for key, value in context.items():
        study.set_user_attr(key, value)

    running: list[int] = []  # the trial this process is running
    training = dict(seed=random_state, accelerator=accelerator, devices=devices, extra=extra)
    max_patches = LOOK_BACK_MAX_PATCHES if look_backs else None  # a look-back search's longer inputs, not more tokens
    objective = _objective(optuna, task, data, params, space, running, training, max_patches, patience)
    _optimize(optuna, study, objective, running, n_trials, timeout, show_progress_bar, verbose)
    return study


def _objective(
    optuna,
    task: str,
    data: SearchData,
    params: dict,
    space: dict,
    running: list[int],
    training: dict,
    max_patches: Optional[int] = None,
    patience: Optional[int] = None,
):
    """A trial's value: the lowest validation MSE of the network its suggested parameters train."""

    def objective(trial) -> float:
        running[:] = [trial.number]
        trial_params = derived_params(params, suggest(trial, space, params, max_patches))
        trial.set_user_attr("params", trial_params)
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        problem = _feasibility(task, trial_params, data.n_channels, data.out_len, max_patches)
        if problem is not None:
            trial.set_user_attr("infeasible", problem)
            raise optuna.TrialPruned(f"infeasible: {problem}")
        callback = PruningCallback(trial)
        _fit_trial(task, data, trial_params, [callback, *_stopping(trial_params, patience)], **training)
        if not math.isfinite(callback.best_score):
            raise optuna.TrialPruned("no finite validation loss: the trial diverged")
        return callback.best_score

    return objective


def _reconstruction_training(task: str, mask_rate: float) -> dict[str, Any]:
    """The paper's training settings of a reconstruction task that no trial searches."""
    if task == "forecast":
        return {}
    masking = {"mask_rate": mask_rate} if task == "impute" else {}
    return {**masking, "fill": "zero", "patience": PAPER_PATIENCE, "patience_after_warmup": False}


def _optimize(optuna, study, objective, running: list[int], n_trials, timeout, show_progress_bar, verbose) -> None:
    """Run the study's remaining trials; a trial cut short by an error or a signal is marked failed."""
    callbacks, remaining = [], None
    if n_trials is not None:
        # n_trials counts the study's finished trials from every process; a continued study runs only
        # the rest, and a failed or interrupted trial does not use up the budget.
        finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        remaining = n_trials - len(study.get_trials(deepcopy=False, states=finished))
        callbacks.append(optuna.study.MaxTrialsCallback(n_trials, states=finished))
    if remaining is None or remaining > 0:
        with _optuna_quiet(optuna, verbose):
            try:
                study.optimize(
                    objective,
                    n_trials=remaining,
                    timeout=timeout,
                    callbacks=callbacks,
                    show_progress_bar=show_progress_bar,
                    gc_after_trial=True,
                )
            except BaseException:
                _fail_if_running(optuna, study, running)
                raise


#: Study settings added after the first studies were stored, with the value those studies ran with.
_ADDED_LATER = {"patience": None}


def _check_same_study(study, context: dict[str, Any]) -> None:
    """A study continued (or joined by another worker) must search under the same fixed settings:
    trials trained with other epochs, network or data would be compared as if they were alike."""
    stored = study.user_attrs
    if not stored:
        return
    stored = {**_ADDED_LATER, **stored}
    now = json.loads(json.dumps(context, default=str))
    differences = [
        f"{key}: {json.dumps(stored.get(key), default=str)} in the study, {json.dumps(value)} now"
        for key, value in now.items()
        if key in stored and json.loads(json.dumps(stored[key], default=str)) != value  # (older studies lack new keys)
    ]
    if differences:
        raise ValueError(
            f"Study {study.study_name!r} was started with other settings ({'; '.join(differences)}). Give another "
            "study name, or the settings it was started with."
        )


def _fail_if_running(optuna, study, numbers: list[int]) -> None:
    """Optuna marks a trial failed on an ``Exception`` or ``KeyboardInterrupt`` only; any other stop
    (a signal turned into a ``BaseException``) would leave it RUNNING for ever, counted against
    ``n_trials`` by every worker."""
    for number in numbers:
        trial = study.get_trials(deepcopy=False)[number]
        if trial.state == optuna.trial.TrialState.RUNNING:
            study.tell(number, state=optuna.trial.TrialState.FAIL)


def open_storage(storage):
    """An Optuna storage from ``storage``: a storage object (returned as is), an RDB URL
    (``"sqlite:///study.db"``, ``"postgresql://user@host/db"``; Optuna opens it), or the path of
    an Optuna journal file (created if missing; several processes on one machine or a shared
    file system may use it at once)."""
    if storage is None or not isinstance(storage, (str, Path)):
        return storage
    optuna = _optuna()
    if "://" in str(storage):
        try:
            return optuna.storages.RDBStorage(str(storage))
        except Exception as error:  # SQLAlchemy's URL, driver and connection errors
            raise ValueError(
                f"Optuna cannot open the storage {str(storage)!r} ({type(error).__name__}: {error}). Give an RDB "
                "URL such as sqlite:///study.db or postgresql://user@host/db, or the path of a journal file."
            ) from error
    from optuna.storages.journal import JournalFileBackend

    path = Path(storage)
    if path.is_dir():
        raise ValueError(
            f"The storage {path} is a folder: give the path of a journal file, e.g. {path / 'optuna.journal'}."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def best_params(study) -> dict[str, Any]:
    """The best trial's keyword arguments, ready for ``XCTFormerModel.from_params(output_chunk_length=...,
    **params)`` (forecasting), the sktime classes, or ``ReconstructionEngine(**params)``.

    Raises ``ValueError`` when the study has no completed trial.
    """
    optuna = _optuna()
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise ValueError(f"Study {study.study_name!r} has no completed trial yet: run more trials (or fewer pruned).")
    return dict(study.best_trial.user_attrs["params"])


def summary(study) -> dict[str, Any]:
    """Counts per trial state, every trial (:func:`_trial_row`), the best value and parameters, and the
    study's settings (JSON-ready)."""
    optuna = _optuna()
    trials = study.get_trials(deepcopy=False)
    counts = {state.name.lower(): sum(t.state == state for t in trials) for state in optuna.trial.TrialState}
    result: dict[str, Any] = {"study_name": study.study_name, "trials": counts, **study.user_attrs}
    result["trial_rows"] = [_trial_row(t) for t in trials]
    try:
        result.update(best_value=study.best_value, best_trial=study.best_trial.number, best_params=best_params(study))
    except ValueError:
        result["best_params"] = None
    return result


def _trial_row(trial) -> dict[str, Any]:
    """One trial as a record row: its number, state, searched values, validation MSE after each
    epoch it reached (a pruned trial's stop early), its value (complete trials), why it was
    infeasible (if so) and its seconds."""
    took = None
    if trial.datetime_start is not None and trial.datetime_complete is not None:
        took = round((trial.datetime_complete - trial.datetime_start).total_seconds(), 1)
    return {
        "number": trial.number,
        "state": trial.state.name.lower(),
        "searched": dict(trial.params),
        "val_mse_by_epoch": [trial.intermediate_values[step] for step in sorted(trial.intermediate_values)],
        "value": trial.value,
        "infeasible": trial.user_attrs.get("infeasible"),
        "seconds": took,
    }
