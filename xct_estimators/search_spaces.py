"""The paper's hyperparameter search space (App. B) as plain data, and how a trial's values become
estimator parameters."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

from .nn.hyperparameters import DECOP_CHANNEL_THRESHOLD
from .nn.presets import COMMAND_TASKS as TASKS
from .nn.presets import TASK_SEQ_LEN, get_preset, known_channels

#: Datasets whose forecasting search narrows d_model and tunes dropout (the paper: they overfit).
NARROW_FORECAST_DATASETS = ("ETTh1", "ETTh2")
#: Settings the paper fixes when a dataset has no preset (its most common values).
DEFAULT_TRAINING = {"forecast": (32, 10), "impute": (32, 10), "detect": (128, 10)}  # batch size, epochs

_SHARED_SPACE = {
    "learning_rate": {"choices": [5e-4, 1e-3, 5e-3, 1e-2]},
    "attn_dropout": {"low": 0.1, "high": 0.8, "step": 0.1},
    "n_heads": {"choices": [1, 2, 4]},
    "e_layers": {"low": 1, "high": 3, "step": 1},
}
_DECOP_SPACE = {"decop_k": {"low": 64, "high": 256, "step": 64}}
#: The input lengths a look-back search tries (TSLib's and the LTSF papers' usual set).
LOOK_BACKS = (96, 192, 336, 512, 720)
#: Patch lengths searched with the look-back (stride half of it): a longer look-back can keep its
#: token count, and CRAB's cost in its square, by a longer patch.
LOOK_BACK_PATCH_LENS = range(16, 49, 8)
#: The most patches per channel a look-back search builds (PatchTST/42's: input 336, patch 16,
#: stride 8): a longer input takes a longer patch, not more tokens; other trials are infeasible.
LOOK_BACK_MAX_PATCHES = 42


def search_space(
    task: str,
    dataset: Optional[str] = None,
    n_channels: Optional[int] = None,
    look_backs: Optional[Sequence[int]] = None,
) -> dict[str, dict]:
    """The paper's search space for ``task`` ("forecast", "impute", "detect") and ``dataset``.

    ``dataset`` picks the group (ETTh1/ETTh2 forecasting: d_model 4-64 step 2 with dropout and
    fc_dropout searched; other forecasting and anomaly detection: d_model 8-256 step 8;
    imputation: d_model 32-256 step 32 and patch_len in {16, 64, 128}). DeCoP's k (64-256 step
    64) is searched for ECL and Traffic, or for any data with more than 60 channels
    (``n_channels``). stride = patch_len / 2 and d_ff = 2 d_model are fixed, as in the paper.

    ``look_backs`` (forecasting; e.g. :data:`LOOK_BACKS`) goes beyond the paper, whose input length
    is 96: the input length is searched among them, and the patch length with it among
    :data:`LOOK_BACK_PATCH_LENS` (at most :data:`LOOK_BACK_MAX_PATCHES` patches per channel).
    """
    check_task(task)
    space = {name: dict(spec) for name, spec in _SHARED_SPACE.items()}
    if task == "forecast" and dataset in NARROW_FORECAST_DATASETS:
        space["d_model"] = {"low": 4, "high": 64, "step": 2}
        space["dropout"] = {"low": 0.1, "high": 0.3, "step": 0.05}
        space["fc_dropout"] = {"low": 0.05, "high": 0.3, "step": 0.05}
    elif task == "impute":
        space["d_model"] = {"low": 32, "high": 256, "step": 32}
        space["patch_len"] = {"choices": [16, 64, 128]}
    else:
        space["d_model"] = {"low": 8, "high": 256, "step": 8}
    channels = (n_channels, known_channels(dataset) if dataset else None)
    if task != "detect" and any(c is not None and c > DECOP_CHANNEL_THRESHOLD for c in channels):
        space.update({name: dict(spec) for name, spec in _DECOP_SPACE.items()})
    if look_backs:
        space.update(look_back_space(task, look_backs))
    return space


def look_back_space(task: str, look_backs: Sequence[int]) -> dict[str, dict]:
    """The entries that search the input length among ``look_backs``, and the patch length with it."""
    if task != "forecast":
        raise ValueError(f"A look-back search is for forecasting; {task!r} windows have the paper's fixed length.")
    lengths = sorted({int(length) for length in look_backs})
    if not lengths or lengths[0] < 1:
        usual = ", ".join(map(str, LOOK_BACKS))
        raise ValueError(f"Look-backs must be positive input lengths, e.g. {usual}; got {list(look_backs)}.")
    patch_lens = [p for p in LOOK_BACK_PATCH_LENS if p <= lengths[0]] or [lengths[0]]
    step = LOOK_BACK_PATCH_LENS.step
    too_long = [n for n in lengths if patches(n, max(patch_lens)) > LOOK_BACK_MAX_PATCHES]
    if too_long:
        raise ValueError(
            f"Look-backs {too_long} make more than {LOOK_BACK_MAX_PATCHES} patches per channel even in the longest "
            f"patch the shortest look-back ({lengths[0]}) allows, {max(patch_lens)}: no trial could train them. Search "
            "look-backs closer together (e.g. 96 to 720), or run one search per range."
        )
    patch_len = {"low": patch_lens[0], "high": patch_lens[-1], "step": step}
    return {"input_chunk_length": {"choices": lengths}, "patch_len": patch_len}


def patches(length: int, patch_len: int) -> int:
    """Patches per channel of an input of ``length`` in patches of ``patch_len``, stride half of it."""
    stride = max(patch_len // 2, 1)
    return (length - patch_len) // stride + 2


def longest_look_back(space: dict[str, dict], fixed: int) -> int:
    """The longest input length a trial of ``space`` may read (``fixed`` where it is not searched):
    validation data starts that far before its first target, so every trial scores the same targets."""
    spec = space.get("input_chunk_length")
    if spec is None:
        return fixed
    return int(max(spec["choices"]) if "choices" in spec else spec["high"])


def check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"Unknown task {task!r}; choose from {', '.join(TASKS)}.")


def check_space(space: dict[str, Any]) -> dict[str, dict]:
    """Check a user's search space and return it as plain dicts (see :func:`search_space`)."""
    if not isinstance(space, dict) or not space:
        raise ValueError("A search space is a non-empty dict: name -> {'choices': [...]} or {'low', 'high', 'step'}.")
    checked = {}
    for name, spec in space.items():
        if not isinstance(spec, dict):
            raise ValueError(f"Search space entry {name!r} must be a dict, got {spec!r}.")
        if set(spec) == {"choices"} and isinstance(spec["choices"], (list, tuple)) and spec["choices"]:
            checked[name] = {"choices": list(spec["choices"])}
        elif set(spec) in ({"low", "high"}, {"low", "high", "step"}) and spec["low"] <= spec["high"]:
            checked[name] = dict(spec)
        else:
            raise ValueError(
                f"Search space entry {name!r} must be {{'choices': [non-empty list]}} or "
                f"{{'low': a, 'high': b, 'step': s}} with a <= b, got {spec!r}."
            )
    return checked


def suggest(
    trial, space: dict[str, dict], fixed: Optional[dict[str, Any]] = None, max_patches: Optional[int] = None
) -> dict[str, Any]:
    """One value per entry of ``space``, drawn through ``trial``.

    A whole-number range is narrowed to the values that can train with those drawn before it (or
    ``fixed``): ``d_model`` to multiples of ``n_heads``, and (with ``max_patches``) ``patch_len``
    to lengths that cut the input into at most that many patches, stride half of it. Names stay
    the same (Optuna lets a range change from trial to trial, not a list of choices), so samplers
    and Optuna's analysis see one parameter.
    """
    values: dict[str, Any] = {}
    known = dict(fixed or {})
    if "stride" in space:  # patches() assumes the coupled stride
        max_patches = None
    for name in sorted(space, key=lambda name: name in _NARROWED):  # what a narrowing reads comes first
        spec = space[name]
        if "choices" in spec:
            values[name] = trial.suggest_categorical(name, spec["choices"])
        elif all(isinstance(spec.get(key, 1), int) for key in ("low", "high", "step")):
            low, high, step = _trainable_range(name, spec, known, max_patches)
            values[name] = trial.suggest_int(name, low, high, step=step)
        else:
            value = trial.suggest_float(name, spec["low"], spec["high"], step=spec.get("step"))
            values[name] = round(value, 10)  # 0.30000000000000004 -> 0.3
        known[name] = values[name]
    return values


#: Ranges :func:`suggest` narrows by values drawn before them.
_NARROWED = ("d_model", "patch_len")


def _trainable_range(name: str, spec: dict, known: dict[str, Any], max_patches: Optional[int]) -> tuple[int, int, int]:
    """(low, high, step) of the values of a whole-number range that can train with the ``known``
    values: all of it when nothing narrows it, or when no value could (the trial is then refused
    as infeasible, with the reason)."""
    low, high, step = spec["low"], spec["high"], spec.get("step", 1)
    grid = range(low, high + 1, step)
    heads, length = known.get("n_heads"), known.get("input_chunk_length")
    if name == "d_model" and isinstance(heads, int) and heads > 0:
        kept, new_step = [d for d in grid if d % heads == 0], math.lcm(step, heads)
    elif name == "patch_len" and max_patches is not None and isinstance(length, int):
        kept, new_step = [p for p in grid if p <= length and patches(length, p) <= max_patches], step
    else:
        return low, high, step
    if not kept:
        return low, high, step
    return kept[0], kept[0] + (kept[-1] - kept[0]) // new_step * new_step, new_step


def derived_params(params: dict[str, Any], searched: dict[str, Any]) -> dict[str, Any]:
    """``params`` updated with the ``searched`` values and the paper's coupled settings: stride =
    patch_len / 2 and d_ff = 2 d_model, unless those are searched themselves."""
    params = {**params, **searched}
    if "patch_len" in searched and "stride" not in searched:
        params["stride"] = max(searched["patch_len"] // 2, 1)
    if "d_model" in searched and "d_ff" not in searched:
        params["d_ff"] = 2 * searched["d_model"]
    return params


def base_params(task: str, dataset: Optional[str] = None) -> dict[str, Any]:
    """What a trial does not search: the preset's row for ``dataset`` (architecture included,
    replaced by the trial's values) or the paper's usual training settings."""
    check_task(task)
    try:
        preset = get_preset(dataset, TASKS[task]) if dataset else None
    except ValueError:
        preset = None
    if preset is None:
        batch_size, epochs = DEFAULT_TRAINING[task]
        params = {"patch_len": 16, "stride": 8, "batch_size": batch_size, "n_epochs": epochs}
    else:
        params = {**preset.architecture(), "batch_size": preset.batch_size, "n_epochs": preset.epochs}
        params["learning_rate"] = preset.learning_rate
    length = "input_chunk_length" if task == "forecast" else "window_length"
    params[length] = TASK_SEQ_LEN[TASKS[task]]
    return params
