"""The models a benchmark run compares: XCTFormer and Darts baselines, with their settings.

Every model gets the same data, input length, horizon, epochs, batch size, seed, MSE loss and
model selection (the weights of the best-validation epoch are kept). XCTFormer uses the paper's
preset for the dataset. The Darts baselines use the settings in :data:`BASELINE_SETTINGS` (the
Time-Series-Library defaults where Darts has the same knob). ``patchtst``, ``itransformer``,
``timemixer`` (and ``nf_tsmixer``/``nf_tide``) run neuralforecast's implementations through
Darts' ``NeuralForecastModel``: install them with ``pip install 'xct-estimators[baselines]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import torch

from ..nn.config import ABLATIONS
from ..nn.presets import get_preset

PAPER_BATCH_SIZE = 32

#: model name -> (Darts class name, keyword arguments). Learning rates are Adam's.
BASELINE_SETTINGS: dict[str, tuple[str, dict[str, Any]]] = {
    # shared_weights=True is the paper's DLinear/NLinear (one linear map per channel, shared by all
    # channels); Darts' default (False) is one linear map over all channels and time steps.
    "dlinear": ("DLinearModel", {"kernel_size": 25, "shared_weights": True, "lr": 1e-3}),
    "nlinear": ("NLinearModel", {"normalize": True, "shared_weights": True, "lr": 1e-3}),
    "dlinear_mixing": ("DLinearModel", {"kernel_size": 25, "shared_weights": False, "lr": 1e-3}),
    "tide": (
        "TiDEModel",
        {
            "num_encoder_layers": 2,
            "num_decoder_layers": 2,
            "decoder_output_dim": 8,
            "hidden_size": 256,
            "temporal_decoder_hidden": 64,
            "dropout": 0.3,
            "use_reversible_instance_norm": True,
            "lr": 1e-3,
        },
    ),
    "tsmixer": (
        "TSMixerModel",
        {
            "hidden_size": 64,
            "ff_size": 64,
            "num_blocks": 2,
            "dropout": 0.1,
            "use_reversible_instance_norm": True,
            "lr": 1e-3,
        },
    ),
}

#: neuralforecast models hosted by Darts' NeuralForecastModel: name -> (neuralforecast class, model_kwargs, lr).
NEURALFORECAST_SETTINGS: dict[str, tuple[str, dict[str, Any], float]] = {
    "patchtst": (
        "PatchTST",
        {
            "patch_len": 16,
            "stride": 8,
            "hidden_size": 128,
            "n_heads": 16,
            "encoder_layers": 3,
            "linear_hidden_size": 256,
            "dropout": 0.2,
            "revin": True,
        },
        1e-4,
    ),
    "itransformer": (
        "iTransformer",
        {"hidden_size": 512, "n_heads": 8, "e_layers": 2, "d_ff": 512, "dropout": 0.1},
        1e-4,
    ),
    "timemixer": (
        "TimeMixer",
        {
            "d_model": 16,
            "d_ff": 32,
            "e_layers": 2,
            "down_sampling_layers": 3,
            "down_sampling_window": 2,
            "dropout": 0.1,
        },
        1e-2,
    ),
    "nf_tsmixer": ("TSMixer", {"n_block": 2, "ff_dim": 64, "dropout": 0.1, "revin": True}, 1e-3),
    "nf_tide": ("TiDE", {"hidden_size": 256, "decoder_output_dim": 8, "dropout": 0.3}, 1e-3),
}

#: The paper's ablations (its ablation table, plus the clipped-negative-weights variant) as models:
#: the dataset's preset with one switch changed (``xct_estimators.nn.config.ABLATIONS``).
ABLATION_MODELS = {
    "xctformer_nomask": "no_mask",
    "xctformer_softmax": "softmax",
    "xctformer_vanilla": "vanilla",
    "xctformer_time": "time",
    "xctformer_channel": "channel",
    "xctformer_clipped": "clipped",
}
MODELS = ("xctformer", *ABLATION_MODELS, *BASELINE_SETTINGS, *NEURALFORECAST_SETTINGS)
DEFAULT_MODELS = ("xctformer", "dlinear", "nlinear", "tide", "tsmixer")

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


def trainer_kwargs(accelerator: str = "auto", devices="auto", progress: bool = True, callbacks=()) -> dict:
    return {
        "accelerator": accelerator,
        "devices": devices,
        "enable_progress_bar": progress,
        "enable_model_summary": False,
        "logger": False,
        "enable_checkpointing": False,
        "callbacks": list(callbacks),
    }


def build_model(
    name: str,
    dataset: str,
    horizon: int,
    seq_len: int = 96,
    epochs: Optional[int] = None,
    seed: int = 0,
    accelerator: str = "auto",
    devices="auto",
    progress: bool = True,
    work_dir: Optional[Path] = None,
):
    """A fresh, unfitted Darts model ``name`` for one (dataset, horizon) run."""
    from ..forecasting import KeepBestValidationWeights, XCTFormerModel

    common: dict[str, Any] = {"random_state": seed, "model_name": f"{name}_{dataset}_{horizon}_{seed}"}
    if work_dir is not None:
        common["work_dir"] = str(work_dir)
    if name == "xctformer" or name in ABLATION_MODELS:
        preset = get_preset(preset_name(dataset), "forecast")
        switches = ABLATIONS[ABLATION_MODELS[name]] if name in ABLATION_MODELS else {}
        return XCTFormerModel.from_preset(
            preset.dataset,
            output_chunk_length=horizon,
            input_chunk_length=seq_len,
            n_epochs=epochs or preset.epochs,
            pl_trainer_kwargs=trainer_kwargs(accelerator, devices, progress),
            **switches,
            **common,
        )
    shared = {
        "input_chunk_length": seq_len,
        "output_chunk_length": horizon,
        "batch_size": PAPER_BATCH_SIZE,
        "n_epochs": epochs or 10,
        "loss_fn": torch.nn.MSELoss(),
        "pl_trainer_kwargs": trainer_kwargs(accelerator, devices, progress, [KeepBestValidationWeights()]),
        **common,
    }
    if name in BASELINE_SETTINGS:
        import darts.models as darts_models

        class_name, settings = BASELINE_SETTINGS[name]
        settings = dict(settings)
        lr = settings.pop("lr")
        return getattr(darts_models, class_name)(**shared, **settings, optimizer_kwargs={"lr": lr})
    if name in NEURALFORECAST_SETTINGS:
        try:
            import neuralforecast  # noqa: F401
            from darts.models import NeuralForecastModel
        except ImportError as error:
            raise ImportError(
                f"Model {name!r} runs neuralforecast's implementation inside Darts; install it with "
                "pip install 'xct-estimators[baselines]'."
            ) from error
        nf_class, model_kwargs, lr = NEURALFORECAST_SETTINGS[name]
        return NeuralForecastModel(
            model=nf_class, model_kwargs=dict(model_kwargs), **shared, optimizer_kwargs={"lr": lr}
        )
    raise ValueError(f"Unknown model {name!r}; choose from {', '.join(MODELS)}.")
