"""The anomaly detectors ``xct-bench detect`` compares, behind one small interface.

Each has ``fit(train)``, ``window_energies(values, length, progress)`` (one energy per stride-1
window and time step: the ``tslib`` protocol), ``point_scores(values)`` (one score per step and
the number of windows behind them: the ``point`` protocol) and ``settings``. Reconstructors
(XCTFormer, the window mean) score a window by its reconstruction MSE over channels; Darts'
scorers give one score per step, and a window's energies are the scores of its steps.
"""

from __future__ import annotations

import numpy as np

from ..nn.config import ABLATIONS
from .detection import chunked_window_energies
from .models import ABLATION_MODELS

DETECTION_MODELS = {
    "xctformer": "XCTFormer reconstruction (the paper's preset, or --arch overrides)",
    "window_mean": "no training: each window reconstructed by its per-channel mean (a floor)",
    "darts_kmeans": "darts.ad.KMeansScorer(k=8, window=10) on the training series",
    "darts_iforest": "darts.ad.PyODScorer(pyod IForest, window=10) (needs pyod: pip install pyod)",
    **{name: "ablation: xctformer with one switch changed (see xct-bench forecast --help)" for name in (
        "xctformer_nomask", "xctformer_softmax", "xctformer_vanilla", "xctformer_time", "xctformer_channel",
        "xctformer_clipped")},
}  # fmt: skip
DEFAULT_DETECTION_MODELS = ("xctformer", "window_mean")
#: Window of the Darts scorers: ten steps of context for a per-step score.
DARTS_SCORER_WINDOW = 10


def _reconstruction_energy(windows: np.ndarray, reconstruction: np.ndarray) -> np.ndarray:
    return np.square(reconstruction - windows).mean(axis=-1)


def _averaged(values: np.ndarray, length: int, stride: int, reconstruct) -> tuple[np.ndarray, int]:
    """Reconstruct windows every ``stride`` steps (the last one ending at the end), average overlaps."""
    starts = np.arange(0, len(values) - length + 1, stride)
    if starts[-1] != len(values) - length:
        starts = np.append(starts, len(values) - length)
    total = np.zeros(values.shape, dtype=np.float64)
    count = np.zeros((len(values), 1))
    for start in starts:
        total[start : start + length] += reconstruct(values[None, start : start + length])[0]
        count[start : start + length] += 1
    return total / count, len(starts)


class XCTFormerBenchDetector:
    """A :class:`~xct_estimators.reconstruction.ReconstructionEngine` in anomaly mode."""

    def __init__(self, engine, validation_share: float = 0.2):
        self.engine = engine
        self.validation_share = validation_share
        params = {"window_length": engine.window_length, **engine.architecture}
        params.update(n_epochs=engine.n_epochs, batch_size=engine.batch_size, learning_rate=engine.learning_rate)
        self.settings = {**params, "patience": engine.patience, "train_stride": engine.train_stride}

    def fit(self, train: np.ndarray) -> XCTFormerBenchDetector:
        # The paper's code: validation = the last 20 % of the training array, also trained on.
        self.engine.fit(train, val_values=train[int(len(train) * (1 - self.validation_share)) :])
        self.settings.update(epochs_trained=self.engine.epochs_trained, best_epoch=self.engine.best_epoch)
        return self

    def window_energies(self, values, length, progress=None):
        if length != self.engine.window_length:
            raise ValueError(f"The engine reconstructs windows of {self.engine.window_length}, not {length}.")
        visible = np.ones((1, length, values.shape[1]), dtype=bool)

        def energies_of(windows):
            reconstruction = self.engine.reconstruct_windows(windows, np.broadcast_to(visible, windows.shape))
            return _reconstruction_energy(windows, reconstruction)

        return chunked_window_energies(values, length, energies_of, progress=progress)

    def point_scores(self, values):
        scores = np.nanmean(self.engine.score(values), axis=1)
        return scores, len(self.engine.window_starts(len(values)))


class WindowMeanDetector:
    """Each window reconstructed by its per-channel mean: no training, deterministic."""

    def __init__(self, window_length: int):
        self.window_length = window_length
        self.settings = {"window_length": window_length, "window_stride": max(window_length // 2, 1)}

    @staticmethod
    def reconstruct_windows(windows: np.ndarray) -> np.ndarray:
        return np.broadcast_to(windows.mean(axis=1, keepdims=True), windows.shape)

    def fit(self, train: np.ndarray) -> WindowMeanDetector:
        return self

    def window_energies(self, values, length, progress=None):
        return chunked_window_energies(
            values, length, lambda w: _reconstruction_energy(w, self.reconstruct_windows(w)), progress=progress
        )

    def point_scores(self, values):
        stride = self.settings["window_stride"]
        reconstruction, n_windows = _averaged(values, self.window_length, stride, self.reconstruct_windows)
        return np.square(reconstruction - values).mean(axis=1), n_windows


class DartsScorerDetector:
    """A fittable Darts anomaly scorer; its per-step scores serve both protocols.

    Darts scores a step from the ``window`` steps ending at it, so the first ``window - 1``
    steps have no score of their own: they take the first score.
    """

    def __init__(self, name: str, seed: int):
        self.name = name
        self.seed = seed
        self.settings = {"window": DARTS_SCORER_WINDOW}
        if name == "darts_kmeans":
            self.settings.update(scorer="KMeansScorer", k=8)
        else:
            self.settings.update(scorer="PyODScorer", model="IForest")
        self.scorer = None

    def _build(self):
        from darts.ad import KMeansScorer, PyODScorer

        if self.name == "darts_kmeans":
            return KMeansScorer(k=8, window=DARTS_SCORER_WINDOW, random_state=self.seed)
        try:
            from pyod.models.iforest import IForest
        except ImportError as error:
            raise ImportError(
                "The darts_iforest baseline needs PyOD: pip install pyod (or pip install 'xct-estimators[baselines]')."
            ) from error
        return PyODScorer(IForest(random_state=self.seed), window=DARTS_SCORER_WINDOW)

    @staticmethod
    def _series(values):
        from darts import TimeSeries

        return TimeSeries.from_values(np.asarray(values, dtype=np.float32))

    def fit(self, train: np.ndarray) -> DartsScorerDetector:
        self.scorer = self._build().fit(self._series(train))
        return self

    def _step_scores(self, values) -> np.ndarray:
        scores = self.scorer.score(self._series(values)).values(copy=False)[:, 0].astype(np.float32)
        return np.concatenate([np.full(len(values) - len(scores), scores[0], dtype=np.float32), scores])

    def window_energies(self, values, length, progress=None):
        windows = np.lib.stride_tricks.sliding_window_view(self._step_scores(values), length)
        if progress is not None:
            progress(len(windows))
        return windows

    def point_scores(self, values):
        return self._step_scores(values), None


def build_detector(model: str, engine_factory, window_length: int, seed: int):
    """The bench detector named ``model``; ``engine_factory()`` builds XCTFormer's engine."""
    if model == "xctformer" or model in ABLATION_MODELS:
        switches = ABLATIONS[ABLATION_MODELS[model]] if model in ABLATION_MODELS else {}
        return XCTFormerBenchDetector(engine_factory(**switches))
    if model == "window_mean":
        return WindowMeanDetector(window_length)
    if model in ("darts_kmeans", "darts_iforest"):
        return DartsScorerDetector(model, seed)
    raise ValueError(f"Unknown detection model {model!r}; choose from {', '.join(DETECTION_MODELS)}.")
