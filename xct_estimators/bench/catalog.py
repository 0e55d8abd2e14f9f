"""What ``xct-bench`` offers, by name: datasets, models, protocols and backends.

Plain data, the one home of these names: the command line builds its options from it without
loading torch, Darts or Lightning, and the runners (``forecast``, ``impute``, ``detect``,
``datasets``, ``backends``) read the same names from here.
"""

from __future__ import annotations

from typing import Any

from .covariate_suite import DATASETS as COVARIATE_SUITE
from .models import ABLATION_DESCRIPTIONS

BACKENDS = ("local", "ray")

# -- datasets ------------------------------------------------------------------------------------
DATA_DIR_ENV = "XCT_DATA_DIR"

#: Split rules: "ett_hour" / "ett_minute" use the ETT borders (12/4/4 months), "ratio" 70/10/20.
ETT_KINDS = {"ETTh1": "ett_hour", "ETTh2": "ett_hour", "ETTm1": "ett_minute", "ETTm2": "ett_minute"}
#: Time-Series-Library CSV layout: name -> path under the data directory.
TSLIB_CSVS = {
    "weather": "weather/weather.csv",
    "exchange_rate": "exchange_rate/exchange_rate.csv",
    "illness": "illness/national_illness.csv",
    "electricity": "electricity/electricity.csv",
    "traffic": "traffic/traffic.csv",
}
ANOMALY_DATASETS = ("MSL", "SMAP")
FORECAST_DATASETS = ("synthetic", "control", "sites", *COVARIATE_SUITE, *ETT_KINDS, *TSLIB_CSVS)
#: ``xct-bench forecast --covariates``: the covariates a run gives the models that take them.
COVARIATE_MODES = {
    "none": "no covariates (a dataset's known-future columns and static covariates are left out)",
    "future": "the dataset's known-future columns (control: plan) as future covariates",
    "calendar": "hour of day and day of week of the series' timestamps as future covariates",
    "static": "the series' static covariates (sites: size)",
    "all": "every covariate the dataset has: its known-future columns and its static covariates (the known-* suite)",
}

# -- forecasting ---------------------------------------------------------------------------------
# fmt: off
#: model name -> (Darts class name, keyword arguments). Learning rates are Adam's.
BASELINE_SETTINGS: dict[str, tuple[str, dict[str, Any]]] = {
    # shared_weights=True is the paper's DLinear/NLinear (one linear map per channel, shared by all
    # channels); Darts' default (False) is one linear map over all channels and time steps.
    "dlinear": ("DLinearModel", {"kernel_size": 25, "shared_weights": True, "lr": 1e-3}),
    "nlinear": ("NLinearModel", {"normalize": True, "shared_weights": True, "lr": 1e-3}),
    "dlinear_mixing": ("DLinearModel", {"kernel_size": 25, "shared_weights": False, "lr": 1e-3}),
    "tide": ("TiDEModel", {"num_encoder_layers": 2, "num_decoder_layers": 2, "decoder_output_dim": 8,
                           "hidden_size": 256, "temporal_decoder_hidden": 64, "dropout": 0.3,
                           "use_reversible_instance_norm": True, "lr": 1e-3}),
    "tsmixer": ("TSMixerModel", {"hidden_size": 64, "ff_size": 64, "num_blocks": 2, "dropout": 0.1,
                                 "use_reversible_instance_norm": True, "lr": 1e-3}),
}

#: neuralforecast models hosted by Darts' NeuralForecastModel: name -> (neuralforecast class, model_kwargs, lr).
NEURALFORECAST_SETTINGS: dict[str, tuple[str, dict[str, Any], float]] = {
    "patchtst": ("PatchTST", {"patch_len": 16, "stride": 8, "hidden_size": 128, "n_heads": 16, "encoder_layers": 3,
                              "linear_hidden_size": 256, "dropout": 0.2, "revin": True}, 1e-4),
    "itransformer": ("iTransformer", {"hidden_size": 512, "n_heads": 8, "e_layers": 2, "d_ff": 512, "dropout": 0.1},
                     1e-4),
    "timemixer": ("TimeMixer", {"d_model": 16, "d_ff": 32, "e_layers": 2, "down_sampling_layers": 3,
                                "down_sampling_window": 2, "dropout": 0.1}, 1e-2),
    "nf_tsmixer": ("TSMixer", {"n_block": 2, "ff_dim": 64, "dropout": 0.1, "revin": True}, 1e-3),
    "nf_tide": ("TiDE", {"hidden_size": 256, "decoder_output_dim": 8, "dropout": 0.3}, 1e-3),
}
# fmt: on
#: The trivial baseline: every channel's last input value, repeated over the horizon (Darts'
#: ``GlobalNaiveSeasonal`` with a one-step input; nothing to train).
NAIVE = "naive"


def _call(name: str, kwargs: dict) -> str:
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in kwargs.items())})"


#: model name -> one line for ``--help``.
#: XCTFormer with the searched recipe (``XCTFormerModel.from_preset(..., recipe="searched")``).
SEARCHED_MODEL = "xctformer_searched"
FORECAST_MODELS = {
    "xctformer": "XCTFormer, the dataset's preset (the paper's rows)",
    SEARCHED_MODEL: "XCTFormer, the searched recipe for the dataset and horizon, its own look-back "
    "(from_preset(recipe='searched'); --seq-len is the others')",
    **{name: f"ablation: the xctformer row with {text}" for name, text in ABLATION_DESCRIPTIONS.items()},
    NAIVE: "every channel's last input value, repeated over the horizon (no training)",
    **{name: f"Darts {_call(cls, kwargs)}" for name, (cls, kwargs) in BASELINE_SETTINGS.items()},
    **{
        name: f"neuralforecast {_call(cls, kwargs)}, lr={lr:g}, in Darts' NeuralForecastModel (extra: baselines)"
        for name, (cls, kwargs, lr) in NEURALFORECAST_SETTINGS.items()
    },
}
MODELS = tuple(FORECAST_MODELS)
DEFAULT_MODELS = ("xctformer", NAIVE, "dlinear", "nlinear", "tide", "tsmixer")

# -- imputation ----------------------------------------------------------------------------------
IMPUTATION_PROTOCOLS = ("tslib", "series")
#: model name -> one line for ``--help``.
IMPUTATION_MODELS = {
    "xctformer": "XCTFormer, the paper's preset and zero fill (the paper's rows)",
    "xctformer_linear": "XCTFormer, the paper's preset, hidden inputs started from linear interpolation",
    "linear": "per window and channel, linear interpolation of the observed points (no training)",
    "sktime_imputer": "sktime's Imputer(method='nearest') per window (no training)",
    "saits": "PyPOTS SAITS, a learned imputation transformer (extra: pip install 'xct-estimators[baselines]')",
    **{name: f"ablation: the xctformer row with {text}" for name, text in ABLATION_DESCRIPTIONS.items()},
}
DEFAULT_IMPUTATION_MODELS = ("xctformer", "linear", "sktime_imputer")

# -- anomaly detection ---------------------------------------------------------------------------
DETECTION_PROTOCOLS = ("tslib", "point", "entity")
#: ``xctformer_masked``: its training hides this share of the points (the imputation benchmark's
#: middle rate), and its scoring hides as much in each of its passes.
MASKED_RATE, HIDDEN_PASSES = 0.25, 4
DETECTION_MODELS = {
    "xctformer": "XCTFormer reconstruction (the paper's preset, or --arch overrides)",
    "xctformer_masked": f"XCTFormer trained to fill hidden points (imputation's way, mask rate {MASKED_RATE}); a "
    f"point's score is its error when hidden, so an anomaly cannot be copied ({HIDDEN_PASSES} passes; --protocol "
    "point or entity)",
    "window_mean": "no training: each window reconstructed by its per-channel mean (a floor)",
    "interpolation": "no training: each point predicted by the mean of its two neighbours in time (the floor of "
    "xctformer_masked; --protocol point or entity)",
    "random": "uniform random scores from the run's seed: what each measure gives to noise",
    "darts_kmeans": "darts.ad.KMeansScorer(k=8, window=10) on the training series",
    "darts_iforest": "darts.ad.PyODScorer(pyod IForest, window=10) (needs pyod: pip install pyod)",
    **{name: f"ablation: xctformer with {text}" for name, text in ABLATION_DESCRIPTIONS.items()},
}
DEFAULT_DETECTION_MODELS = ("xctformer", "window_mean", "random")
