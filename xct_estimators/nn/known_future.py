"""The decoder of known future inputs (docs/forecasting.md, Covariates, says why it is built so).

At every horizon step ``t``: a small MLP turns each step's covariates, standardised with the
training data's statistics, into :data:`FEATURES` features (any function of one step's values: a
square, a threshold, a product of two inputs); :data:`FILTERS` learned filters read those features
over the ``seq_len`` steps up to ``t`` (a lag, a decay); and for each target channel two MLPs of
the filters' responses, the step's features and the channel's context (its tokens, which channel it
is, the static covariates) give the step's addition ``d`` in the data's units (the channel's
training spread) and a gain ``g`` on the window's level, so that the head's output gains
``d level_std / std + g (mean + offset) / std``. The window's level enters no MLP: where a series
drifts, an MLP of the level would learn the training period's levels. The addition is zero at the
start of training, which starts from the paper's forecast.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

#: Features of one step's covariates, learned filters over them, and the width of a channel's context.
FEATURES, FILTERS, CONTEXT = 8, 16, 16
#: Hidden widths of the per-step feature MLP and of the per-channel decoding MLP.
FEATURE_HIDDEN, HIDDEN = 32, 64


def usable_scale(mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """``std``, where an input was constant in training (std 0) its mean's size (at least 1): a
    later value far from that constant stays of moderate size once standardised."""
    return torch.where(std > 0, std, mean.abs().clamp_min(1.0))


class ResidualMLP(nn.Module):
    """TiDE's residual block without its layer norm: ``Linear -> ReLU -> Linear`` plus a linear skip."""

    def __init__(self, inputs: int, hidden: int, outputs: int, zero: bool = False):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, outputs))
        self.skip = nn.Linear(inputs, outputs)
        if zero:  # the output starts at zero
            for layer in (self.mlp[-1], self.skip):
                nn.init.zeros_(layer.weight)
                nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x) + self.skip(x)


class KnownFutureDecoder(nn.Module):
    """(target channels' tokens, known covariates, the targets' window statistics) -> additions to
    the head's output.

    The buffers ``known_mean``/``known_std`` (per covariate) standardise the covariates, and
    ``level_std`` (per target channel) is the data's unit of the additions; they are the identity
    until :meth:`set_statistics` gives them the training data's (``XCTFormerModel.fit`` does).
    """

    def __init__(
        self,
        patch_num: int,
        d_model: int,
        seq_len: int,
        n_future: int,
        future_len: int,
        out_len: int,
        n_channels: int,
        n_static: int = 0,
    ):
        super().__init__()
        self.seq_len, self.future_len = seq_len, future_len
        self.n_params = out_len // future_len  # quantile regression: an output per step and quantile
        self.features = ResidualMLP(n_future, FEATURE_HIDDEN, FEATURES)
        self.filters = nn.Conv1d(FEATURES, FILTERS, seq_len)  # causal: horizon step t reads the seq_len steps up to t
        self.context = nn.Linear(patch_num * d_model, CONTEXT)
        self.channel = nn.Parameter(torch.zeros(n_channels, CONTEXT))
        self.static = nn.Linear(n_static, CONTEXT, bias=False) if n_static else None
        self.decode = ResidualMLP(FILTERS + FEATURES + CONTEXT, HIDDEN, self.n_params, zero=True)
        self.gain = ResidualMLP(FILTERS + FEATURES + CONTEXT, HIDDEN, self.n_params, zero=True)
        self.offset = nn.Parameter(torch.zeros(n_channels))  # where the level's zero lies, in training spreads
        self.register_buffer("known_mean", torch.zeros(n_future))
        self.register_buffer("known_std", torch.ones(n_future))
        self.register_buffer("level_std", torch.ones(n_channels))

    @torch.no_grad()
    def set_statistics(self, known_mean, known_std, level_mean, level_std) -> None:
        """The training data's mean and std of each covariate and of the first channels (the
        targets); a std of 0 (constant in training) is replaced as :func:`usable_scale` says."""
        known_mean, known_std, level_mean, level_std = (
            torch.as_tensor(v, dtype=torch.float32) for v in (known_mean, known_std, level_mean, level_std)
        )
        self.known_mean[:] = known_mean
        self.known_std[:] = usable_scale(known_mean, known_std)
        self.level_std[: len(level_std)] = usable_scale(level_mean, level_std)  # the targets', the first channels

    def forward(self, channels: torch.Tensor, known: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, static=None):
        """``channels`` (B, C, P * D): each target channel's flattened tokens; ``known`` (B,
        seq_len + future_len, F), as given; ``mean``, ``std`` (B, 1, C): the targets' window
        statistics; ``static`` (B, rows, features): the static covariates, if the network has them.
        Returns (B, future_len * n_params, C), laid out as the head's output."""
        c = channels.shape[1]
        step = self.step_inputs(known).to(channels.dtype)  # (B, H, R + E)
        context = self.channel_context(channels, static).to(channels.dtype)  # (B, C, Z)
        scale = self.level_std[:c]
        unit = (scale / std).transpose(1, 2)[:, None]  # (B, 1, C, 1): the data's units in the window's
        level = ((mean + self.offset[:c] * scale) / std).transpose(1, 2)[:, None]
        out = pairwise(self.decode, step, context) * unit + pairwise(self.gain, step, context) * level
        return self.laid_out(out)

    def step_inputs(self, known: torch.Tensor) -> torch.Tensor:
        """What the decoding reads of horizon step t: the filters' responses up to t and t's features."""
        features = self.features((known - self.known_mean) / self.known_std)  # (B, L + H, E)
        responses = self.filters(features[:, 1:].transpose(1, 2)).transpose(1, 2)  # (B, H, R)
        return torch.cat([responses, features[:, self.seq_len :]], dim=-1)

    def laid_out(self, out: torch.Tensor) -> torch.Tensor:
        """(B, H, C, Q) -> (B, H * Q, C), the head's layout."""
        b, h, c, q = out.shape
        return out.transpose(2, 3).reshape(b, h * q, c)

    def channel_context(self, channels: torch.Tensor, static) -> torch.Tensor:
        """What the decoding reads of each target channel: its tokens, which channel it is, the static
        covariates."""
        own = self.context(channels) + self.channel[: channels.shape[1]]  # (B, C, Z)
        if self.static is not None:  # a response that depends on what the static covariates say
            own = own + self.static(static.flatten(1).to(own.dtype))[:, None]
        return own


def pairwise(mlp: ResidualMLP, step: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    """``mlp`` of every (horizon step, channel) pair's concatenated inputs, (B, H, C, outputs), from
    ``step`` (B, H, S) and ``context`` (B, C, Z): its first layer and skip are linear, so each is
    applied to the step and the channel apart and the two added, not to B x H x C concatenations."""
    first, last, skip, s = mlp.mlp[0], mlp.mlp[2], mlp.skip, step.shape[-1]

    def linear(layer: nn.Linear) -> torch.Tensor:
        by_step = F.linear(step, layer.weight[:, :s], layer.bias)  # (B, H, O)
        return by_step[:, :, None] + F.linear(context, layer.weight[:, s:])[:, None]  # (B, H, C, O)

    return last(torch.relu(linear(first))) + linear(skip)
