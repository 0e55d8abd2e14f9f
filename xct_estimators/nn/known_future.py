"""The decoder of known future inputs: each horizon step's forecast reads the future covariates
known up to that step, beside what attention made of the window.

The paper's head decodes a target channel from its window's tokens alone, so what a plan says
about the horizon has to reach it through attention into tokens that describe the past. Here
each step ``t`` of the horizon also sees ``u_t``: the normalised future covariates over the
``seq_len`` steps up to ``t`` (the window's values, then the horizon's). ``r`` learned filters
turn ``u_t`` into ``r`` responses (a lag and a decay each, for instance), and each target
channel mixes them with weights read off its own tokens, so that channels respond differently
and a response can scale with the channel's state. The result is added to the head's output.
The mixing weights start at zero: training starts from the paper's forecast. In training, each
sample goes without the decoder with probability :data:`DROP` (the rest scaled up, as dropout
does), so the encoder and head keep forecasting from the window alone and a covariate that says
little (a calendar) cannot crowd out what the window says.
"""

from __future__ import annotations

import torch
from torch import nn

#: Number of learned filters ``r``.
FILTERS = 8
#: Probability that a training sample's forecast goes without the decoder (chosen on ETTh1 with a
#: calendar and on control; docs/forecasting.md shows the comparison).
DROP = 0.2


class KnownFutureDecoder(nn.Module):
    """(target channels' tokens, known covariates) -> additions to the head's output."""

    def __init__(self, patch_num: int, d_model: int, seq_len: int, n_future: int, future_len: int, out_len: int):
        super().__init__()
        self.seq_len, self.future_len = seq_len, future_len
        self.n_params = out_len // future_len  # quantile regression: an output per step and quantile
        self.drop = DROP
        self.filters = nn.Linear(seq_len * n_future, FILTERS)
        self.mixing = nn.Linear(patch_num * d_model, FILTERS * self.n_params)
        nn.init.zeros_(self.mixing.weight)
        nn.init.zeros_(self.mixing.bias)

    def forward(self, channels: torch.Tensor, known: torch.Tensor) -> torch.Tensor:
        """``channels`` (B, C, P * D): each target channel's flattened tokens; ``known`` (B,
        seq_len + future_len, F), normalised. Returns (B, future_len * n_params, C), laid out as
        the head's output."""
        b, c, _ = channels.shape
        steps = known[:, 1:].unfold(1, self.seq_len, 1).flatten(2)  # (B, H, F * L): the L values up to each step
        responses = self.filters(steps)  # (B, H, r)
        mixing = self.mixing(channels).view(b, c, self.n_params, FILTERS)  # (B, C, Q, r)
        out = torch.einsum("bhr,bcqr->bhqc", responses, mixing)  # (B, H, Q, C)
        if self.training and self.drop:
            out = out * torch.bernoulli(out.new_full((b, 1, 1, 1), 1 - self.drop)) / (1 - self.drop)
        return out.reshape(b, self.future_len * self.n_params, c)
