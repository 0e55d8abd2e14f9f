"""XCTFormerNet: tokenizer -> CRAB/DeCoP encoder -> per-channel linear head."""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import torch
from torch import nn

from .config import XCTFormerConfig
from .dropout import Dropout
from .encoder import Encoder
from .known_future import KnownFutureDecoder, usable_scale
from .norm import instance_stats
from .tokenizer import PatchTokenizer


class FlattenHead(nn.Module):
    """Per channel: flatten its (P, D) tokens, then one Linear shared by all channels."""

    def __init__(self, patch_num: int, d_model: int, out_len: int, dropout: float, dropout_layer=Dropout):
        super().__init__()
        self.dropout = dropout_layer(dropout)
        self.linear = nn.Linear(patch_num * d_model, out_len)

    def forward(self, channels: torch.Tensor) -> torch.Tensor:
        """``channels`` (B, C_out, P * D) from :meth:`channels` -> (B, out_len, C_out)."""
        return self.linear(self.dropout(channels)).transpose(1, 2)

    @staticmethod
    def channels(tokens: torch.Tensor, n_channels: int, n_outputs: int) -> torch.Tensor:
        """The grid's tokens (B, P * C, D) as each decoded channel's flattened tokens (B, C_out, P * D)."""
        b, n, d = tokens.shape
        per_channel = tokens.view(b, n // n_channels, n_channels, d).transpose(1, 2)  # B,C,P,D
        return per_channel[:, :n_outputs].flatten(start_dim=2)  # decode only the channels asked for


class XCTFormerNet(nn.Module):
    """The XCTFormer network: one backbone for forecasting and reconstruction.

    ``forward(x, mask=None)`` maps windows ``x`` of shape (batch, seq_len, n_channels) to
    (batch, out_len, n_channels). Each window is instance-normalised per channel inside the
    network and the output is de-normalised with the same statistics. With ``mask`` (same
    shape as ``x``, true/1 = observed), the statistics use observed points only and
    unobserved inputs are set to zero after normalisation (the imputation setting);
    unobserved inputs may then be NaN.

    ``n_outputs`` decodes only the first ``n_outputs`` channels (e.g. the targets, when the
    remaining channels are covariates that every token may attend to but nobody forecasts);
    default: every channel but the future covariates.

    Covariates (see docs/forecasting.md): ``future`` (batch, future_len, n_future_channels) holds
    the horizon values of the last ``n_future_channels`` input channels; these channels are not
    cut into tokens: the known-future decoder reads their window and horizon values (standardised
    with the training data's statistics, :meth:`KnownFutureDecoder.set_statistics`) and gives
    each target's effect at every step: the window's are taken off the window before it is
    normalised, the horizon's added to the forecast. ``static`` (batch, n_static_tokens,
    static_features) becomes one token per row, which every token attends to and nobody decodes
    (the decoder reads it too). Without them the network is the paper's, parameter for parameter.
    """

    def __init__(self, config: XCTFormerConfig, dropout_layer: Callable[[float], nn.Module] = Dropout):
        super().__init__()
        self.config = config
        self.tokenizer = PatchTokenizer(
            config.patch_len, config.stride, config.patch_num, config.d_model, config.dropout, dropout_layer
        )
        self.encoder = Encoder(config, dropout_layer)
        self.head = FlattenHead(config.patch_num, config.d_model, config.out_len, config.head_dropout, dropout_layer)
        if config.n_future_channels:
            self.known_future = KnownFutureDecoder(
                config.seq_len, config.n_future_channels, config.n_token_channels,
                config.n_static_tokens * config.static_features,
            )  # fmt: skip
        if config.n_static_tokens:
            self.static_projection = nn.Linear(config.static_features, config.d_model)
            self.static_position = nn.Parameter(
                torch.empty(config.n_static_tokens, config.d_model).uniform_(-0.02, 0.02)
            )
            shape = (config.n_static_tokens, config.static_features)
            self.register_buffer("static_mean", torch.zeros(shape))
            self.register_buffer("static_std", torch.ones(shape))

    @torch.no_grad()
    def set_statistics(self, known=None, level=None, static=None, level_floor=None) -> None:
        """The training data's (mean, std) of the future covariates (``known``, per covariate), of
        the targets (``level``, per target) and of the static covariates (``static``, per row and
        feature), and the targets' lowest window mean (``level_floor``): the known-future decoder
        and the static tokens standardise with them (a constant input's scale is its size,
        :func:`~.known_future.usable_scale`). Until set they are 0 and 1: the inputs are read as given."""
        if known is not None and level is not None and self.config.n_future_channels:
            self.known_future.set_statistics(*known, *level, level_floor=level_floor)
        if static is not None and self.config.n_static_tokens:
            mean, std = (torch.as_tensor(v, dtype=torch.float32) for v in static)
            self.static_mean.copy_(mean)
            self.static_std.copy_(usable_scale(mean, std))

    def forward(
        self,
        x: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        n_outputs: Optional[int] = None,
        future: Optional[torch.Tensor] = None,
        static: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        self._check_input(x, mask, future, static)
        c = self.config
        n_outputs = c.n_token_channels if n_outputs is None else n_outputs
        if not 0 < n_outputs <= c.n_token_channels:
            inputs_only = " (future covariates are inputs only)" if c.n_future_channels else ""
            decodes = f"the network decodes 1 to {c.n_token_channels} channels{inputs_only}"
            raise ValueError(f"n_outputs={n_outputs}: {decodes}.")
        f = c.n_future_channels
        x, raw = x[..., : c.n_token_channels], x
        observed = None if mask is None else mask[..., : c.n_token_channels].bool()
        if c.n_static_tokens:
            static = ((static - self.static_mean) / self.static_std).to(x.dtype)
        if f:  # the covariates' effects come off the targets' window, the backbone forecasts the rest
            if observed is not None:  # no NaN where a gradient flows
                x = torch.where(observed, x, 0.0)
            known = torch.cat([raw[..., -f:], future.to(x.dtype)], dim=1)  # (B, seq_len + future_len, F)
            targets = x[..., :n_outputs]
            level = instance_stats(targets, None if observed is None else observed[..., :n_outputs])[0]
            effects = self.known_future(known, level, static).to(x.dtype)  # (B, seq_len + future_len, n_outputs)
            x = torch.cat([targets - effects[:, : c.seq_len], x[..., n_outputs:]], dim=-1)
        mean, std = instance_stats(x, observed)
        x = (x - mean) / std
        if observed is not None:
            x = torch.where(observed, x, 0.0)
        tokens = [self.tokenizer(x)]
        if c.n_static_tokens:
            tokens.append(self.static_projection(static) + self.static_position)
        encoded = self.encoder(torch.cat(tokens, dim=1) if len(tokens) > 1 else tokens[0])
        channels = self.head.channels(encoded[:, : c.n_grid_tokens], c.n_token_channels, n_outputs)
        out = self.head(channels) * std[..., :n_outputs] + mean[..., :n_outputs]
        if f:  # the horizon's effects, the same for every quantile of a step
            b, steps, n_params = out.shape[0], c.future_len, c.out_len // c.future_len
            horizon = effects[:, c.seq_len :, None].expand(b, steps, n_params, n_outputs)
            out = out + horizon.reshape(b, steps * n_params, n_outputs)
        return out

    def _check_input(self, x: torch.Tensor, mask, future, static) -> None:
        c = self.config
        if x.dim() != 3 or x.shape[1] != c.seq_len or x.shape[2] != c.n_channels:
            raise ValueError(
                f"XCTFormerNet expects input of shape (batch, seq_len={c.seq_len}, "
                f"n_channels={c.n_channels}), got {tuple(x.shape)}."
            )
        if mask is not None and mask.shape != x.shape:
            raise ValueError(f"mask must have the input's shape {tuple(x.shape)}, got {tuple(mask.shape)}.")
        for name, value, shape, sizes in (
            ("future", future, (x.shape[0], c.future_len, c.n_future_channels), "future_len, n_future_channels"),
            ("static", static, (x.shape[0], c.n_static_tokens, c.static_features), "n_static_tokens, static_features"),
        ):
            if (value is None) != (shape[2] == 0) or (value is not None and tuple(value.shape) != shape):
                got = "none" if value is None else f"shape {tuple(value.shape)}"
                want = f"shape (batch, {sizes}) = {shape}" if shape[2] else "none (the config has 0)"
                raise ValueError(f"XCTFormerNet expects {name} of {want}, got {got}.")

    def num_parameters(self, trainable_only: bool = True) -> int:
        """Number of (trainable) parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)
