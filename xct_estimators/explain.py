"""
Dependency maps: which channels and lags the learned CRAB mask says matter
-------------------------------------------------------------------------

CRAB multiplies every (query token, key token) score by a learned mask entry ``M[h, i, j]``.
Tokens are (patch, channel) pairs, flattened patch-major (token ``p * C + c``), so the mask of
one layer and head is a ``P x C x P x C`` tensor: how strongly patch ``p`` of channel ``c``
may draw on patch ``p'`` of channel ``c'``. :func:`dependency_map` returns it labelled with the
channel names of the data the model was fitted on; :func:`channel_dependencies` and
:func:`lag_dependencies` give the paper's summaries (mean ``|M|`` per channel pair, per patch lag);
:func:`horizon_dependency_map` gives the filters through which the known-future decoder
reads the future covariates; :func:`attention_map` gives the attention weights
the model actually used for one input window, through forward hooks (the forward path is
unchanged); :func:`plot_dependency_map` draws them.

DeCoP models have no N x N mask: :func:`dependency_map` says so and points to
:func:`attention_map`, which returns their compressed N x k attention.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
import torch
import xarray as xr

from .nn import XCTFormerNet
from .nn.attention import CRABAttention, DeCoPAttention
from .nn.compiling import uncompiled

MASK_DIMS = ("layer", "head", "query_patch", "query_channel", "key_patch", "key_channel")


def _net_and_names(model) -> tuple[XCTFormerNet, Optional[list[str]]]:
    """The trained network of any of the library's estimators (their public ``network_`` and
    ``channel_names_``), or a bare network without names."""
    if isinstance(model, XCTFormerNet):
        return model, None
    if not hasattr(type(model), "network_"):
        raise TypeError(
            f"Cannot find an XCTFormer network in a {type(model).__name__}: pass a fitted XCTFormerModel, "
            "XCTFormerForecaster, XCTFormerImputer, XCTFormerAnomalyDetector, XCTFormerScorer, "
            "ReconstructionEngine or an XCTFormerNet."
        )
    return model.network_, model.channel_names_


def _channel_names(net: XCTFormerNet, found: Optional[list[str]], given: Optional[list[str]]) -> list[str]:
    names = list(given) if given is not None else found
    if names is None:
        names = [f"channel {i}" for i in range(net.config.n_channels)]
    if len(names) != net.config.n_channels:
        raise ValueError(f"Got {len(names)} channel names for a network of {net.config.n_channels} channels.")
    return [str(n) for n in names]


def dependency_map(model, channel_names: Optional[list[str]] = None) -> xr.DataArray:
    """The learned CRAB mask of every layer and head, labelled.

    Returns an ``xarray.DataArray`` with dimensions ``layer, head, query_patch, query_channel,
    key_patch, key_channel``; ``channel_names`` overrides the names found in the fitted model.
    """
    net, found = _net_and_names(model)
    config = net.config
    if config.decop_k is not None:
        raise ValueError(
            f"This model uses DeCoP (decop_k={config.decop_k}): its attention is compressed to N x k and it "
            "learns no N x N mask. Use xct_estimators.explain.attention_map(model, window) for the compressed "
            "attention weights of an input window."
        )
    if config.mixing != "full" or not config.use_mask:
        raise ValueError(
            f"The model has no full (patch, channel) mask (mixing={config.mixing!r}, use_mask={config.use_mask}): "
            "dependency maps need full CRAB attention."
        )
    names = _channel_names(net, found, channel_names)[: config.n_token_channels]  # future covariates: no tokens
    p, c = config.patch_num, config.n_token_channels
    window = slice(0, config.n_grid_tokens)  # static rows follow
    values = _masks(net)[..., window, window].reshape(-1, config.n_heads, p, c, p, c)
    coords = {"layer": np.arange(len(values)), "head": np.arange(config.n_heads)}
    coords.update(query_patch=np.arange(p), query_channel=names, key_patch=np.arange(p), key_channel=names)
    description = {"description": "learned CRAB mask M; |M| is the dependency strength"}
    return xr.DataArray(values, dims=MASK_DIMS, coords=coords, name="mask", attrs=description)


def horizon_dependency_map(model) -> xr.DataArray:
    """How far back the known-future decoder reads: the weight of each learned filter on each
    feature of the covariates ``lag`` steps before the step whose effect it gives (0: the step
    itself; a horizon step's reach back into the window). Dimensions ``filter, lag, feature``. A
    feature is a learned function of one step's standardised covariates; each target channel
    decodes the filters' responses with its own context into an effect, beside a gain on its level
    read off the step's features alone (see docs/forecasting.md)."""
    net, _ = _net_and_names(model)
    config = net.config
    if not config.n_future_channels:
        raise ValueError("The model has no future covariates, so no known-future decoder: use dependency_map(model).")
    weight = net.known_future.filters.weight.detach().cpu().numpy()  # (filters, E, L): oldest step first
    values = weight[..., ::-1].transpose(0, 2, 1)
    coords = {"filter": np.arange(len(values)), "lag": np.arange(config.seq_len), "feature": np.arange(values.shape[2])}
    description = {"description": "known-future decoder: filter weight on a covariate feature lag steps back"}
    return xr.DataArray(values, dims=("filter", "lag", "feature"), coords=coords, name="filter", attrs=description)


def _masks(net: XCTFormerNet) -> np.ndarray:
    """Every layer's learned mask, (layers, heads, N, N)."""
    return np.stack([layer.attention.mask.detach().cpu().numpy() for layer in net.encoder.layers])


def channel_dependencies(dependency: xr.DataArray) -> pd.DataFrame:
    """Mean ``|M|`` per (query channel, key channel) block, over layers, heads and patches: the
    paper's channel x channel heatmap. Rows: query channel (who reads), columns: key channel."""
    strength = np.abs(dependency).mean(dim=[d for d in dependency.dims if d not in ("query_channel", "key_channel")])
    return strength.to_pandas()


def lag_dependencies(dependency: xr.DataArray) -> pd.Series:
    """Mean ``|M|`` per patch lag (query patch - key patch; positive = the key lies in the past)."""
    strength = np.abs(dependency).mean(dim=["layer", "head", "query_channel", "key_channel"]).values
    p = strength.shape[0]
    lags = np.subtract.outer(np.arange(p), np.arange(p))
    return pd.Series({int(lag): float(strength[lags == lag].mean()) for lag in range(-(p - 1), p)}, name="mean |M|")


def attention_map(model, window, past_covariates=None, channel_names: Optional[list[str]] = None) -> xr.DataArray:
    """The attention weights the model used for one input window (after AbsAct, before dropout).

    ``window``: a ``(seq_len, channels)`` array or DataFrame, or a Darts ``TimeSeries`` whose last
    ``seq_len`` steps are used (with ``past_covariates``' matching steps appended as channels, as
    ``XCTFormerModel`` does). Full CRAB: dimensions ``layer, head, query_patch, query_channel,
    key_patch, key_channel``; DeCoP: ``layer, head, query_patch, query_channel, slot`` (the k
    compressed keys). Captured with forward hooks; the network's forward path is unchanged.
    """
    net, found = _net_and_names(model)
    config = net.config
    values = _window_values(window, past_covariates, config.seq_len)
    if values.shape != (config.seq_len, config.n_channels):
        raise ValueError(
            f"The window has shape {values.shape}; the network reads ({config.seq_len}, {config.n_channels})."
        )
    if config.mixing != "full":
        raise ValueError(f"attention_map needs mixing='full', got {config.mixing!r}.")
    names = _channel_names(net, found, channel_names)
    captured: list[torch.Tensor] = []

    def hook(module, inputs, output):
        weights, _ = module.attention_weights(inputs[0])
        captured.append(weights.detach().cpu())

    handles = [
        layer.attention.register_forward_hook(hook)
        for layer in net.encoder.layers
        if isinstance(layer.attention, (CRABAttention, DeCoPAttention))
    ]
    was_training = net.training
    parameter = next(net.parameters())
    device = parameter.device
    try:
        net.eval()
        with torch.no_grad(), uncompiled(net):  # the hooks run in eager mode, every time
            net(torch.as_tensor(values, dtype=parameter.dtype, device=device)[None])  # float64 when trained so
    finally:
        for handle in handles:
            handle.remove()
        net.train(was_training)
    p, c = config.patch_num, config.n_channels
    weights = torch.stack([w[0] for w in captured]).numpy()  # (layers, H, N, N or k)
    coords: dict[str, Any] = {
        "layer": np.arange(len(captured)),
        "head": np.arange(config.n_heads),
        "query_patch": np.arange(p),
        "query_channel": names,
    }
    if config.decop_k is not None:
        weights = weights.reshape(len(captured), config.n_heads, p, c, config.decop_k)
        return xr.DataArray(weights, dims=(*MASK_DIMS[:4], "slot"), coords=coords, name="attention")
    weights = weights.reshape(len(captured), config.n_heads, p, c, p, c)
    coords.update(key_patch=np.arange(p), key_channel=names)
    return xr.DataArray(weights, dims=MASK_DIMS, coords=coords, name="attention")


def _window_values(window, past_covariates, seq_len: int) -> np.ndarray:
    if hasattr(window, "values") and callable(window.values) and hasattr(window, "components"):  # TimeSeries
        values = window.values(copy=False)[-seq_len:]
        if past_covariates is not None:
            covariates = past_covariates.slice_intersect(window[-seq_len:]).values(copy=False)
            values = np.concatenate([values, covariates], axis=1)
        return np.asarray(values, dtype=np.float32)
    return np.asarray(window, dtype=np.float32)


def plot_dependency_map(dependency: xr.DataArray, path=None, title: Optional[str] = None):
    """The mask grid (mean ``|M|`` over layers and heads, tokens ordered patch by patch, lines at
    patch boundaries) beside the channel x channel heatmap; saved to ``path`` when given."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    strength = np.abs(dependency).mean(dim=["layer", "head"])
    p, c = strength.sizes["query_patch"], strength.sizes["query_channel"]
    grid = strength.transpose("query_patch", "query_channel", "key_patch", "key_channel").values.reshape(p * c, p * c)
    channels = channel_dependencies(dependency)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.8), gridspec_kw={"width_ratios": [1.25, 1]})
    image = left.imshow(grid, cmap="viridis", interpolation="nearest")
    for boundary in np.arange(c, p * c, c) - 0.5:
        left.axhline(boundary, color="white", lw=0.3)
        left.axvline(boundary, color="white", lw=0.3)
    ticks = np.arange(p) * c + (c - 1) / 2
    left.set_xticks(ticks, [f"p{i}" for i in range(p)], fontsize=7)
    left.set_yticks(ticks, [f"p{i}" for i in range(p)], fontsize=7)
    left.set_xlabel("key token (patch blocks; channels inside each block)")
    left.set_ylabel("query token")
    left.set_title("mean |mask| per token pair")
    fig.colorbar(image, ax=left, fraction=0.046)
    heat = right.imshow(channels.to_numpy(), cmap="magma", interpolation="nearest")
    right.set_xticks(range(c), channels.columns, rotation=60, ha="right", fontsize=8)
    right.set_yticks(range(c), channels.index, fontsize=8)
    right.set_xlabel("key channel (is read)")
    right.set_ylabel("query channel (reads)")
    right.set_title("mean |mask| per channel pair")
    fig.colorbar(heat, ax=right, fraction=0.046)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig
