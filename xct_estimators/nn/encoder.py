"""Encoder layers and the token regrouping that implements the mixing ablations."""

from __future__ import annotations

import torch
from torch import nn

from .attention import CRABAttention, DeCoPAttention
from .config import XCTFormerConfig
from .dropout import Dropout
from .memory import plain_bytes_per_sequence


class TokenBatchNorm(nn.Module):
    """BatchNorm1d over d_model for (B, N, D) tokens: statistics over batch x tokens.

    Traced by the compiler it normalises B*N rows of D features: on the transposed view the CPU
    kernel's output strides differ from those the tracing assumes. Eager keeps the transposed
    form, whose float32 sums the published results were computed with."""

    def __init__(self, d_model: int):
        super().__init__()
        self.norm = nn.BatchNorm1d(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return self.norm(x.reshape(-1, x.shape[-1])).view(x.shape)
        return self.norm(x.transpose(1, 2)).transpose(1, 2)


class EncoderLayer(nn.Module):
    """One encoder layer, arranged as in the authors' code (their numbers depend on it)::

    x   = x + dropout_fc(attention(x))
    out = BN2(x + FFN(BN1(x)))          # BN1 feeds only the FFN
    """

    def __init__(self, config: XCTFormerConfig, dropout_layer=Dropout):
        super().__init__()
        c = config
        if c.decop_k is not None:
            shape = (c.d_model, c.n_heads, c.attention_len, c.decop_k)
            self.attention = DeCoPAttention(*shape, c.attn_dropout, c.activation, c.decop_variant, c.fused_attention)
        else:
            self.attention = CRABAttention(
                c.d_model, c.n_heads, c.attention_len, c.attn_dropout, c.use_mask, c.activation, c.fused_attention,
                plain_bytes_per_sequence(c), c.max_attention_bytes,
            )  # fmt: skip
        self.attention_dropout = dropout_layer(c.fc_dropout)
        self.norm_ffn_input = TokenBatchNorm(c.d_model)
        self.ffn = nn.Sequential(
            nn.Linear(c.d_model, c.d_ff), nn.GELU(), dropout_layer(c.fc_dropout), nn.Linear(c.d_ff, c.d_model)
        )
        self.norm_out = TokenBatchNorm(c.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention_dropout(self.attention(x))
        return self.norm_out(x + self.ffn(self.norm_ffn_input(x)))


class Encoder(nn.Module):
    """A stack of encoder layers over the flat (patch, channel) token sequence.

    ``mixing="time"`` and ``"channel"`` regroup the tokens so attention runs within one
    channel (over its patches) or within one patch index (over the channels); BatchNorm's
    statistics over batch x tokens are unchanged by the regrouping.
    """

    def __init__(self, config: XCTFormerConfig, dropout_layer=Dropout):
        super().__init__()
        self.mixing = config.mixing
        self.n_channels = config.n_token_channels
        self.patch_num = config.patch_num
        self.layers = nn.ModuleList(EncoderLayer(config, dropout_layer) for _ in range(config.e_layers))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        b, n, d = tokens.shape
        p, c = self.patch_num, self.n_channels
        if self.mixing == "time":  # (B, P*C, D) -> (B*C, P, D)
            tokens = tokens.view(b, p, c, d).transpose(1, 2).reshape(b * c, p, d)
        elif self.mixing == "channel":  # (B, P*C, D) -> (B*P, C, D)
            tokens = tokens.reshape(b * p, c, d)
        for layer in self.layers:
            tokens = layer(tokens)
        if self.mixing == "time":
            tokens = tokens.view(b, c, p, d).transpose(1, 2)
        return tokens.reshape(b, n, d)
