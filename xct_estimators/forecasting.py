"""
XCTFormer for Darts
-------------------

:class:`XCTFormerModel`, a Darts ``MixedCovariatesTorchModel`` on :class:`~xct_estimators.nn.XCTFormerNet`.
"""

from __future__ import annotations

import os
from typing import Literal, Optional, Union

import numpy as np
from darts.models.forecasting.torch_forecasting_model import MixedCovariatesTorchModel
from darts.utils.data.torch_datasets.utils import TorchTrainingSample
from darts.utils.likelihood_models.torch import QuantileRegression
from darts.utils.serialization import add_safe_globals
from darts.utils.ts_utils import get_single_series
from torch import nn

from . import historical_forecasts
from ._checks import NotFittedError, is_positive_int, plain_number
from ._darts_private import init_trainer, set_saved_param
from ._devices import is_distributed, single_device
from ._optional import optional_import
from ._series_checks import (
    as_dtype,
    check_covariates_sampled_like,
    check_finite,
    check_long_enough,
    check_names,
    check_prediction_inputs,
    check_same_components,
    check_static_finite,
    static_columns,
)
from .callbacks import KeepBestValidationWeights
from .forecasting_module import _XCTFormerModule, paper_recipe  # saved models name the module here too
from .nn import DEFAULT_MAX_ATTENTION_BYTES, XCTFormerConfig, XCTFormerNet, auto_decop_k, get_preset
from .nn.attention import plain_attention
from .nn.compiling import COMPILE, CompileOption, compile_options, uncompiled
from .nn.hyperparameters import (
    ARCHITECTURE_PARAMS,
    DECOP_AUTO_DOC,
    documented,
    hyperparameters_of,
    network_kwargs,
)
from .nn.known_future import KnownFutureDecoder
from .nn.presets import RECIPES, searched_preset

DecopK = Union[int, Literal["auto"], None]


def _check_checkpoint_matches(model, path: str) -> None:
    """The network comes from ``path.ckpt`` and the settings from ``path``: a checkpoint of another
    model beside a save would predict under settings that are not its own."""
    if model.model is None:
        return
    saved = model.model.network_params
    expected = {name: model.model_params[name] for name in ARCHITECTURE_PARAMS if name in model.model_params}
    if expected.get("decop_k") == "auto":
        expected.pop("decop_k")  # resolved from the channel count when the network was built
    expected["seq_len"] = model.model_params["input_chunk_length"]
    different = [
        f"{k} {v!r} in {path}, {saved[k]!r} in its checkpoint" for k, v in expected.items() if saved.get(k) != v
    ]
    if different:
        raise ValueError(
            f"{path}.ckpt is not the checkpoint of {path}: {'; '.join(different)}. Keep the two files of one "
            "model.save(path) together, or save the model again."
        )


def input_statistics(dataset, window: int) -> dict:
    """The training data's statistics that the network standardises with
    (:meth:`XCTFormerNet.set_statistics`): the (mean, std) of each future covariate and each target
    over a Darts training dataset's series (the covariates as the network sees them, encoders'
    included), each target's lowest mean over ``window`` steps, and each static covariate's (mean,
    std) over the series. Empty for a dataset that does not expose its series."""
    series, future = getattr(dataset, "series", None), getattr(dataset, "future_covariates", None)
    stats = {}
    moments = lambda values: (values.mean(axis=0), values.std(axis=0))  # noqa: E731
    if series and future:
        values = lambda parts: np.concatenate([part.values(copy=False) for part in parts]).astype(np.float64)  # noqa: E731
        targets = values(series)
        stats.update(known=moments(values(future)), level=moments(targets), level_floor=lowest_window_mean(
            [part.values(copy=False) for part in series], window, fallback=targets.min(axis=0)
        ))  # fmt: skip
    statics = [s.static_covariates_values(copy=False) for s in series or () if s.static_covariates is not None]
    if statics and len(statics) == len(series):
        stats["static"] = moments(np.stack(statics).astype(np.float64))
    return stats


def lowest_window_mean(parts: list, window: int, fallback: np.ndarray) -> np.ndarray:
    """Each column's lowest mean over ``window`` consecutive rows of any of ``parts`` (arrays
    (rows, columns)); ``fallback`` where no part has that many rows."""
    lowest = np.full(fallback.shape, np.inf)
    for part in parts:
        if len(part) >= window:
            sums = np.cumsum(np.vstack([np.zeros((1, part.shape[1])), part.astype(np.float64)]), axis=0)
            lowest = np.minimum(lowest, ((sums[window:] - sums[:-window]) / window).min(axis=0))
    return np.where(np.isfinite(lowest), lowest, fallback)


@documented("darts", extra={"decop_k": DECOP_AUTO_DOC}, more={"compile": COMPILE})
class XCTFormerModel(MixedCovariatesTorchModel):
    def __init__(
        self,
        input_chunk_length: int,
        output_chunk_length: int,
        output_chunk_shift: int = 0,
        patch_len: int = 16,
        stride: int = 8,
        d_model: int = 32,
        n_heads: int = 2,
        d_ff: int = 64,
        e_layers: int = 2,
        dropout: float = 0.1,
        fc_dropout: float = 0.05,
        attn_dropout: float = 0.5,
        head_dropout: float = 0.0,
        decop_k: DecopK = None,
        use_mask: bool = True,
        activation: Literal["absact", "softmax", "absact_clipped"] = "absact",
        mixing: Literal["full", "time", "channel"] = "full",
        decop_variant: Literal["paper", "authors"] = "paper",
        max_attention_bytes: Optional[int] = DEFAULT_MAX_ATTENTION_BYTES,
        fused_attention: Optional[bool] = None,
        compile: CompileOption = False,
        use_static_covariates: bool = True,
        **kwargs,
    ) -> None:
        """XCTFormer: cross-channel and cross-time attention over patch tokens.

        Every component of the target series and of the covariates is cut into patches
        (``patch_len`` long, every ``stride`` steps); all (patch, channel) tokens form one
        sequence, and a stack of CRAB attention blocks models every cross-time and
        cross-channel pair directly: a learnable non-boolean mask on min-shifted scores and
        AbsAct, a signed row-wise absolute-sum normalisation, instead of softmax [1]_. For many
        channels, DeCoP (``decop_k``) compresses the N x N attention to N x k. Each input
        window is instance-normalised per channel inside the network; a per-channel linear head
        forecasts the target components only.

        The paper's settings: "M" (multivariate) is all columns as ``series``; "MS" is one
        target column as ``series`` and the other columns as ``past_covariates``. Use
        :meth:`from_preset` for the paper's hyperparameters and training recipe.

        This model supports past covariates (known for ``input_chunk_length`` points before
        prediction time), future covariates (known for ``input_chunk_length`` points before and
        ``output_chunk_length`` points after prediction time), static covariates, and
        probabilistic forecasting with :class:`~darts.utils.likelihood_models.torch.QuantileRegression`.
        Each past covariate component is a channel of tokens over the input window like a target,
        and each row of static covariates one token, so attention relates every target patch to
        every covariate patch; a decoder of the known future adds what the future covariates say,
        over the window and the horizon, to each step's forecast (docs/forecasting.md). Without
        future or static covariates the network is the paper's.

        Parameters
        ----------
        input_chunk_length
            Number of time steps in the past to take as a model input (per chunk). Applies to the target
            series and the covariates. Must be at least ``patch_len``.
        output_chunk_length
            Number of time steps predicted at once (per chunk) by the internal model. It is not the same as
            forecast horizon `n` used in `predict()`, which is the desired number of prediction points
            generated using either a one-shot- or autoregressive forecast. Setting `n <= output_chunk_length`
            prevents auto-regression.
        output_chunk_shift
            Optionally, the number of steps to shift the start of the output chunk into the future (relative to
            the input chunk end). This will create a gap between the input and output. Predictions will start
            `output_chunk_shift` steps after the end of the target `series`. If `output_chunk_shift` is set, the
            model cannot generate autoregressive predictions (`n > output_chunk_length`).
        {parameters}
        use_static_covariates
            Whether the model uses the target series' static covariates (numeric; encode categorical
            ones first, e.g. with Darts' ``StaticCovariatesTransformer``) when it has them: each row
            becomes one token. Default: ``True``.
        **kwargs
            Optional arguments to initialize the pytorch_lightning.Module, pytorch_lightning.Trainer, and
            Darts' :class:`TorchForecastingModel`.

        loss_fn
            PyTorch loss function used for training.
            This parameter will be ignored for probabilistic models if the ``likelihood`` parameter is specified.
            Default: ``torch.nn.MSELoss()``.
        likelihood
            A :class:`~darts.utils.likelihood_models.torch.QuantileRegression` for probabilistic forecasts
            (the network's instance normalisation is undone on every quantile). Default: ``None``.
        torch_metrics
            A torch metric or a ``MetricCollection`` used for evaluation. Default: ``None``.
        optimizer_cls
            The PyTorch optimizer class to be used. Default: ``torch.optim.Adam``.
        optimizer_kwargs
            Optionally, some keyword arguments for the PyTorch optimizer (e.g., ``{'lr': 1e-3}``). Default: ``None``.
            With ``torch.optim.Adam`` or ``AdamW`` and none of ``fused``, ``foreach``, ``differentiable``,
            ``capturable`` given, the optimizer is built with ``fused=True`` where torch has that kernel for
            the parameters' device (CUDA; CPU from torch 2.4): the same update in one pass; pass
            ``{'fused': False}`` for torch's default.
        lr_scheduler_cls
            Optionally, the PyTorch learning rate scheduler class to be used. Specifying ``None`` corresponds
            to using a constant learning rate. For ``torch.optim.lr_scheduler.OneCycleLR`` without
            ``total_steps`` or ``steps_per_epoch``, the run's total number of steps is filled in at fit time.
            Default: ``None``.
        lr_scheduler_kwargs
            Optionally, some keyword arguments for the PyTorch learning rate scheduler; ``"interval": "step"``
            steps it after every batch. Default: ``None``.
        use_reversible_instance_norm
            Whether to apply Darts' `RINorm` to the target features as well. XCTFormer already normalises every
            channel of each window inside the network, so this is rarely useful. Default: ``False``.
        batch_size
            Number of time series (input and output sequences) used in each training pass. Default: ``32``.
        n_epochs
            Number of epochs over which to train the model. Default: ``100``.
        model_name
            Name of the model. Used for creating checkpoints and saving tensorboard data. If not specified,
            defaults to the following string ``"YYYY-mm-dd_HH_MM_SS_torch_model_run_PID"``.
        work_dir
            Path of the working directory, where to save checkpoints and tensorboard summaries.
            Default: current working directory.
        log_tensorboard
            If set, use tensorboard to log the different parameters. Default: ``False``.
        nr_epochs_val_period
            Number of epochs to wait before evaluating the validation loss (if a validation
            ``TimeSeries`` is passed to the :func:`fit()` method). Default: ``1``.
        force_reset
            If set to ``True``, any previously-existing model with the same name will be reset (all checkpoints will
            be discarded). Default: ``False``.
        save_checkpoints
            Whether to automatically save the untrained model and checkpoints from training.
            To load the model from checkpoint, call :func:`XCTFormerModel.load_from_checkpoint()`. Default: ``False``.
        add_encoders
            Past or future covariates generated from the time index, e.g. ``{"datetime_attribute": {"future":
            ["hour", "dayofweek"]}}`` (see Darts' :class:`~darts.dataprocessing.encoders.SequentialEncoder`); each
            becomes a channel. Default: ``None``.
        random_state
            Controls the randomness of the weights initialization and reproducible forecasting.
        pl_trainer_kwargs
            Keyword arguments for the PyTorch Lightning trainer, e.g. ``{"accelerator": "gpu", "devices": [0]}``
            to train on a GPU, or ``{"callbacks": [...]}``. Default: ``None``.
        show_warnings
            Whether to show warnings raised from PyTorch Lightning. Default: ``False``.
        enable_finetuning
            Enables model fine-tuning (see Darts' :class:`TorchForecastingModel`). Default: ``None``.

        References
        ----------
        .. [1] I. Zexer and O. Azencot, "XCTFormer: Leveraging Cross-Channel and Cross-Time Dependencies
               for Enhanced Time-Series Analysis", Transactions on Machine Learning Research, 2026,
               https://openreview.net/forum?id=TEfyR4t0Tw

        Examples
        --------
        >>> from darts.datasets import ETTh1Dataset
        >>> from darts.dataprocessing.transformers import Scaler
        >>> from xct_estimators import XCTFormerModel
        >>> series = Scaler().fit_transform(ETTh1Dataset().load()[:2000].astype("float32"))
        >>> model = XCTFormerModel(
        ...     input_chunk_length=96, output_chunk_length=24, d_model=16, n_heads=2,
        ...     d_ff=32, e_layers=1, n_epochs=2, random_state=42,
        ... )
        >>> model.fit(series)
        >>> forecast = model.predict(24)
        >>> forecast.shape
        (24, 7, 1)
        >>> # the paper's ETTh1 hyperparameters and training recipe
        >>> model = XCTFormerModel.from_preset("ETTh1", output_chunk_length=96)
        """
        model_kwargs = {key: plain_number(val) for key, val in self.model_params.items()}
        for name in ("n_epochs", "batch_size"):
            if name in model_kwargs and not is_positive_int(model_kwargs[name]):
                raise ValueError(f"{name} must be a positive integer, got {model_kwargs[name]!r}.")
        super().__init__(**self._extract_torch_model_params(**model_kwargs))
        self.pl_module_params = self._extract_pl_module_params(**model_kwargs)

        for name in _ARCHITECTURE:  # as Darts' models keep theirs: one attribute each
            setattr(self, name, model_kwargs[name])
        compile_options(compile)  # checked now, applied when the network exists
        self.compile = compile

        likelihood = self.pl_module_params.get("likelihood")
        if likelihood is not None and not isinstance(likelihood, QuantileRegression):
            raise ValueError(
                f"XCTFormerModel supports likelihood=QuantileRegression(...), got "
                f"{type(likelihood).__name__}: the network de-normalises its outputs per channel, "
                "which is right for quantiles but not for distribution parameters such as a scale."
            )
        if decop_k is not None and decop_k != "auto":
            if not is_positive_int(decop_k):
                raise ValueError(f"decop_k must be None, 'auto' or a positive integer, got {decop_k!r}.")
        self._considers_static_covariates = use_static_covariates
        # Validate the architecture now (channel count unknown yet) rather than at fit time.
        self._network_config(n_channels=1, nr_params=1, decop_k=None, max_attention_bytes=None)

    # -- network -------------------------------------------------------------------------
    def _network_config(
        self, n_channels: int, nr_params: int, decop_k: Optional[int], max_attention_bytes, **covariates
    ) -> XCTFormerConfig:
        architecture = {**network_kwargs(self), "decop_k": decop_k, "max_attention_bytes": max_attention_bytes}
        return XCTFormerConfig(
            self.input_chunk_length, n_channels, self.output_chunk_length * nr_params, **architecture, **covariates
        )

    def _create_model(self, train_sample: TorchTrainingSample) -> nn.Module:
        width = lambda tensor: 0 if tensor is None else tensor.shape[1]  # noqa: E731
        n_targets = train_sample.past_target.shape[1]
        n_future = width(train_sample.historic_future_covariates)
        n_channels = n_targets + width(train_sample.past_covariates) + n_future
        static = train_sample.static_covariates  # (rows, features): a row per target component, or one
        covariates = dict(n_future_channels=n_future, future_len=self.output_chunk_length if n_future else 0)
        if static is not None:
            covariates.update(n_static_tokens=static.shape[0], static_features=static.shape[1])
        decop_k = auto_decop_k(n_channels) if self.decop_k == "auto" else self.decop_k
        nr_params = 1 if self.likelihood is None else self.likelihood.num_parameters
        config = self._network_config(n_channels, nr_params, decop_k, self.max_attention_bytes, **covariates)
        config.check_attention_memory(self.batch_size)
        module = _XCTFormerModule(
            network=config.__dict__.copy(), n_targets=n_targets, nr_params=nr_params, **self.pl_module_params
        )
        module.compile_options = compile_options(self.compile)
        module.net.set_statistics(**getattr(self, "_input_statistics", {}))
        return module

    def _setup_for_train(self, train_dataset, *args, **kwargs):
        if self.model is None:  # a new network: it standardises covariates with this data's statistics
            self._input_statistics = input_statistics(train_dataset, self.input_chunk_length)
        return super()._setup_for_train(train_dataset, *args, **kwargs)

    def _load_from_checkpoint(self, file_path, trusted=False, **kwargs):
        module = super()._load_from_checkpoint(file_path, trusted=trusted, **kwargs)
        module.compile_options = compile_options(getattr(self, "compile", False))  # saves before the switch
        return module

    @property
    def _ckpt_skipped_params(self) -> list[str]:
        # the weights are the same either way
        return [*super()._ckpt_skipped_params, "compile", "fused_attention", "max_attention_bytes"]

    @property
    def network_(self) -> XCTFormerNet:
        """The trained :class:`~xct_estimators.nn.XCTFormerNet` (after ``fit``)."""
        if self.model is None:
            raise NotFittedError("The model has not been fitted yet: call fit() first.")
        return self.model.net

    network = network_

    @property
    def channel_names_(self) -> list[str]:
        """The network's channels: the target components, then the past covariates', then the future
        covariates' (after ``fit``)."""
        self.network_  # noqa: B018 (raises before fit)
        parts = getattr(self, "_fitted_components", None)  # absent from saves made before it
        if parts is None:
            series = (self.training_series, self.past_covariate_series, self.future_covariate_series)
            parts = [None if s is None else list(s.components) for s in series]
        return [str(name) for part in parts if part for name in part]

    @property
    def supports_multivariate(self) -> bool:
        return True

    @property
    def supports_static_covariates(self) -> bool:
        return True

    # -- input checks --------------------------------------------------------------------
    def fit(
        self,
        series,
        past_covariates=None,
        future_covariates=None,
        val_series=None,
        val_past_covariates=None,
        val_future_covariates=None,
        *args,
        **kwargs,
    ):
        check_finite(series, "series")
        for name, covariates in (("past_covariates", past_covariates), ("future_covariates", future_covariates)):
            check_finite(covariates, name)
            check_same_components(covariates, name)
        check_same_components(series, "series")
        if self._considers_static_covariates:
            check_static_finite(series, "series")
            check_static_finite(val_series, "val_series")
            self._fitted_static_columns = static_columns(series)
        check_finite(val_series, "val_series")
        check_finite(val_past_covariates, "val_past_covariates")
        check_finite(val_future_covariates, "val_future_covariates")
        chunks = (self.input_chunk_length, self.output_chunk_length, self.output_chunk_shift)
        check_long_enough(series, "series", *chunks)
        check_long_enough(val_series, "val_series", *chunks)
        check_covariates_sampled_like(series, past_covariates, "past_covariates")
        check_covariates_sampled_like(series, future_covariates, "future_covariates")
        dtype = get_single_series(series).dtype if series is not None else None  # covariates take the target's
        past_covariates, future_covariates = as_dtype(past_covariates, dtype), as_dtype(future_covariates, dtype)
        validation = (val_series, as_dtype(val_past_covariates, dtype), as_dtype(val_future_covariates, dtype))
        # Darts keeps no series of a panel (a list): the channels' names, from its first series
        given = (series, past_covariates, future_covariates)
        components = [None if s is None else list(get_single_series(s).components) for s in given]
        before = getattr(self, "_fitted_components", None)
        if self.model is not None and before is not None:  # training goes on: the network reads columns by place
            kinds = ("past_covariates", "future_covariates")
            for name, old, new in zip(kinds, before[1:], components[1:], strict=True):
                if old is not None and new is not None and len(old) == len(new):
                    check_names(new, old, name, "components", against="the first fit")
        self._fitted_components = components
        return super().fit(series, past_covariates, future_covariates, *validation, *args, **kwargs)

    @classmethod
    def load(
        cls,
        path: str,
        pl_trainer_kwargs: Optional[dict] = None,
        trusted: bool = False,
        compile: Optional[CompileOption] = None,
        **kwargs,
    ):
        """Darts' ``load`` (safe unpickling unless ``trusted``), with one clear error for a file that
        is not a complete save (truncated, empty, corrupted, or another model's).

        ``compile``: ``None`` keeps the saved model's setting; ``True``, ``False`` or a dict of
        ``torch.compile`` arguments replaces it (the weights are the same either way)."""
        if compile is not None:
            compile_options(compile)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"No saved model at {path}: pass the path given to model.save(...).")
        try:
            model = super().load(path, pl_trainer_kwargs=pl_trainer_kwargs, trusted=trusted, **kwargs)
        except Exception as error:
            if KnownFutureDecoder.REFIT in str(error):  # a complete save, of a decoder this version lacks
                raise ValueError(f"{path}: {error}") from error
            raise ValueError(
                f"{path} (or its checkpoint {path}.ckpt) is not a complete XCTFormerModel save: loading failed "
                f"with {type(error).__name__}: {error}. Save the model again with model.save(path); a model with "
                "future or static covariates saved by an earlier version must be refit; files from elsewhere are "
                "loaded safely and refused when they contain anything but a model."
            ) from error
        if not isinstance(model, cls):
            raise ValueError(f"{path} holds a {type(model).__name__}, not an {cls.__name__}: load it with its class.")
        _check_checkpoint_matches(model, path)
        if compile is not None:
            model.compile = compile
            set_saved_param(model, "compile", compile)
            if model.model is not None:
                model.model.compile_options = compile_options(compile)
        return model

    def load_weights_from_checkpoint(self, *args, **kwargs):
        """Darts' ``load_weights_from_checkpoint`` (``load_weights`` calls it): weights it refuses
        leave the model as it was, not a fresh network with part of the file's weights."""
        before = self.__dict__.copy()
        try:
            return super().load_weights_from_checkpoint(*args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def to_onnx(self, path: Optional[str] = None, **kwargs):
        """Darts' ``to_onnx``: the fitted network as an ONNX file for torch-free serving (e.g.
        ``darts.utils.onnx.run_onnx_prediction`` with ``onnxruntime``; see docs/forecasting.md).

        The export runs CRAB's plain path (PyTorch operations; ONNX has no form for the fused
        operator) in inference mode; the forecasts equal ``predict``'s to float32 rounding.
        Needs ``pip install 'xct-estimators[onnx]'``."""
        if self.model is None:
            raise NotFittedError("The model has not been fitted yet: call fit() before to_onnx().")
        optional_import("onnx", "onnxscript", extra="onnx", purpose="to_onnx")
        with plain_attention(self.model), uncompiled(self.model):
            return super().to_onnx(path, **kwargs)

    def _target_dtype(self, series):
        """The dtype covariates are cast to: the target's (given, or fitted)."""
        given = series if series is not None else self.training_series
        return None if given is None else get_single_series(given).dtype

    def predict(self, n, series=None, past_covariates=None, future_covariates=None, *args, **kwargs):
        if not is_positive_int(n):
            raise ValueError(f"n must be a positive integer, the number of steps to forecast; got {n!r}.")
        check_prediction_inputs(self, series, past_covariates, future_covariates)
        dtype = self._target_dtype(series)
        covariates = (as_dtype(past_covariates, dtype), as_dtype(future_covariates, dtype))
        return super().predict(n, series, *covariates, *args, **kwargs)

    def predict_from_dataset(self, n, dataset, trainer=None, batch_size=None, verbose=None, **kwargs):
        # A data-parallel strategy would split the prediction windows across its processes.
        if trainer is None and is_distributed(self.trainer_params):
            params = single_device(self.trainer_params)
            if verbose is not None:
                params.update(enable_progress_bar=verbose, enable_model_summary=False)
            trainer = init_trainer(self, params, self.n_epochs)
        return super().predict_from_dataset(n, dataset, trainer, batch_size, verbose, **kwargs)

    def _optimized_historical_forecasts(
        self,
        series,
        past_covariates=None,
        future_covariates=None,
        num_samples: int = 1,
        start=None,
        start_format="value",
        forecast_horizon: int = 1,
        stride: int = 1,
        overlap_end: bool = False,
        last_points_only: bool = True,
        verbose: bool = False,
        show_warnings: bool = True,
        predict_likelihood_parameters: bool = False,
        random_state=None,
        predict_kwargs=None,
    ):
        # retrain=False: cut the windows and run the module directly (see historical_forecasts.py)
        dtype = self._target_dtype(series)
        past_covariates, future_covariates = as_dtype(past_covariates, dtype), as_dtype(future_covariates, dtype)
        checked = check_prediction_inputs(self, series, past_covariates, future_covariates)
        if not historical_forecasts.applies(
            self, num_samples, forecast_horizon, predict_likelihood_parameters, predict_kwargs
        ):
            windows = dict(start=start, start_format=start_format, forecast_horizon=forecast_horizon, stride=stride)
            windows.update(overlap_end=overlap_end, last_points_only=last_points_only)
            return super()._optimized_historical_forecasts(
                series,
                past_covariates,
                future_covariates,
                num_samples,
                **windows,
                verbose=verbose,
                show_warnings=show_warnings,
                predict_likelihood_parameters=predict_likelihood_parameters,
                random_state=random_state,
                predict_kwargs=predict_kwargs,
            )
        windows = (start, start_format, forecast_horizon, stride, overlap_end, last_points_only)
        series, covariates, _ = checked  # as lists, the fitted covariates filled in as Darts does
        return historical_forecasts.direct_historical_forecasts(
            self, series, covariates, *windows, show_warnings, predict_kwargs
        )

    # -- the paper's recipe --------------------------------------------------------------
    @classmethod
    def from_preset(
        cls,
        dataset: str,
        output_chunk_length: int,
        keep_best_val_weights: bool = True,
        recipe: str = "paper",
        **overrides,
    ) -> XCTFormerModel:
        """An XCTFormerModel with the paper's hyperparameters and training recipe for ``dataset``
        (or, with ``recipe="searched"``, those a recorded look-back search found).

        The recipe (App. B): input length 96 (a searched recipe: its own), the preset's architecture,
        batch size and epochs;
        Adam with ``OneCycleLR`` (``max_lr`` = the preset's learning rate, ``pct_start=0.4``,
        stepped after every batch, torch's defaults otherwise, so Adam's beta1 cycles between
        0.95 and 0.85); MSE loss; no early stopping; with ``val_series`` given to ``fit``, the
        weights of the epoch with the lowest validation MSE are kept
        (:class:`KeepBestValidationWeights`). The paper reports MSE on standardised data: scale
        the series (e.g. with Darts' ``Scaler`` fitted on the training split) before fitting.

        Parameters
        ----------
        dataset
            A forecasting row of the paper's table: ``"ETTh1"``, ``"ETTh2"``, ``"ETTm1"``, ``"ETTm2"``,
            ``"Weather"``, ``"Traffic"``, ``"ECL"`` (or ``"Electricity"``).
        output_chunk_length
            The forecast horizon (the paper: 96, 192, 336, 720).
        keep_best_val_weights
            Whether to restore the best-validation epoch's weights after ``fit``. Default: ``True``.
        recipe
            ``"paper"`` (default): the paper's row, input length 96. ``"searched"``: beyond the
            paper, the best trial of the project's recorded look-back search for ``dataset`` at
            the searched horizon nearest ``output_chunk_length`` (the shorter on a tie): its own
            input length, patch, width and rate, the same training recipe
            (``xct_estimators.nn.presets.searched_horizon`` names the search's horizon; docs/forecasting.md,
            "A longer look-back").
        **overrides
            Any :class:`XCTFormerModel` argument, replacing the preset's value (``pl_trainer_kwargs``
            is merged, its ``callbacks`` extended).
        """
        if recipe not in RECIPES:
            raise ValueError(f"recipe={recipe!r}: choose {' or '.join(map(repr, RECIPES))}.")
        paper = recipe == "paper"
        preset = get_preset(dataset, "forecast") if paper else searched_preset(dataset, output_chunk_length)
        params = {**preset.estimator_params("input_chunk_length"), **overrides}
        return cls.from_params(
            output_chunk_length=output_chunk_length, keep_best_val_weights=keep_best_val_weights, **params
        )

    @classmethod
    def from_params(
        cls,
        input_chunk_length: int,
        output_chunk_length: int,
        learning_rate: float = 1e-3,
        keep_best_val_weights: bool = True,
        **kwargs,
    ) -> XCTFormerModel:
        """An XCTFormerModel with the paper's training recipe and the given hyperparameters.

        The recipe of :meth:`from_preset` (Adam, ``OneCycleLR`` with ``max_lr=learning_rate`` and
        ``pct_start=0.4`` stepped per batch, MSE loss, best-validation weights kept) around any
        architecture: this is how the parameters found by :func:`xct_estimators.tune.search`
        (``best_params``) become a model.

        Parameters
        ----------
        input_chunk_length, output_chunk_length
            As for :class:`XCTFormerModel`.
        learning_rate
            Adam's learning rate and the one-cycle schedule's peak. Default: ``1e-3``.
        keep_best_val_weights
            Whether to restore the best-validation epoch's weights after ``fit``. Default: ``True``.
        **kwargs
            Any other :class:`XCTFormerModel` argument (``pl_trainer_kwargs`` is merged, its
            ``callbacks`` extended).
        """
        recipe = paper_recipe(learning_rate, keep_best_val_weights, kwargs.pop("pl_trainer_kwargs", None))
        params = {**recipe, **kwargs}  # an argument given wins over the recipe's
        return cls(input_chunk_length=input_chunk_length, output_chunk_length=output_chunk_length, **params)


_ARCHITECTURE = hyperparameters_of(XCTFormerModel)
add_safe_globals([XCTFormerModel, _XCTFormerModule, KeepBestValidationWeights])
