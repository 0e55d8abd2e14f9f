"""A direct path for ``XCTFormerModel.historical_forecasts(retrain=False)``.

Darts' generic path builds an inference dataset sample by sample and runs Lightning's predict
loop, whose per-window bookkeeping costs more than a small XCTFormer's forward pass. Here the
windows are cut from one tensor per series and go through the module in batches; only the
returned ``TimeSeries`` are built per window (the API returns one per forecast). Darts still
decides which windows exist (its own bounds helper), so both paths forecast the same windows.
Anything this path does not cover (sampling, likelihood parameters, encoders, a horizon
beyond ``output_chunk_length``, an output shift) goes through Darts unchanged.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch
from darts import TimeSeries
from darts.utils.data.torch_datasets.utils import PLModuleInput
from darts.utils.timeseries_generation import generate_index

from ._darts_private import dataset_bounds

# predict() arguments that change how the forward pass runs: leave those to Darts.
_GENERIC_ONLY = ("mc_dropout", "trainer", "dataloader_kwargs", "n_jobs", "roll_size")


def applies(model, num_samples: int, forecast_horizon: int, predict_likelihood_parameters: bool, predict_kwargs):
    return (
        model.model is not None
        and not model.model.net.config.has_covariates  # this path cuts past-window inputs only
        and num_samples == 1
        and not predict_likelihood_parameters
        and model.likelihood is None
        and (model.encoders is None or not model.encoders.encoding_available)
        and model.output_chunk_shift == 0
        and forecast_horizon <= model.output_chunk_length
        and not any((predict_kwargs or {}).get(key) for key in _GENERIC_ONLY)
    )


@torch.inference_mode()
def direct_historical_forecasts(
    model,
    series: list[TimeSeries],
    past_covariates: Optional[list[TimeSeries]],
    start,
    start_format: str,
    forecast_horizon: int,
    stride: int,
    overlap_end: bool,
    last_points_only: bool,
    show_warnings: bool,
    predict_kwargs: Optional[dict[str, Any]],
) -> list:
    """One list of forecasts (or one last-points series) per target series, like Darts."""
    windows = dict(start=start, start_format=start_format, forecast_horizon=forecast_horizon, stride=stride)
    data = dict(model=model, series=series, past_covariates=past_covariates)
    bounds, _ = dataset_bounds(**data, **windows, overlap_end=overlap_end, show_warnings=show_warnings)
    module = model.model
    parameter = next(module.parameters())
    module.compile_network(parameter.device)
    batch_size = (predict_kwargs or {}).get("batch_size") or model.batch_size
    in_len = model.input_chunk_length
    was_training = module.training
    module.eval()
    try:
        out = []
        for i, target in enumerate(series):
            starts = np.arange(bounds[i, 0], bounds[i, 1] + 1, stride)
            covariates = past_covariates[i] if past_covariates is not None else None
            values = _windows_source(target, covariates, in_len, starts)
            predictions = _forward(
                module, values, target.n_components, starts - starts[0], in_len, forecast_horizon, batch_size, parameter
            )
            out.append(_to_series(target, predictions, starts, forecast_horizon, stride, last_points_only))
        return out
    finally:
        module.train(was_training)


def _windows_source(target: TimeSeries, covariates: Optional[TimeSeries], in_len: int, starts: np.ndarray):
    """(time, channels) array covering every window's input: target columns, then covariates."""
    first, last = int(starts[0]) - in_len, int(starts[-1])
    values = target.values(copy=False)[first:last]
    if covariates is not None:
        offset = covariates.get_index_at_point(target.time_index[first])
        cov = covariates.values(copy=False)[offset : offset + len(values)]
        values = np.concatenate([values, cov.astype(values.dtype, copy=False)], axis=1)
    return values


def _forward(module, values, n_targets, window_starts, in_len, horizon, batch_size, parameter) -> np.ndarray:
    source = torch.as_tensor(values, dtype=parameter.dtype, device=parameter.device)
    offsets = torch.arange(in_len, device=parameter.device)
    window_starts = torch.as_tensor(window_starts, device=parameter.device)
    outputs = []
    for i in range(0, len(window_starts), batch_size):
        x = source[window_starts[i : i + batch_size, None] + offsets]  # (batch, in_len, channels)
        covariates = x[:, :, n_targets:] if x.shape[2] > n_targets else None
        batch = PLModuleInput(past_target=x[:, :, :n_targets], past_covariates=covariates)
        prediction = module(batch).prediction  # (batch, output_chunk_length, targets, 1)
        outputs.append(prediction[:, :horizon, :, 0].cpu())
    return torch.cat(outputs).numpy()


def _to_series(target, predictions, starts, horizon, stride, last_points_only):
    schema = target.schema(copy=False)
    index = generate_index(
        start=target.start_time(), length=int(starts[-1]) + horizon, freq=target.freq, name=target.time_index.name
    )
    common = dict(components=schema["columns"], static_covariates=schema["static_covariates"], copy=False)
    common.update(hierarchy=schema["hierarchy"], metadata=schema["metadata"])
    if last_points_only:
        times = generate_index(
            start=index[int(starts[0]) + horizon - 1],
            length=len(starts),
            freq=target.freq * stride,
            name=target.time_index.name,
        )
        return TimeSeries(times=times, values=predictions[:, -1], **common)
    return [
        TimeSeries(times=index[start : start + horizon], values=window, **common)
        for start, window in zip(starts.tolist(), predictions, strict=True)
    ]
