"""Training windows gathered a batch at a time from one series tensor."""

import numpy as np
import torch

from xct_estimators.windows import SeriesWindows, whole_batch


def _materialised(values, starts, length):
    x = np.stack([np.nan_to_num(values[s : s + length]) for s in starts])
    observed = np.stack([~np.isnan(values[s : s + length]) for s in starts])
    return torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(observed))


def test_batches_equal_those_of_materialised_windows_in_the_same_order():
    values = np.random.default_rng(0).normal(size=(90, 3)).astype(np.float32)
    values[::7, 1] = np.nan
    starts, length = np.arange(0, 90 - 16 + 1, 3), 16
    loaders = [
        torch.utils.data.DataLoader(
            dataset, batch_size=4, shuffle=True, drop_last=True, generator=torch.Generator().manual_seed(5), **extra
        )
        for dataset, extra in (
            (SeriesWindows(values, starts, length), {"collate_fn": whole_batch}),
            (_materialised(values, starts, length), {}),
        )
    ]
    batches = list(zip(*loaders, strict=True))
    assert len(batches) == len(starts) // 4
    for (x, observed), (x_ref, observed_ref) in batches:
        assert x.shape == (4, 16, 3) and observed.dtype == torch.bool
        assert torch.equal(x, x_ref) and torch.equal(observed, observed_ref)
    single = SeriesWindows(values, starts, length)[2]
    assert torch.equal(single[0], torch.from_numpy(np.nan_to_num(values[6:22])))
