"""``xct-bench profile``: trainable parameters and FLOPs of each forecasting preset.

FLOPs are counted with ``torch.utils.flop_counter`` for one input window (batch 1) and averaged
over the four horizons, like the paper's Tables 14-15. The paper used fvcore, which counts one
multiply-accumulate as one FLOP, so the comparison uses torch's count / 2 (the MACs).
Elementwise work (AbsAct, norms, activations) is counted by neither tool.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch.utils.flop_counter import FlopCounterMode

from ..nn.model import XCTFormerNet
from ..nn.presets import get_preset
from . import paper
from .models import preset_name
from .tables import markdown_table

PROFILE_DATASETS = tuple(paper.PROFILE)


def count_flops(net: torch.nn.Module, seq_len: int, n_channels: int) -> int:
    """FLOPs (torch's count: 2 per multiply-add) of one forward pass on a single window."""
    net.eval()
    x = torch.zeros(1, seq_len, n_channels)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        net(x)
    return int(counter.get_total_flops())


def profile_dataset(dataset: str) -> dict:
    """Parameters and MACs of the dataset's forecasting preset, averaged over the paper's horizons."""
    preset = get_preset(preset_name(dataset), "forecast")
    params, macs = [], []
    for horizon in paper.HORIZONS:
        net = XCTFormerNet(preset.config(out_len=horizon, max_attention_bytes=None))
        params.append(sum(p.numel() for p in net.parameters() if p.requires_grad))
        macs.append(count_flops(net, preset.seq_len, preset.n_channels) / 2)
    return {
        "dataset": dataset,
        "preset": preset.dataset,
        "params": sum(params) / len(params),
        "macs": sum(macs) / len(macs),
    }


def print_profile(datasets: Optional[list[str]] = None) -> int:
    rows = []
    for dataset in datasets or PROFILE_DATASETS:
        row = profile_dataset(dataset)
        ref = paper.PROFILE.get(paper.dataset_key(dataset))
        ref_params, ref_flops = ref if ref else (None, None)
        published = (
            ["-"] * 3 if ref is None else [f"{ref_params:.1e}", f"{ref_flops:.1e}", f"{row['macs'] / ref_flops:.2f}"]
        )
        rows.append(
            [dataset, row["preset"], f"{row['params']:.2e}", published[0], f"{row['macs']:.2e}", *published[1:]]
        )
    header = ["dataset", "preset", "params", "paper params", "FLOPs (MACs)", "paper FLOPs", "ratio"]
    print(markdown_table(header, rows))
    print(
        "\nFLOPs: torch.utils.flop_counter on one window, halved to count multiply-accumulates as the paper's "
        "fvcore does; averaged over horizons 96-720."
    )
    return 0
