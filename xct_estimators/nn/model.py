"""XCTFormerNet: tokenizer -> CRAB/DeCoP encoder -> per-channel linear head."""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .config import XCTFormerConfig
from .dropout import Dropout
from .encoder import Encoder
from .norm import instance_stats
from .tokenizer import PatchTokenizer


class FlattenHead(nn.Module):
    """Per channel: flatten its (P, D) tokens, then one Linear shared by all channels."""

    def __init__(self, patch_num: int, d_model: int, out_len: int, dropout: float):
        super().__init__()
        self.dropout = Dropout(dropout)
        self.linear = nn.Linear(patch_num * d_model, out_len)

    def forward(self, tokens: torch.Tensor, n_channels: int, n_outputs: int) -> torch.Tensor:
        b, n, d = tokens.shape
        per_channel = tokens.view(b, n // n_channels, n_channels, d).transpose(1, 2)  # B,C,P,D
        per_channel = per_channel[:, :n_outputs]  # decode only the channels asked for
        out = self.linear(self.dropout(per_channel.flatten(start_dim=2)))  # (B, C_out, out_len)
        return out.transpose(1, 2)  # (B, out_len, C_out)


class XCTFormerNet(nn.Module):
    """The XCTFormer network: one backbone for forecasting and reconstruction.

    ``forward(x, mask=None)`` maps windows ``x`` of shape (batch, seq_len, n_channels) to
    (batch, out_len, n_channels). Each window is instance-normalised per channel inside the
    network and the output is de-normalised with the same statistics. With ``mask`` (same
    shape as ``x``, true/1 = observed), the statistics use observed points only and
    unobserved inputs are set to zero after normalisation (the imputation setting);
    unobserved inputs may then be NaN.

    ``n_outputs`` decodes only the first ``n_outputs`` channels (e.g. the targets, when the
    remaining channels are covariates that every token may attend to but nobody forecasts).
    """

    def __init__(self, config: XCTFormerConfig):
        super().__init__()
        self.config = config
        self.tokenizer = PatchTokenizer(
            config.patch_len, config.stride, config.patch_num, config.d_model, config.dropout
        )
        self.encoder = Encoder(config)
        self.head = FlattenHead(config.patch_num, config.d_model, config.out_len, config.head_dropout)

    def forward(
        self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, n_outputs: Optional[int] = None
    ) -> torch.Tensor:
        self._check_input(x, mask)
        n_outputs = self.config.n_channels if n_outputs is None else n_outputs
        mean, std = instance_stats(x, mask)
        x = (x - mean) / std
        if mask is not None:
            x = torch.where(mask.bool(), x, 0.0)
        out = self.head(self.encoder(self.tokenizer(x)), self.config.n_channels, n_outputs)
        return out * std[..., :n_outputs] + mean[..., :n_outputs]

    def _check_input(self, x: torch.Tensor, mask: Optional[torch.Tensor]) -> None:
        c = self.config
        if x.dim() != 3 or x.shape[1] != c.seq_len or x.shape[2] != c.n_channels:
            raise ValueError(
                f"XCTFormerNet expects input of shape (batch, seq_len={c.seq_len}, "
                f"n_channels={c.n_channels}), got {tuple(x.shape)}."
            )
        if mask is not None and mask.shape != x.shape:
            raise ValueError(f"mask must have the input's shape {tuple(x.shape)}, got {tuple(mask.shape)}.")

    def num_parameters(self, trainable_only: bool = True) -> int:
        """Number of (trainable) parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)
