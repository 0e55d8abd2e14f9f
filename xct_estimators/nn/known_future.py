"""The decoder of known future inputs (docs/forecasting.md, Covariates, says why it is built so):
at each horizon step, :data:`FILTERS` learned filters read the normalised future covariates over
the ``seq_len`` steps up to it; each target channel mixes their responses with weights read off its
own tokens, zero at first (training starts from the paper's forecast), and the result is added to
the head's output. A training sample goes without it with probability :data:`DROP`."""

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
