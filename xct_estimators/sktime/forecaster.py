"""sktime forecaster delegating to the Darts :class:`~xct_estimators.XCTFormerModel`."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import pandas as pd
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

from .. import training
from .._checks import NotFittedError
from .._quiet import quiet_lightning
from ..nn import DEFAULT_MAX_ATTENTION_BYTES
from ..nn.compiling import COMPILE
from ..nn.hyperparameters import DECOP_AUTO_DOC, documented, network_kwargs
from ..nn.presets import get_preset
from ..nn.requirements import MIN_TORCH_TEXT
from ..reconstruction import DEFAULT_PATIENCE, DEFAULT_VALIDATION_FRACTION, TRAINING_PARAMETERS
from ._engine_params import TINY, LoadsOlderPickles, store_parameters
from ._frames import (
    check_regular_index,
    check_x_matches_y,
    check_x_rows,
    in_fitted_order,
    instance_levels,
    instances,
    is_panel,
)

LR_SCHEDULES = ("one_cycle", None)
_TEST_PARAMS = dict(input_chunk_length=6, **TINY, pl_trainer_kwargs={"enable_progress_bar": False, "logger": False})


_HARDWARE = {name: TRAINING_PARAMETERS[name] for name in ("accelerator", "devices", "precision")}


def _quantile_at(values: np.ndarray, levels, level: float) -> np.ndarray:
    """The quantile ``level`` of every step from the trained quantiles ``values`` (steps, levels):
    linear between the two trained levels around it (each step's quantiles sorted, so the
    function is monotone), exact at a trained level."""
    order = np.argsort(levels)
    ranked = np.sort(values[:, order], axis=-1)
    return np.array([np.interp(level, np.asarray(levels, dtype=float)[order], row) for row in ranked])


@documented("sktime", extra={"decop_k": DECOP_AUTO_DOC}, more={**_HARDWARE, "compile": COMPILE})
class XCTFormerForecaster(LoadsOlderPickles, BaseForecaster):
    """XCTFormer forecaster for sktime: cross-channel, cross-time attention over patch tokens.

    Training and prediction are delegated to the Darts :class:`~xct_estimators.XCTFormerModel`
    (one training path). Every column of ``y`` becomes a channel of tokens, which the network
    forecasts. ``X`` is known-future input (Darts' future covariates): the known-future decoder
    reads its columns (by name) over the input window and the rows passed to ``predict`` over the
    forecast horizon, so the forecast uses them. A forecaster fitted with ``X`` needs ``X`` with a
    row for every step up to the furthest ``fh`` step in ``predict`` (and in ``update``, for
    the new rows). Steps past the furthest ``fh`` step, which the network's output chunk holds
    and no earlier step reads, repeat the last row given.

    Parameters
    ----------
    input_chunk_length : int, default=96
        Look-back window length; ``y`` must be longer than ``input_chunk_length`` plus
        ``output_chunk_length``.
    output_chunk_length : int or None, default=None
        Steps predicted at once. ``None``: the largest step of the ``fh`` seen in ``fit`` (1 if
        ``fit`` sees no ``fh``). Longer horizons are forecast autoregressively.
    {parameters}
    n_epochs, batch_size : int, default=10, 32
        Training epochs and batch size.
    learning_rate : float, default=1e-3
        Adam's learning rate: the peak of the one-cycle schedule (or the constant rate).
    patience : int or None, default=3
        Epochs without a lower validation loss before training stops (counted once the one-cycle
        rate has peaked); the best validation epoch's weights are restored. ``None``: all
        ``n_epochs``, best weights still restored.
    validation_fraction : float, default=0.1
        Share of each series' last steps held out to validate (at least one output chunk; never
        trained on). ``0``: no validation, the last epoch's weights. A series too short to hold
        one out and keep a training sample trains without validation, with a warning.
    lr_schedule : {"one_cycle", None}, default="one_cycle"
        ``"one_cycle"``: the paper's recipe, as :meth:`XCTFormerModel.from_params` trains (and
        so as the tuner's ``best_params`` were found): ``OneCycleLR`` with ``max_lr=learning_rate``
        and ``pct_start=0.4``, stepped every batch. ``None``: a constant ``learning_rate``.
    quantiles : list of float or None, default=None
        Train with Darts' ``QuantileRegression`` on these quantiles, which enables
        ``predict_quantiles`` and ``predict_interval``: a level between two trained ones is
        interpolated linearly between them, one outside them is refused.
    refit_on_update : bool, default=False
        ``update`` always extends the context used for prediction; with ``True`` it also
        refits the network on all data seen.
    random_state : int or None, default=None
        Seed for weights, training order and forecasts.
    pl_trainer_kwargs : dict or None, default=None
        More keyword arguments for the Lightning trainer; they win over ``accelerator``,
        ``devices`` and ``precision``. Training is quiet unless they say otherwise
        (``{"enable_progress_bar": True}`` shows the bar).

    Attributes
    ----------
    darts_model_ : XCTFormerModel
        The fitted Darts model.
    y_context_, X_context_ : pd.DataFrame
        The data ``predict`` starts from: the last ``input_chunk_length`` rows of ``y`` (and
        ``X``) seen in ``fit`` and ``update`` (all of it with ``refit_on_update=True``). Kept by
        the forecaster itself, so the sktime config ``remember_data`` (``False`` here, sktime
        1.3's default) does not matter.

    Examples
    --------
    >>> from sktime.datasets import load_longley
    >>> from xct_estimators import XCTFormerForecaster
    >>> y, X = load_longley()
    >>> forecaster = XCTFormerForecaster(input_chunk_length=4, patch_len=2, stride=1, n_epochs=2)
    >>> forecaster.fit(y, X=X, fh=[1, 2])  # doctest: +SKIP
    """

    _tags = {
        "authors": ["xct-estimators developers"],
        "maintainers": ["xct-estimators developers"],
        # Panels and hierarchies reach _fit as they are: one global network for all instances.
        "y_inner_mtype": ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"],
        "X_inner_mtype": ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"],
        "capability:multivariate": True,
        "capability:exogenous": True,
        "capability:missing_values": False,
        "capability:insample": False,
        "capability:pred_int": False,
        "capability:pred_int:insample": False,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "requires-fh-in-fit": False,
        "X-y-must-have-same-index": True,
        "capability:update": True,
        "capability:categorical_in_X": False,
        # X over the horizon is the network's input, from the cutoff on: the steps between fh's need rows too
        "capability:non_contiguous_X": False,
        # the form of sktime's own Darts adapters: either distribution of Darts
        "python_dependencies": [["u8darts>=0.48", "darts>=0.48"], f"torch>={MIN_TORCH_TEXT}", "pytorch-lightning"],
    }
    # sktime 1.3's default, adopted now: the context predict needs is kept in y_context_ and
    # X_context_, so remember_data=True or False both work (and construction does not warn).
    _config = {"remember_data": False}

    def __init__(
        self,
        input_chunk_length=96,
        output_chunk_length=None,
        patch_len=16,
        stride=8,
        d_model=32,
        n_heads=2,
        d_ff=64,
        e_layers=2,
        dropout=0.1,
        fc_dropout=0.05,
        attn_dropout=0.5,
        head_dropout=0.0,
        decop_k=None,
        use_mask=True,
        activation="absact",
        mixing="full",
        max_attention_bytes=DEFAULT_MAX_ATTENTION_BYTES,
        fused_attention=None,
        n_epochs=10,
        batch_size=32,
        learning_rate=1e-3,
        patience=DEFAULT_PATIENCE,
        validation_fraction=DEFAULT_VALIDATION_FRACTION,
        lr_schedule="one_cycle",
        quantiles=None,
        refit_on_update=False,
        random_state=None,
        accelerator="auto",
        devices="auto",
        precision="32",
        pl_trainer_kwargs=None,
        compile=False,
    ):
        store_parameters(self, locals())
        super().__init__()
        self.set_tags(**{"capability:pred_int": quantiles is not None})
        # sktime 1.2 creates these only when remember_data is True at construction; 1.3 always.
        self._y = getattr(self, "_y", None)
        self._X = getattr(self, "_X", None)

    # -- the Darts model -----------------------------------------------------------------
    def _build_darts_model(self, output_chunk_length: int, validated: bool = False):
        from darts.utils.likelihood_models.torch import QuantileRegression

        from ..forecasting import XCTFormerModel

        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(
                f"lr_schedule must be one of {LR_SCHEDULES} ('one_cycle': the paper's recipe; None: a constant "
                f"learning_rate), got {self.lr_schedule!r}."
            )
        likelihood = QuantileRegression(list(self.quantiles)) if self.quantiles is not None else None
        user = dict(self.pl_trainer_kwargs or {})
        callbacks = []
        if validated:
            after_warmup = self.lr_schedule == "one_cycle"
            callbacks = training.validation_callbacks(self.patience, after_warmup, self.n_epochs)
        user["callbacks"] = callbacks + list(user.get("callbacks", []))
        hardware = dict(accelerator=self.accelerator, devices=self.devices, precision=self.precision)
        trainer_kwargs = training.trainer_kwargs(hardware, user)
        params = dict(network_kwargs(self), n_epochs=self.n_epochs, batch_size=self.batch_size, likelihood=likelihood)
        params.update(random_state=self.random_state, pl_trainer_kwargs=trainer_kwargs, compile=self.compile)
        if self.lr_schedule == "one_cycle":  # the tuner's recipe: best_params reproduce here
            return XCTFormerModel.from_params(
                self.input_chunk_length,
                output_chunk_length,
                learning_rate=self.learning_rate,
                keep_best_val_weights=False,  # among the validation callbacks
                **params,
            )
        return XCTFormerModel(
            self.input_chunk_length, output_chunk_length, optimizer_kwargs={"lr": self.learning_rate}, **params
        )

    @classmethod
    def from_preset(cls, dataset, **overrides):
        """A forecaster with the paper's hyperparameters and recipe for ``dataset`` (as
        :meth:`XCTFormerModel.from_preset`): input length, architecture, batch size, epochs and
        peak learning rate; ``overrides`` replace any of them."""
        return cls(**{**get_preset(dataset, "forecast").estimator_params("input_chunk_length"), **overrides})

    @property
    def network_(self):
        """The trained :class:`~xct_estimators.nn.XCTFormerNet` (after ``fit``)."""
        if not hasattr(self, "darts_model_"):
            raise NotFittedError("This XCTFormerForecaster has not been fitted yet: call fit() first.")
        return self.darts_model_.network_

    @property
    def channel_names_(self) -> list[str]:
        """The network's channels: the columns of ``y``, then those of ``X`` (as strings)."""
        self.network_  # noqa: B018 (raises before fit)
        return [str(c) for c in self.y_context_.columns] + [str(c) for c in (self.x_columns_ or [])]

    @staticmethod
    def _series(frame: pd.DataFrame):
        from darts import TimeSeries

        # Darts sees positions only: the network uses no calendar features, and sktime's index
        # (Period, Datetime, Range, gaps) is restored from the cutoff and fh.
        return TimeSeries.from_values(frame.to_numpy(np.float32), columns=[str(c) for c in frame.columns])

    def fit(self, y, X=None, fh=None):
        """Fit to ``y`` (and exogenous ``X``); see ``sktime``'s ``BaseForecaster.fit``."""
        # Before sktime's generic missing-data error, so the message can name the fix.
        if isinstance(y, (pd.Series, pd.DataFrame, np.ndarray)):
            self._check_no_missing(y)
        if isinstance(y, (pd.Series, pd.DataFrame)):
            check_regular_index(y.index, "y")
            numeric_x = isinstance(X, (pd.Series, pd.DataFrame)) and all(
                pd.api.types.is_numeric_dtype(dtype) for dtype in pd.DataFrame(X).dtypes
            )
            if numeric_x:  # categorical X: sktime's own error comes first
                check_x_matches_y(pd.DataFrame(X), pd.DataFrame(y), "a row at every time point of y")
        return super().fit(y, X=X, fh=fh)

    @staticmethod
    def _check_no_missing(y) -> None:
        missing = int(pd.isna(np.asarray(y)).sum())  # no float cast: categorical y gets sktime's error
        if missing:
            raise ValueError(
                f"y contains {missing} missing value(s); XCTFormerForecaster needs complete "
                "data. Fill them first, e.g. in a pipeline: "
                "TransformedTargetForecaster([('impute', XCTFormerImputer()), ('forecast', XCTFormerForecaster())])."
            )

    def _fit(self, y, X=None, fh=None):
        # Largest fh step seen in fit; one step when fit sees no fh (then longer horizons are
        # autoregressive).
        default_chunk = 1 if fh is None else int(self._steps(fh).max())
        self.output_chunk_length_ = self.output_chunk_length or default_chunk
        self.x_columns_ = None if X is None else list(X.columns)
        X = None if X is None else X.loc[y.index]  # read by time: X may hold rows before or after y
        self._fit_network(y, X)
        self.y_context_, self.X_context_ = self._kept(y), None if X is None else self._kept(X)
        return self

    def _fit_network(self, y: pd.DataFrame, X: Optional[pd.DataFrame]) -> None:
        """One global XCTFormerModel on every instance of ``y`` (one series, or a panel's
        instances as a list of Darts series, with ``X``'s matching instances as future covariates)."""
        pieces = instances(y)
        covariates = dict(instances(X)) if X is not None else {}
        if is_panel(y):
            needed = self.input_chunk_length + self.output_chunk_length_
            dropped = [key for key, part in pieces if len(part) < needed]
            if dropped:
                warnings.warn(
                    f"Instance(s) {dropped[:10]}{' ...' if len(dropped) > 10 else ''} of y have fewer than "
                    f"input_chunk_length + output_chunk_length = {needed} time points: left out of training. "
                    f"They are still forecast when they have at least input_chunk_length={self.input_chunk_length}.",
                    UserWarning,
                    stacklevel=4,
                )
            pieces = [(key, part) for key, part in pieces if len(part) >= needed]
            if not pieces:
                raise ValueError(
                    f"No instance of y has the {needed} time points one training sample needs "
                    "(input_chunk_length + output_chunk_length): use longer series or shorter chunks."
                )
        series = [self._series(part) for _, part in pieces]
        known = [self._series(covariates[key]) for key, _ in pieces] if X is not None else None
        series, held_out = self._held_out(series)
        self.darts_model_ = self._build_darts_model(self.output_chunk_length_, validated=held_out is not None)
        fit = dict(future_covariates=known, val_series=held_out, val_future_covariates=known if held_out else None)
        if not is_panel(y):  # one series in, one series' model out
            fit = {key: value[0] if value is not None else None for key, value in fit.items()}
        with quiet_lightning():
            self.darts_model_.fit(series if is_panel(y) else series[0], **fit)

    def _held_out(self, series: list) -> tuple[list, Optional[list]]:
        """Each series' training part, and its validation tail: the last ``validation_fraction``
        of its steps (at least one output chunk) with the ``input_chunk_length`` steps before
        them. ``None`` without validation, or when a series is too short to keep a training sample."""
        if not self.validation_fraction:
            return series, None
        chunk, look_back = self.output_chunk_length_, self.input_chunk_length
        held = [max(int(np.ceil(self.validation_fraction * len(s))), chunk) for s in series]
        if any(len(s) - n < look_back + chunk for s, n in zip(series, held, strict=True)):
            warnings.warn(
                f"y is too short to hold out validation steps (validation_fraction={self.validation_fraction}) and "
                f"keep input_chunk_length + output_chunk_length = {look_back + chunk} for training: trained all "
                "n_epochs without validation. Pass a longer y, or validation_fraction=0 to silence this.",
                UserWarning,
                stacklevel=6,
            )
            return series, None
        training_parts = [s[: len(s) - n] for s, n in zip(series, held, strict=True)]
        return training_parts, [s[len(s) - n - look_back :] for s, n in zip(series, held, strict=True)]

    def _kept(self, frame: pd.DataFrame) -> pd.DataFrame:
        """What predict needs of the data seen: the last input_chunk_length rows (of each
        instance), or everything when ``refit_on_update`` refits on all data seen."""
        if self.refit_on_update:
            return frame.copy()
        if is_panel(frame):
            return frame.groupby(level=instance_levels(frame), group_keys=False).tail(self.input_chunk_length)
        return frame.iloc[-self.input_chunk_length :].copy()

    @staticmethod
    def _appended(old: Optional[pd.DataFrame], new: Optional[pd.DataFrame]) -> Optional[pd.DataFrame]:
        if new is None or old is None:
            return old if new is None else new
        joined = pd.concat([old, new])
        return joined[~joined.index.duplicated(keep="last")].sort_index()

    def update(self, y, X=None, update_params=True):
        """Extend the context with new data (and refit, see ``refit_on_update``); see sktime's
        ``BaseForecaster.update``. The new rows are checked as ``fit`` checks its data."""
        if isinstance(y, (pd.Series, pd.DataFrame, np.ndarray)):
            self._check_no_missing(y)
        return super().update(y, X=X, update_params=update_params)

    def _update(self, y, X=None, update_params=True):
        # The forecaster keeps its own context (y_context_, X_context_), whatever remember_data says.
        if self.x_columns_ is None and X is not None:
            raise ValueError(
                f"XCTFormerForecaster was fitted without X, so the X given to update (columns {list(X.columns)}) "
                "would not be read: leave X out, or fit with X to use it."
            )
        if self.x_columns_ is not None and X is None:
            raise ValueError(
                f"XCTFormerForecaster was fitted with X (columns {self.x_columns_}): pass X with a row at every time "
                "point of the y given to update."
            )
        if X is not None and self.x_columns_ is not None:
            X = in_fitted_order(X, self.x_columns_, "XCTFormerForecaster")
        y_all = self._appended(self.y_context_, y)
        for key, part in instances(y_all):  # the new rows must continue the context without a gap
            check_regular_index(part.index, "y" if key is None else f"y's instance {key}", after="update")
        X_all = self._appended(self.X_context_, X) if self.x_columns_ is not None else None
        if X_all is not None:
            check_x_matches_y(X_all, y_all, "a row at every time point of y given to update")
            X_all = X_all.loc[y_all.index]
        if update_params and self.refit_on_update:
            self._check_no_missing(y_all)
            self._fit_network(y_all, X_all)
        self.y_context_ = self._kept(y_all)
        self.X_context_ = None if X_all is None else self._kept(X_all)
        return self

    def _steps(self, fh) -> np.ndarray:
        steps = np.asarray(fh.to_relative(self.cutoff), dtype=int)
        if (steps < 1).any():
            raise NotImplementedError("XCTFormerForecaster forecasts out of sample only: use fh steps >= 1.")
        return steps

    def _covariates_for_predict(self, X, keys: list, steps: int, needed: int) -> Optional[list]:
        """The future covariates of the instances ``keys``: each one's kept X context, then the rows
        of X for the ``steps`` steps after its cutoff. X given must hold the ``needed`` first ones (to
        the furthest fh step); the others, or all without X, repeat the last row known."""
        if self.x_columns_ is None:
            if X is not None:
                raise ValueError(
                    f"XCTFormerForecaster was fitted without X, so the X given (columns {list(X.columns)}) would not "
                    "be read: leave X out, or fit with X to use it."
                )
            return None
        if X is None:
            raise ValueError(
                f"XCTFormerForecaster was fitted with X (columns {self.x_columns_}), which the network reads over "
                "the forecast horizon: pass X with a row for every step of fh to predict."
            )
        X = in_fitted_order(X, self.x_columns_, "XCTFormerForecaster")
        future = dict(instances(X))
        histories = dict(instances(self.X_context_))
        horizons = self._absolute_indexes(ForecastingHorizon(np.arange(1, steps + 1), is_relative=True))
        covariates = []
        for key in keys:
            history, ahead = histories[key], future.get(key)
            where = "the forecast horizon" if key is None else f"the forecast horizon of instance {key}"
            if ahead is None:
                raise ValueError(
                    f"X has no rows for {where}: X is matched to y by instance and time. Pass X with a row for every "
                    f"step from 1 to {needed} of every instance."
                )
            rows = ahead.index
            check_x_rows(rows, horizons[key][:needed], where, f"a row for every step from 1 to {needed}")
            # steps past the furthest fh step fill the network's output chunk; no earlier step reads them
            known = pd.concat([history, ahead.reindex(horizons[key])]).ffill()
            covariates.append(self._series(known))
        return covariates

    def _darts_predict(self, fh, X, **kwargs) -> tuple[list, np.ndarray]:
        """Forecasts of every instance, ``[(key, TimeSeries), ...]`` (key None for one series),
        and the rows of the fh steps."""
        steps = self._steps(fh)
        pieces = instances(self.y_context_)
        short = [(key, len(part)) for key, part in pieces if len(part) < self.input_chunk_length]
        if short:
            raise ValueError(
                f"Instance(s) {short[:10]} (key, time points) have fewer than input_chunk_length="
                f"{self.input_chunk_length} time points: XCTFormer needs one full input window to forecast."
            )
        series = [self._series(part) for _, part in pieces]
        reach = max(int(steps.max()), self.output_chunk_length_)  # the network sees a whole output chunk
        known = self._covariates_for_predict(X, [key for key, _ in pieces], reach, int(steps.max()))
        with quiet_lightning():
            forecasts = self.darts_model_.predict(
                int(steps.max()), series=series, future_covariates=known, verbose=False, **kwargs
            )
        return [(key, forecast) for (key, _), forecast in zip(pieces, forecasts, strict=True)], steps - 1

    def _absolute_indexes(self, fh) -> dict:
        """Each instance's forecast timestamps: the fh steps after its own last time point."""
        if not is_panel(self.y_context_):
            return {None: fh.to_absolute_index(self.cutoff)}
        from sktime.datatypes import get_cutoff

        relative = ForecastingHorizon(self._steps(fh), is_relative=True)
        return {
            key: relative.to_absolute_index(get_cutoff(part, return_index=True))
            for key, part in instances(self.y_context_)
        }

    def _joined(self, frames: list) -> pd.DataFrame:
        """One frame per instance -> sktime's frame (MultiIndex with the instance levels for panels)."""
        if frames[0][0] is None:
            return frames[0][1]
        names = list(self.y_context_.index.names)
        joined = pd.concat({key: frame for key, frame in frames}, names=names[:-1])
        joined.index = joined.index.set_names(names)
        return joined

    def _predict(self, fh, X=None):
        if self.quantiles is None:
            forecasts, rows = self._darts_predict(fh, X)
            values = [(key, forecast.values()[rows]) for key, forecast in forecasts]
        else:  # the median of the fitted quantiles: deterministic, unlike one sample
            values = [
                (key, np.stack([_quantile_at(params[:, j], self.quantiles, 0.5) for j in range(params.shape[1])], 1))
                for key, params in self._quantile_params(fh, X)
            ]
        columns, indexes = self.y_context_.columns, self._absolute_indexes(fh)
        return self._joined([(key, pd.DataFrame(v, index=indexes[key], columns=columns)) for key, v in values])

    def _predict_quantiles(self, fh, X, alpha):
        trained = sorted(float(q) for q in self.quantiles)
        outside = [a for a in alpha if not trained[0] - 1e-9 <= a <= trained[-1] + 1e-9]
        if outside:
            coverage = round(1 - 2 * trained[0], 6) if np.isclose(trained[0], 1 - trained[-1]) else None
            widest = f" (predict_interval: coverage up to {coverage})" if coverage else ""
            raise ValueError(
                f"quantile level(s) {outside} lie outside the trained levels {trained}{widest}: the forecaster has no "
                f"quantile beyond {trained[0]} and {trained[-1]}, and would only clamp to them. Fit with those levels "
                "in quantiles=[...]."
            )
        columns = list(enumerate(self.y_context_.columns))
        per_instance = [
            (key, {(c, a): _quantile_at(params[:, j], self.quantiles, a) for j, c in columns for a in alpha})
            for key, params in self._quantile_params(fh, X)
        ]
        frames, indexes = [], self._absolute_indexes(fh)
        for key, values in per_instance:
            columns = pd.MultiIndex.from_tuples(list(values))
            index = indexes[key]
            frames.append((key, pd.DataFrame(np.column_stack(list(values.values())), index=index, columns=columns)))
        return self._joined(frames)

    def _quantile_params(self, fh, X) -> list:
        """The fitted quantiles at the fh steps per instance, ``[(key, (steps, columns, quantiles))]``."""
        forecasts, rows = self._darts_predict(fh, X, predict_likelihood_parameters=True)
        shape = (len(rows), self.y_context_.shape[1], len(self.quantiles))
        return [(key, forecast.values()[rows].reshape(shape)) for key, forecast in forecasts]

    # -- pickling: Darts drops the trained Lightning module from its pickles ---------------
    def __getstate__(self):
        state = self.__dict__.copy()
        darts_model = state.get("darts_model_")
        if darts_model is not None:
            state["_trained_module"] = darts_model.model
        return state

    def __setstate__(self, state):
        module = state.pop("_trained_module", None)
        super().__setstate__(state)
        if module is not None:
            self.darts_model_.model = module

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Tiny settings (one epoch, short windows) for sktime's estimator checks."""
        return [dict(_TEST_PARAMS), dict(_TEST_PARAMS, quantiles=[0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95], decop_k=4)]
