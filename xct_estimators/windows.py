"""Training windows cut from one series tensor, a whole batch per indexing operation.

A ``TensorDataset`` of materialised windows costs window-length copies of the series in memory
and one Python call per window to gather a batch; :class:`SeriesWindows` keeps the series once
and answers a batch of indices (PyTorch's ``__getitems__``) with one gather. Any sampler,
Lightning's distributed one included, still draws the window indices.
"""

from __future__ import annotations

import numpy as np
import torch


class SeriesWindows(torch.utils.data.Dataset):
    """The windows ``values[s : s + length]`` for each start ``s``, with their observed masks
    (NaN marks a missing point, filled with 0): items are ``(x, observed)``, (length, channels)."""

    def __init__(self, values: np.ndarray, starts: np.ndarray, length: int) -> None:
        self.series = torch.from_numpy(np.nan_to_num(values))
        self.observed = torch.from_numpy(~np.isnan(values))
        self.starts = torch.as_tensor(starts, dtype=torch.long)
        self.offsets = torch.arange(length)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.starts[index] + self.offsets
        return self.series[rows], self.observed[rows]

    def __getitems__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.starts[indices][:, None] + self.offsets
        return self.series[rows], self.observed[rows]


def whole_batch(batch):
    """The DataLoader's ``collate_fn`` for :class:`SeriesWindows`: its batches come gathered."""
    return batch


def sliding_windows(values: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """The windows ``values[s : s + length]`` for each start ``s``, as one (n, length, channels) array."""
    view = np.lib.stride_tricks.sliding_window_view(values, length, axis=0)  # (T-L+1, C, L)
    return np.ascontiguousarray(view[starts].transpose(0, 2, 1))


def covering_starts(n_steps: int, length: int, stride: int) -> np.ndarray:
    """Starts of windows every ``stride`` steps over ``n_steps >= length`` steps, plus one that
    ends at the last step, so that every step is covered."""
    starts = np.arange(0, n_steps - length + 1, stride)
    if starts[-1] != n_steps - length:
        starts = np.append(starts, n_steps - length)
    return starts
