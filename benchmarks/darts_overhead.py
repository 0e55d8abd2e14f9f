"""What Darts adds on top of the bare network: training epoch and historical forecasts.

Times one training epoch through ``XCTFormerModel.fit`` against a bare torch loop (same
module, same windows, same batch size, Adam + MSE), and ``historical_forecasts(retrain=False,
stride=1, last_points_only=False)`` against bare batched inference over the same windows.
Prints the wall times and their ratios (goal: <= 1.15). A benchmark, not a test.

    python -m benchmarks.darts_overhead [--preset ETTh1] [--rows 8640] [--threads 2]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import pytorch_lightning as pl
import torch
from darts import TimeSeries

from xct_estimators import XCTFormerModel


class EpochTimer(pl.Callback):
    def __init__(self):
        self.seconds = []

    def on_train_epoch_start(self, trainer, pl_module):
        self._start = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module):
        self.seconds.append(time.perf_counter() - self._start)


def synthetic(rows: int, channels: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(rows)[:, None]
    periods = rng.uniform(8, 200, channels)
    return (np.sin(2 * np.pi * t / periods) + 0.1 * rng.standard_normal((rows, channels))).astype(np.float32)


def bare_epoch(net, windows: torch.Tensor, in_len: int, batch_size: int, lr: float) -> float:
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    order = torch.randperm(len(windows))
    net.train()
    start = time.perf_counter()
    for i in range(0, len(windows), batch_size):
        batch = windows[order[i : i + batch_size]]
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(net(batch[:, :in_len]), batch[:, in_len:])
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def bare_inference(net, windows: torch.Tensor, in_len: int, batch_size: int) -> float:
    net.eval()
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(windows), batch_size):
            net(windows[i : i + batch_size, :in_len])
    return time.perf_counter() - start


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="ETTh1")
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--rows", type=int, default=8640, help="training rows (ETTh1: 8640)")
    parser.add_argument("--test-rows", type=int, default=2880)
    parser.add_argument("--channels", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    return parser


def _windows(values: np.ndarray, length: int) -> torch.Tensor:
    """Every window of ``length`` rows, as (window, channel, step)."""
    return torch.from_numpy(np.lib.stride_tricks.sliding_window_view(values, length, axis=0).transpose(0, 2, 1).copy())


def _time_training(args, values: np.ndarray, train: TimeSeries):
    """Fits through Darts with an epoch timer, then times bare epochs of a copy of the network."""
    timer = EpochTimer()
    trainer = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False, "callbacks": [timer]}
    model = XCTFormerModel.from_preset(
        args.preset, output_chunk_length=args.horizon, n_epochs=args.repeats, random_state=0, pl_trainer_kwargs=trainer
    )
    start = time.perf_counter()
    model.fit(train)
    fit_total = time.perf_counter() - start
    in_len, out_len, batch_size = model.input_chunk_length, model.output_chunk_length, model.batch_size
    train_windows = _windows(values[: args.rows], in_len + out_len)
    net = copy.deepcopy(model.network)
    lr = model.pl_module_params["optimizer_kwargs"]["lr"]
    bare = [bare_epoch(net, train_windows, in_len, batch_size, lr) for _ in range(args.repeats)]
    darts_epoch, bare_epoch_s = statistics.median(timer.seconds), statistics.median(bare)
    print(
        f"preset {args.preset}, horizon {out_len}, {len(train_windows)} training windows, "
        f"batch {batch_size}, {args.threads} threads, median of {args.repeats}"
    )
    print(f"{'':<34}{'Darts':>10}{'bare':>10}{'ratio':>8}")
    print(f"{'training epoch (s)':<34}{darts_epoch:>10.3f}{bare_epoch_s:>10.3f}{darts_epoch / bare_epoch_s:>8.2f}")
    print(
        f"{'  fit() call per epoch (s)':<34}{fit_total / args.repeats:>10.3f}{bare_epoch_s:>10.3f}"
        f"{fit_total / args.repeats / bare_epoch_s:>8.2f}"
    )
    return model, net


def _time_forecasts(args, values: np.ndarray, series: TimeSeries, model, net) -> None:
    """``historical_forecasts`` against bare batched inference over the same test windows."""
    in_len, out_len = model.input_chunk_length, model.output_chunk_length
    test_windows = _windows(values[args.rows - in_len :], in_len + out_len)
    darts_hf, bare_hf = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        forecasts = model.historical_forecasts(
            series,
            start=args.rows,
            forecast_horizon=out_len,
            stride=1,
            retrain=False,
            last_points_only=False,
            verbose=False,
        )
        darts_hf.append(time.perf_counter() - start)
        bare_hf.append(bare_inference(net, test_windows, in_len, model.batch_size))
    assert len(forecasts) == len(test_windows)
    d, b = statistics.median(darts_hf), statistics.median(bare_hf)
    print(f"{'historical_forecasts, ' + str(len(forecasts)) + ' windows (s)':<34}{d:>10.3f}{b:>10.3f}{d / b:>8.2f}")
    # The floor any retrain=False path has: Darts returns one TimeSeries per window.
    floor = statistics.median(build_forecast_series(series, forecasts) for _ in range(args.repeats))
    print(
        f"{'  of which: one TimeSeries per window (s)':<44}{floor:>10.3f}  (bare + this: ratio {(b + floor) / b:.2f})"
    )


def main() -> None:
    args = _parser().parse_args()
    torch.set_num_threads(args.threads)
    values = synthetic(args.rows + args.test_rows, args.channels)
    series = TimeSeries.from_values(values)
    model, net = _time_training(args, values, series[: args.rows])
    _time_forecasts(args, values, series, model, net)


def build_forecast_series(series: TimeSeries, forecasts: list[TimeSeries]) -> float:
    """Seconds to build the same list of forecast TimeSeries from ready arrays and index slices."""
    values = [f.values(copy=False) for f in forecasts]
    index = series.time_index
    positions = [series.get_index_at_point(f.start_time()) for f in forecasts]
    columns = forecasts[0].components
    start = time.perf_counter()
    for array, position in zip(values, positions, strict=True):
        TimeSeries(times=index[position : position + len(array)], values=array, components=columns, copy=False)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
