"""Patch tokenizer: every channel cut into patches, then one flat (patch, channel) sequence."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .dropout import Dropout


class PatchTokenizer(nn.Module):
    """(B, L, C) -> (B, P * C, D), patch-major and channel-minor (token index = p * C + c).

    Each channel is padded at its end by ``stride`` (replicating the last value), unfolded
    into ``P = (L - patch_len) // stride + 2`` patches, projected by one Linear shared by all
    channels, and given a learnable positional embedding per patch index (shared by all
    channels).
    """

    def __init__(
        self, patch_len: int, stride: int, patch_num: int, d_model: int, dropout: float, dropout_layer=Dropout
    ):
        super().__init__()
        self.patch_len = patch_len
        self.stride = stride
        self.projection = nn.Linear(patch_len, d_model)
        self.position = nn.Parameter(torch.empty(patch_num, d_model).uniform_(-0.02, 0.02))
        self.dropout = dropout_layer(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, c = x.shape
        series = F.pad(x.transpose(1, 2), (0, self.stride), mode="replicate")  # (B, C, L + s)
        patches = series.unfold(-1, self.patch_len, self.stride)  # (B, C, P, patch_len)
        tokens = self.dropout(self.projection(patches) + self.position)  # (B, C, P, D)
        return tokens.transpose(1, 2).reshape(b, -1, tokens.shape[-1])  # (B, P * C, D)
