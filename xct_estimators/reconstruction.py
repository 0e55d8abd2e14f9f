"""
Reconstruction with XCTFormer: imputation and anomaly scoring
-------------------------------------------------------------

:class:`ReconstructionEngine` trains the :class:`~xct_estimators.nn.XCTFormerNet` backbone with a
reconstruction head (``out_len = window_length``) on windows of a series, through Lightning, and
reconstructs series of any length with overlapping sliding windows. The sktime imputer and
detector and the Darts scorer (:class:`~xct_estimators.scorer.XCTFormerScorer`) are thin
adapters on it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from typing import Any, Optional

import numpy as np
import pytorch_lightning as pl
import torch

from ._checks import NotFittedError, check_value_range, is_positive_int, plain_number, positive_int
from ._devices import is_distributed
from ._quiet import quiet_lightning
from .nn import DEFAULT_MAX_ATTENTION_BYTES, XCTFormerConfig, get_preset, memory
from .nn.compiling import COMPILE, CompileOption, compile_options
from .nn.hyperparameters import RECONSTRUCTION_DEFAULTS, Hyperparameter, documented, network_kwargs
from .reconstruction_inference import ReconstructionInference
from .reconstruction_module import _ReconstructionModule  # pickled engines name it here too
from .training import trainer_kwargs, training_loader, validation_callbacks, validation_loader

#: Defaults of the engine and the estimators on it; measured by benchmarks/imputer_defaults.py.
DEFAULT_MAX_EPOCHS = 50
DEFAULT_PATIENCE = 3
DEFAULT_VALIDATION_FRACTION = 0.1
DEFAULT_LEARNING_RATE = 5e-3
DEFAULT_FILL = "linear"


def preset_params(dataset: str, task: str) -> dict[str, Any]:
    """Constructor arguments for the paper's imputation (``task="impute"``) or anomaly row."""
    return get_preset(dataset, task).estimator_params("window_length")


FILLS = ("zero", "linear")


_H = Hyperparameter
# fmt: off
#: The training and inference settings of the engine, documented once for it and its estimators.
TRAINING_PARAMETERS = {h.name: h for h in (
    _H("n_epochs", DEFAULT_MAX_EPOCHS, "int", "Maximum number of training epochs; early stopping on the validation "
       "loss ends training sooner (see ``patience``)."),
    _H("batch_size", 32, "int", "Training batch size."),
    _H("learning_rate", DEFAULT_LEARNING_RATE, "float", "Peak learning rate of Adam's per-batch one-cycle schedule "
       "(``pct_start=0.4``, spread over ``n_epochs``); Adam runs torch's fused implementation where the device has "
       "one."),
    _H("patience", DEFAULT_PATIENCE, "int or None", "Epochs without a lower validation loss before training stops "
       "(the paper's code: 6); the best validation epoch's weights are restored at the end. ``None`` trains all "
       "``n_epochs`` (the best epoch's weights are still restored when there is validation data)."),
    _H("patience_after_warmup", True, "bool", "Count ``patience`` only once the one-cycle learning rate has peaked "
       "(after 40 % of ``n_epochs``): the validation loss often rises while the rate warms up. ``False``: count from "
       "the first epoch, as the paper's code does (``xct-bench`` uses this)."),
    _H("validation_fraction", DEFAULT_VALIDATION_FRACTION, "float", "Share of the training data, taken from its end, "
       "held out as validation windows (never trained on) when ``fit`` gets no validation data; enlarged to one "
       "window when shorter. ``0``: no validation, no early stopping, the last epoch's weights."),
    _H("mask_rate", None, "float or None", "Imputation mode: the share of observed points hidden at random in each "
       "training window; the loss is the MSE on those points, and validation windows get fixed, seeded masks of the "
       "same rate. ``None``: anomaly mode, plain reconstruction MSE."),
    _H("fill", DEFAULT_FILL, '{"linear", "zero"}', 'What the network sees at hidden points: ``"linear"`` (per-window '
       'linear interpolation from the observed points) or ``"zero"`` (the paper: zero after instance normalisation, '
       "with the mask passed to the network). The loss is on the hidden points either way."),
    _H("hidden_passes", None, "int or None", "Anomaly scores: ``None`` judges each point by reconstructions that "
       "see it (the paper); an integer ``K >= 2`` by its error when hidden, in ``K`` passes that each hide every "
       "``K``-th step of a channel (:meth:`ReconstructionEngine.score`): a reconstruction cannot copy an anomaly it "
       "does not see. ``K`` times the scoring work; give ``mask_rate`` too, so that the network learns to fill."),
    _H("window_stride", None, "int or None", "Step between inference windows; overlapping reconstructions are "
       "averaged (anomaly scores: each step where two patches see it, not in a window's first ``stride`` steps). "
       "``None``: ``(window_length - stride) // 2``, two such windows per step."),
    _H("train_stride", 1, "int", "Step between training (and validation) windows."),
    _H("random_state", None, "int or None", "Seed for weights, training order and masks."),
    _H("accelerator", "auto", "str", 'Lightning accelerator: ``"auto"``, ``"cpu"`` or ``"gpu"``.'),
    _H("devices", "auto", "int, str or list", "Lightning devices; several train data-parallel (``ddp_spawn``) and "
       "reconstruct on one."),
    _H("precision", "32", "str", 'Lightning precision: ``"32"``, or ``"bf16-mixed"`` / ``"16-mixed"`` for mixed '
       "precision (sums in float32)."),
    _H("progress_bar", False, "bool", "Show Lightning's progress bar while training."),
    _H("inference_device", None, "str or None", 'Where reconstruction and scoring run (e.g. ``"cpu"``, '
       '``"cuda:1"``). ``None``: the device training ran on, as Lightning chose it; a saved engine loaded where that '
       "device is missing falls back to the CPU with a warning."),
    _H("pl_trainer_kwargs", None, "dict or None", 'More keyword arguments for the Lightning ``Trainer`` (e.g. '
       '``{"strategy": "ddp"}`` or ``{"gradient_clip_val": 1.0}``); they win over ``accelerator``, ``devices`` and '
       "``precision``, and their ``callbacks`` are added to the engine's own (best weights, early stopping)."),
    COMPILE,
)}
# fmt: on


@documented("darts", more=TRAINING_PARAMETERS)
@dataclass(eq=False)
class ReconstructionEngine(ReconstructionInference):
    """Train XCTFormer to reconstruct windows of a series; reconstruct any length.

    Parameters
    ----------
    window_length
        Length of the windows the network sees (the paper: 1024 for imputation, 100 for anomaly
        detection). Training series must be at least this long; shorter series given after
        ``fit`` are reconstructed after the end of the training series (see :meth:`reconstruct`).
    {parameters}
    """

    window_length: int = 96
    patch_len: int = 16
    stride: int = 8
    d_model: int = 32
    n_heads: int = 2
    d_ff: int = 64
    e_layers: int = 2
    dropout: float = 0.1
    fc_dropout: float = 0.05
    attn_dropout: float = RECONSTRUCTION_DEFAULTS["attn_dropout"]
    decop_k: Optional[int] = None
    use_mask: bool = True
    activation: str = "absact"
    mixing: str = "full"
    n_epochs: int = DEFAULT_MAX_EPOCHS
    batch_size: int = 32
    learning_rate: float = DEFAULT_LEARNING_RATE
    patience: Optional[int] = DEFAULT_PATIENCE
    validation_fraction: float = DEFAULT_VALIDATION_FRACTION
    patience_after_warmup: bool = True
    mask_rate: Optional[float] = None
    fill: str = DEFAULT_FILL
    window_stride: Optional[int] = None
    train_stride: int = 1
    random_state: Optional[int] = None
    accelerator: str = "auto"
    devices: Any = "auto"
    precision: str = "32"
    progress_bar: bool = False
    max_attention_bytes: Optional[int] = DEFAULT_MAX_ATTENTION_BYTES
    fused_attention: Optional[bool] = None
    inference_device: Optional[str] = None
    pl_trainer_kwargs: Optional[dict[str, Any]] = None
    compile: CompileOption = False

    def __post_init__(self) -> None:
        for field in fields(self):
            setattr(self, field.name, plain_number(getattr(self, field.name)))
        self._check_settings()
        if self.inference_device is not None:
            try:
                self.inference_device = str(torch.device(self.inference_device))
            except RuntimeError:
                raise ValueError(
                    f"inference_device={self.inference_device!r} is not a torch device: use e.g. 'cpu', 'cuda', "
                    "'cuda:1', 'mps'."
                ) from None
        if self.window_stride is None:
            self.window_stride = max((self.window_length - self.stride) // 2, 1)
        self.pl_trainer_kwargs = dict(self.pl_trainer_kwargs or {})
        self.trained_on: Optional[str] = None  # the device Lightning trained on (rank 0's)
        self.module: Optional[_ReconstructionModule] = None
        self.n_channels: Optional[int] = None
        self.epochs_trained: Optional[int] = None
        self.best_epoch: Optional[int] = None
        self.best_val_loss: Optional[float] = None
        self.val_losses: list[float] = []  # one per epoch, when there is validation data
        self.context: Optional[np.ndarray] = None  # the training series' last window_length - 1 steps
        self._config(n_channels=1)  # the architecture checked before any data arrives

    def _check_settings(self) -> None:
        compile_options(self.compile)  # checked now, applied when the network exists
        for name in ("n_epochs", "batch_size", "train_stride"):
            positive_int(getattr(self, name), name)
        mask_rate, stride, length = self.mask_rate, self.window_stride, self.window_length
        if mask_rate is not None and not 0.0 < mask_rate < 1.0:
            raise ValueError(f"mask_rate must be in (0, 1), got {mask_rate!r}.")
        if self.fill not in FILLS:
            raise ValueError(f"fill must be one of {FILLS}, got {self.fill!r}.")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise ValueError(f"validation_fraction must be in [0, 1), got {self.validation_fraction!r}.")
        if self.patience is not None and not is_positive_int(self.patience):
            raise ValueError(f"patience must be a positive integer or None, got {self.patience!r}.")
        if stride is not None and not is_positive_int(stride):
            raise ValueError(
                f"window_stride must be None ((window_length - stride) // 2) or a positive integer, got {stride!r}."
            )
        if stride is not None and stride > length:
            raise ValueError(
                f"window_stride={stride} exceeds window_length={length}: points between "
                "windows would never be reconstructed. Use window_stride <= window_length."
            )

    @property
    def architecture(self) -> dict[str, Any]:
        """The network hyperparameters, by name."""
        return network_kwargs(self)

    def _config(self, n_channels: int) -> XCTFormerConfig:
        return XCTFormerConfig(self.window_length, n_channels, self.window_length, **self.architecture)

    @property
    def network_(self):
        """The trained :class:`~xct_estimators.nn.XCTFormerNet` (after ``fit``)."""
        if self.module is None:
            raise NotFittedError("The engine has not been fitted yet: call fit() first.")
        return self.module.net

    @property
    def channel_names_(self) -> list[str]:
        """``channel 0``, ``channel 1``, ...: the engine sees arrays (its estimators know the names)."""
        return [f"channel {i}" for i in range(self.network_.config.n_channels)]

    def __setstate__(self, state: dict) -> None:
        # Engines pickled before the hyperparameters became attributes kept them in one dict;
        # those pickled before the compile and attention switches ran eagerly, in float32, fused.
        earlier = {"compile": False, "precision": "32", "fused_attention": True}
        for name, value in {**earlier, **state.pop("architecture", {}), **state}.items():
            setattr(self, name, value)

    # -- checks ------------------------------------------------------------------------
    def check_values(self, values: np.ndarray, fitting: bool) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)  # float32 only after the range check
        if values.ndim == 1:
            values = values[:, None]
        if values.ndim != 2:
            raise ValueError(f"Expected a (time, channels) array, got shape {values.shape}.")
        if np.isinf(values).any():
            raise ValueError(
                f"The series contains {int(np.isinf(values).sum())} infinite value(s): replace them "
                "(e.g. by NaN, which is treated as missing) before fitting or transforming."
            )
        check_value_range(values, list(range(values.shape[1])), "The series")
        values = values.astype(np.float32)
        if len(values) < self.window_length and (fitting or self.context is None):
            raise ValueError(
                f"The series has {len(values)} time steps, shorter than window_length="
                f"{self.window_length}: use a longer series or a smaller window_length."
            )
        if not fitting and values.shape[1] != self.n_channels:
            raise ValueError(
                f"The series has {values.shape[1]} channels, but the model was fitted on "
                f"{self.n_channels}: pass the same columns as in fit."
            )
        empty = np.isnan(values).all(axis=0)
        if empty.any():
            raise ValueError(
                f"Channel(s) {np.flatnonzero(empty).tolist()} have no observed value: drop them or "
                "provide at least some observations."
            )
        return values

    def split_validation(self, values: np.ndarray) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """Training part and held-out validation tail (``None`` when there is none)."""
        if not self.validation_fraction:
            return values, None
        n_val = max(int(np.ceil(self.validation_fraction * len(values))), self.window_length)
        if len(values) - n_val < self.window_length:
            warnings.warn(
                f"The series has {len(values)} time steps: too short to hold out a validation window "
                f"of {self.window_length} and keep one for training. Training runs all n_epochs="
                f"{self.n_epochs} without early stopping; pass a longer series, val_values, or "
                "validation_fraction=0 to silence this.",
                UserWarning,
                stacklevel=3,
            )
            return values, None
        return values[:-n_val], values[-n_val:]

    # -- training ----------------------------------------------------------------------
    def fit(self, values: np.ndarray, val_values: Optional[np.ndarray] = None) -> ReconstructionEngine:
        """Train on a (time, channels) array; NaN marks missing points (never trained on).

        Validation windows come from ``val_values`` when given, else from the last
        ``validation_fraction`` of ``values`` (then not trained on).
        """
        values = self.check_values(values, fitting=True)
        self.n_channels = values.shape[1]
        self.context = values[len(values) - self.window_length + 1 :].copy()
        if val_values is None:
            values, val_values = self.split_validation(values)
        else:
            val_values = self.check_values(val_values, fitting=False)
        if self.random_state is not None:
            pl.seed_everything(self.random_state, verbose=False)
        config = self._config(self.n_channels)
        config.check_attention_memory(self.batch_size)
        self.module = _ReconstructionModule(config, self.mask_rate, self.learning_rate, self.fill)
        self.module.compile_options = compile_options(self.compile)
        own = dict(accelerator=self.accelerator, devices=self.devices, precision=self.precision)
        own.update(enable_progress_bar=self.progress_bar, max_epochs=self.n_epochs, num_sanity_val_steps=0)
        kwargs = trainer_kwargs(own, self.pl_trainer_kwargs)
        starts, length = self._starts(len(values)), self.window_length
        loader = training_loader(values, starts, length, self.batch_size, self.random_state, is_distributed(kwargs))
        callbacks, val_loader = [], None
        if val_values is not None:
            batch = memory.inference_batch_size(config, self.batch_size)
            val_starts = self._starts(len(val_values))
            val_loader = validation_loader(val_values, val_starts, length, self.mask_rate, self.random_state, batch)
            callbacks = validation_callbacks(self.patience, self.patience_after_warmup, self.n_epochs)
        kwargs["callbacks"] = callbacks + list(self.pl_trainer_kwargs.get("callbacks", []))
        with quiet_lightning():
            trainer = pl.Trainer(**kwargs)
            trainer.fit(self.module, loader, val_loader)
        self._keep_history(str(trainer.strategy.root_device))
        return self

    def _keep_history(self, trained_on: str) -> None:
        self.trained_on = trained_on  # the device Lightning trained on (rank 0's)
        self.epochs_trained = self.module.epochs_done
        self.val_losses = list(self.module.val_losses)
        if self.val_losses:  # the epoch KeepBestValidationWeights restored: the first lowest loss
            self.best_epoch = int(np.argmin(self.val_losses))
            self.best_val_loss = float(self.val_losses[self.best_epoch])

    def _starts(self, n_steps: int) -> np.ndarray:
        return np.arange(0, n_steps - self.window_length + 1, self.train_stride)
