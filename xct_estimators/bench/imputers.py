"""The models of ``xct-bench impute``: XCTFormer and the baselines, behind one small interface.

Every model has ``fit(train, val)``, ``impute_windows(x, visible)`` (the ``tslib`` protocol) and
``impute_series(masked)`` (the ``series`` protocol), and ``settings`` (stored in each record).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from ..nn.fill import linear_fill
from .imputation import series_by_windows

#: model name -> one line for ``--help``.
IMPUTATION_MODELS = {
    "xctformer": "XCTFormer, the paper's preset and zero fill (the paper's rows)",
    "xctformer_linear": "XCTFormer, the paper's preset, hidden inputs started from linear interpolation",
    "linear": "per window and channel, linear interpolation of the observed points (no training)",
    "sktime_imputer": "sktime's Imputer(method='nearest') per window (no training)",
    "saits": "PyPOTS SAITS, a learned imputation transformer (extra: pip install 'xct-estimators[baselines]')",
    **{name: f"ablation: the xctformer row with {variant}" for name, variant in (
        ("xctformer_nomask", "no mask"), ("xctformer_softmax", "softmax"), ("xctformer_vanilla", "vanilla attention"),
        ("xctformer_time", "time-only attention"), ("xctformer_channel", "channel-only attention"),
        ("xctformer_clipped", "AbsAct + ReLU"))},
}  # fmt: skip
DEFAULT_IMPUTATION_MODELS = ("xctformer", "linear", "sktime_imputer")
#: sktime Imputer method: the best of its cheap methods on ETTh1 (docs/benchmarks.md).
SKTIME_METHOD = "nearest"


class LinearImputer:
    """Linear interpolation per window and channel; edges repeat the nearest observed value."""

    settings: dict[str, Any] = {}

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        pass

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return linear_fill(torch.from_numpy(x), torch.from_numpy(visible)).numpy()

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return self.impute_windows(masked[None], ~np.isnan(masked[None]))[0]


class SktimeWindowImputer:
    """sktime's ``Imputer`` on each window on its own (what the window shows, nothing else)."""

    def __init__(self, method: str = SKTIME_METHOD):
        self.method = method
        self.settings = {"method": method}

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        pass

    def _impute(self, values: np.ndarray) -> np.ndarray:
        import pandas as pd
        from sktime.transformations.series.impute import Imputer

        frame = pd.DataFrame(values.astype(np.float64))  # sktime drift cannot write float64 into float32
        return Imputer(method=self.method).fit_transform(frame).to_numpy(np.float32)

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return np.stack([self._impute(np.where(v, w, np.nan)) for w, v in zip(x, visible, strict=True)])

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return self._impute(masked)


class XCTFormerBenchImputer:
    """A :class:`~xct_estimators.reconstruction.ReconstructionEngine` in imputation mode."""

    def __init__(self, engine):
        self.engine = engine
        self.settings = {
            "window_length": engine.window_length,
            "epochs": engine.n_epochs,
            "fill": engine.fill,
            "learning_rate": engine.learning_rate,
            "batch_size": engine.batch_size,
            "patience": engine.patience,
            **{k: v for k, v in engine.architecture.items() if k != "max_attention_bytes"},
        }

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        self.engine.fit(train, val_values=val)
        self.settings.update(
            epochs_trained=self.engine.epochs_trained,
            best_epoch=self.engine.best_epoch,
            val_losses=[round(v, 5) for v in self.engine.val_losses],
        )

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return self.engine.reconstruct_windows(x, visible)

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(masked), self.engine.reconstruct(masked), masked)


class SAITSImputer:
    """PyPOTS' SAITS trained on the training windows (its own masked-imputation training),
    validated on the validation windows with the run's mask rate, best epoch kept."""

    def __init__(self, window_length: int, mask_rate: float, epochs: int, train_stride: int, seed: int, device):
        try:
            from pypots.imputation import SAITS  # noqa: F401
        except ImportError as error:
            raise ImportError(
                "The 'saits' baseline needs PyPOTS: pip install 'xct-estimators[baselines]' (or pip install pypots)."
            ) from error
        self.window_length, self.mask_rate, self.seed = window_length, mask_rate, seed
        self.train_stride, self.device = train_stride, device
        self.settings = dict(
            n_layers=2, d_model=64, n_heads=4, d_k=16, d_v=16, d_ffn=128, dropout=0.1, epochs=epochs,
            patience=min(3, max(epochs - 1, 1)) if epochs > 1 else None, batch_size=32,
        )  # fmt: skip
        self.model = None

    def _windows(self, values: np.ndarray) -> np.ndarray:
        view = np.lib.stride_tricks.sliding_window_view(values, self.window_length, axis=0)
        return np.ascontiguousarray(view[:: self.train_stride].transpose(0, 2, 1)).astype(np.float32)

    def fit(self, train: np.ndarray, val: Optional[np.ndarray]) -> None:
        from pypots.imputation import SAITS
        from pypots.utils.random import set_random_seed

        set_random_seed(self.seed)
        self.model = SAITS(
            n_steps=self.window_length, n_features=train.shape[1], device=self.device, verbose=False,
            saving_path=None, **self.settings,
        )  # fmt: skip
        val_set = None
        if val is not None:
            x_val = self._windows(val)
            hidden = np.random.default_rng(self.seed).random(x_val.shape) <= self.mask_rate
            val_set = {"X": np.where(hidden, np.nan, x_val), "X_ori": x_val}
        self.model.fit({"X": self._windows(train)}, val_set)

    def impute_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        return self.model.predict({"X": np.where(visible, x, np.nan)})["imputation"].astype(np.float32)

    def impute_series(self, masked: np.ndarray) -> np.ndarray:
        return series_by_windows(self.impute_windows, masked, self.window_length, self.window_length // 2)
