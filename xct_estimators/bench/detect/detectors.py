"""The detectors of ``xct-bench detect`` (:data:`~xct_estimators.bench.catalog.DETECTION_MODELS`).

Each has ``fit(train)``, ``point_scores(values)`` (one score per step and the number of windows
behind them) and ``settings``; all but the points-only ones (``points_only``) have
``window_energies(values, length, progress)`` (one energy per stride-1 window and time step: the
``tslib`` protocol), and those with per-channel errors ``point_errors(values)`` (what ``--scoring``
reads). Reconstructors (XCTFormer, the window mean) score a window by its reconstruction MSE over
channels; Darts' scorers give one score per step, and a window's energies are the scores of its steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import numpy as np

from ..._optional import optional_import
from ...nn.hyperparameters import ABLATIONS
from ..catalog import DETECTION_MODELS, HIDDEN_PASSES, MASKED_RATE
from ..models import ABLATION_MODELS, without_later_defaults


def window_view(values: np.ndarray, length: int) -> np.ndarray:
    """Every stride-1 window of a (time, channels) array, (windows, length, channels), no copy."""
    return np.lib.stride_tricks.sliding_window_view(values, length, axis=0).transpose(0, 2, 1)


def chunked_window_energies(
    values: np.ndarray,
    length: int,
    energies_of: Callable[[np.ndarray], np.ndarray],
    chunk: int = 4096,
    progress: Optional[Callable[[int], object]] = None,
) -> np.ndarray:
    """(windows, length) energies of every stride-1 window, ``chunk`` windows at a time
    (``energies_of`` maps (n, length, channels) windows to (n, length) energies)."""
    windows = window_view(values, length)
    out = np.empty((len(windows), length), dtype=np.float32)
    for start in range(0, len(windows), chunk):
        batch = np.ascontiguousarray(windows[start : start + chunk])
        out[start : start + len(batch)] = energies_of(batch)
        if progress is not None:
            progress(len(batch))
    return out


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


class _PerChannelErrors:
    """A detector with per-channel ``point_errors``: its point score is their mean (the paper's)."""

    def point_scores(self, values):
        errors, n_windows = self.point_errors(values)
        return np.nanmean(errors, axis=1), n_windows


class XCTFormerBenchDetector(_PerChannelErrors):
    """A :class:`~xct_estimators.reconstruction.ReconstructionEngine` in anomaly mode."""

    def __init__(self, engine, validation_share: float = 0.2, hidden_passes: Optional[int] = None):
        self.engine = engine
        self.validation_share = validation_share
        self.hidden_passes = hidden_passes  # None: every point seen (the paper); see ReconstructionEngine.score
        self.points_only = hidden_passes is not None  # no window energies of hidden points: no tslib protocol
        params = {"window_length": engine.window_length, **without_later_defaults(engine.architecture)}
        params.update(n_epochs=engine.n_epochs, batch_size=engine.batch_size, learning_rate=engine.learning_rate)
        self.settings = {**params, "patience": engine.patience, "train_stride": engine.train_stride}
        if hidden_passes:
            self.settings.update(mask_rate=engine.mask_rate, fill=engine.fill, hidden_passes=hidden_passes)

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

    def point_errors(self, values):
        passes = self.hidden_passes or 1
        return self.engine.score(values, self.hidden_passes), passes * len(self.engine.window_starts(len(values)))


class WindowMeanDetector(_PerChannelErrors):
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

    def point_errors(self, values):
        stride = self.settings["window_stride"]
        reconstruction, n_windows = _averaged(values, self.window_length, stride, self.reconstruct_windows)
        return np.square(reconstruction - values), n_windows


class InterpolationDetector(_PerChannelErrors):
    """Each point predicted from its two neighbours in time (their mean, one at the ends): no
    training, deterministic; the floor of ``xctformer_masked``, whose passes hide no two
    neighbouring steps of a channel, so linear interpolation is exactly this."""

    points_only = True

    def __init__(self, window_length: int):
        self.settings = {"prediction": "mean of the two neighbouring steps", "window_length": window_length}

    def fit(self, train: np.ndarray) -> InterpolationDetector:
        return self

    def point_errors(self, values):
        values = np.asarray(values, dtype=np.float64)
        predicted = np.empty_like(values)
        predicted[1:-1] = (values[:-2] + values[2:]) / 2
        predicted[0], predicted[-1] = values[1], values[-2]
        return np.square(values - predicted), None


class RandomDetector:
    """Uniform scores from a fixed seed: what each measure gives to noise (under point adjustment
    random scores can look state of the art: Kim et al., AAAI 2022)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.settings = {"scores": "uniform on [0, 1)", "seed": seed}

    def fit(self, train: np.ndarray) -> RandomDetector:
        return self

    def _generator(self, values: np.ndarray) -> np.random.Generator:
        return np.random.default_rng([self.seed, len(values)])  # the train and test arrays draw apart

    def window_energies(self, values, length, progress=None):
        windows = len(values) - length + 1
        if progress is not None:
            progress(windows)
        return self._generator(values).random((windows, length), dtype=np.float32)

    def point_scores(self, values):
        return self._generator(values).random(len(values)), None


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
        iforest = optional_import("pyod.models.iforest", extra="baselines", purpose="The darts_iforest baseline")
        return PyODScorer(iforest.IForest(random_state=self.seed), window=DARTS_SCORER_WINDOW)

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
    if model == "xctformer_masked":
        return XCTFormerBenchDetector(engine_factory(mask_rate=MASKED_RATE, fill="linear"), hidden_passes=HIDDEN_PASSES)
    if model == "window_mean":
        return WindowMeanDetector(window_length)
    if model == "interpolation":
        return InterpolationDetector(window_length)  # the window of --scoring local/...
    if model == "random":
        return RandomDetector(seed)
    if model in ("darts_kmeans", "darts_iforest"):
        return DartsScorerDetector(model, seed)
    raise ValueError(f"Unknown detection model {model!r}; choose from {', '.join(DETECTION_MODELS)}.")
