"""sktime transformer that fills missing values with XCTFormer reconstructions."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sktime.transformations.base import BaseTransformer

from ..nn import DEFAULT_MAX_ATTENTION_BYTES
from ..nn.hyperparameters import RECONSTRUCTION_DEFAULTS, documented
from ..nn.requirements import MIN_TORCH_TEXT
from ..reconstruction import (
    DEFAULT_FILL,
    DEFAULT_LEARNING_RATE,
    DEFAULT_MAX_EPOCHS,
    DEFAULT_PATIENCE,
    DEFAULT_VALIDATION_FRACTION,
    TRAINING_PARAMETERS,
    preset_params,
)
from ._engine_params import TEST_PARAMS, FittedNetwork, build_engine, store_parameters
from ._frames import in_fitted_order


@documented("sktime", more=TRAINING_PARAMETERS, own_words=("mask_rate", "fill"))  # no anomaly mode here
class XCTFormerImputer(FittedNetwork, BaseTransformer):
    """Impute missing values with XCTFormer, a cross-channel, cross-time transformer.

    ``fit`` trains the network on windows of ``X`` to reconstruct points hidden at random
    (``mask_rate`` of the observed points per window, loss on the hidden points only; NaNs in
    ``X`` are treated as unobserved). ``transform`` returns ``X`` with the same index and columns,
    every NaN filled from overlapping sliding-window reconstructions, and every observed value
    returned unchanged.

    Parameters
    ----------
    window_length : int, default=96
        Length of the windows the network reconstructs (the paper: 1024). ``X`` in ``fit`` must
        be at least this long; shorter frames given to ``transform`` later are imputed as the
        continuation of the training data (with a warning).
    mask_rate : float, default=0.25
        Share of observed points hidden in each training window (the paper: 0.125 to 0.5).
    {parameters}
    fill : {"zero", "linear"}, default="linear"
        What the network sees at missing points: a per-window linear interpolation of the
        observed points (measured better on ETTh1 at every mask rate, ``benchmarks/imputer_defaults.py``) or
        zero after instance normalisation with the mask passed to the network (the paper).

    Attributes
    ----------
    engine_ : ReconstructionEngine
        The trained reconstruction engine.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from xct_estimators import XCTFormerImputer
    >>> t = np.arange(600)
    >>> X = pd.DataFrame({"a": np.sin(t / 8), "b": np.cos(t / 8)})
    >>> X.iloc[::7, 0] = np.nan
    >>> Xt = XCTFormerImputer(window_length=48, n_epochs=3).fit_transform(X)  # doctest: +SKIP
    """

    _tags = {
        "authors": ["xct-estimators developers"],
        "maintainers": ["xct-estimators developers"],
        "scitype:transform-input": "Series",
        "scitype:transform-output": "Series",
        "scitype:instancewise": True,
        "X_inner_mtype": "pd.DataFrame",
        "y_inner_mtype": "None",
        "fit_is_empty": False,
        "capability:missing_values": True,
        "capability:missing_values:removes": True,
        # As sktime's own Imputer: in TransformedTargetForecaster, forecasts are not "un-imputed".
        "capability:inverse_transform": True,
        "skip-inverse-transform": True,
        "capability:multivariate": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "python_dependencies": [f"torch>={MIN_TORCH_TEXT}", "pytorch-lightning"],
    }

    def __init__(
        self,
        window_length=96,
        patch_len=16,
        stride=8,
        d_model=32,
        n_heads=2,
        d_ff=64,
        e_layers=2,
        dropout=0.1,
        fc_dropout=0.05,
        attn_dropout=RECONSTRUCTION_DEFAULTS["attn_dropout"],
        decop_k=None,
        use_mask=True,
        activation="absact",
        mixing="full",
        n_epochs=DEFAULT_MAX_EPOCHS,
        batch_size=32,
        learning_rate=DEFAULT_LEARNING_RATE,
        patience=DEFAULT_PATIENCE,
        validation_fraction=DEFAULT_VALIDATION_FRACTION,
        patience_after_warmup=True,
        mask_rate=0.25,
        fill=DEFAULT_FILL,
        window_stride=None,
        train_stride=1,
        random_state=None,
        accelerator="auto",
        devices="auto",
        precision="32",
        progress_bar=False,
        max_attention_bytes=DEFAULT_MAX_ATTENTION_BYTES,
        fused_attention=None,
        inference_device=None,
        pl_trainer_kwargs=None,
        compile=False,
    ):
        store_parameters(self, locals())
        super().__init__()

    @classmethod
    def from_preset(cls, dataset, **overrides):
        """An imputer with the paper's imputation hyperparameters for ``dataset``.

        The paper's input is zeros at hidden points: pass ``fill="zero"`` to reproduce it.
        """
        return cls(**{**preset_params(dataset, "impute"), **overrides})

    def _fit(self, X, y=None):
        self.columns_ = list(X.columns)
        self.engine_ = build_engine(self).fit(X.to_numpy(np.float64))
        return self

    def _transform(self, X, y=None):
        columns = list(X.columns)
        if columns != self.columns_:  # the same columns in another order: imputed in fit's, returned in X's
            return self._transform(in_fitted_order(X, self.columns_, "the imputer"))[columns]
        values = X.to_numpy(np.float64)
        self.engine_.check_values(values, fitting=False)  # channels, length, inf, empty columns
        missing = np.isnan(values)
        if not missing.any():
            return X.copy()
        reconstruction = pd.DataFrame(self.engine_.reconstruct(values), index=X.index, columns=X.columns)
        return X.mask(missing, reconstruction)  # observed values are kept as they are

    def _inverse_transform(self, X, y=None):
        return X  # imputation has no inverse; pipelines skip it (skip-inverse-transform)

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Tiny settings (one epoch, short windows) for sktime's estimator checks."""
        return [dict(TEST_PARAMS), dict(TEST_PARAMS, mask_rate=0.5, decop_k=4)]
