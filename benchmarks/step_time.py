"""Milliseconds per training step (forward, backward, Adam) and per inference batch.

For the paper's ETTh1 and ETTm1 forecasting presets on CPU, with a fixed thread count and the
median of repeats. A benchmark that prints numbers, not a test.

    python benchmarks/step_time.py [--threads 2] [--repeats 20] [--horizon 96]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from xct_estimators.nn import XCTFormerNet, get_preset


def median_ms(fn, repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--datasets", default="ETTh1,ETTm1")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.repeats}, horizon {args.horizon}")
    print(f"{'preset':<8} {'batch':>5} {'params':>9} {'train ms/step':>14} {'infer ms/batch':>15}")
    for dataset in args.datasets.split(","):
        preset = get_preset(dataset, "forecast")
        config = preset.config(out_len=args.horizon)
        net = XCTFormerNet(config)
        optimizer = torch.optim.Adam(net.parameters(), lr=preset.learning_rate)
        x = torch.randn(preset.batch_size, config.seq_len, config.n_channels)
        y = torch.randn(preset.batch_size, config.out_len, config.n_channels)

        def train_step(net=net, optimizer=optimizer, x=x, y=y):
            net.train()
            optimizer.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(net(x), y).backward()
            optimizer.step()

        def infer_step(net=net, x=x):
            net.eval()
            with torch.inference_mode():
                net(x)

        train = median_ms(train_step, args.repeats)
        infer = median_ms(infer_step, args.repeats)
        print(f"{dataset:<8} {preset.batch_size:>5} {net.num_parameters():>9} {train:>14.2f} {infer:>15.2f}")


if __name__ == "__main__":
    main()
