"""The candidates of ``benchmarks/decoder_choice.py``: each takes the place of
:class:`~xct_estimators.nn.known_future.KnownFutureDecoder` (same inputs, same output, zero at the
start of training); the families the choice is made on, and its seeds and horizon."""

from __future__ import annotations

import torch
from torch import nn

from xct_estimators.nn import known_future
from xct_estimators.nn.known_future import ResidualMLP, pairwise
from xct_estimators.nn.norm import instance_stats

SEEDS = (2021, 2022, 2023)
#: The families the decoder is chosen on; the rest of the suite is held out from the choice.
CHOSEN_ON = ("lagged", "multiplicative", "quadratic", "events", "some-channels", "panel")
HORIZON = 96


class _Unscaled(nn.Module):
    """A candidate that standardises nothing with the training data's statistics."""

    def set_statistics(self, *statistics) -> None:
        pass


class Filters(_Unscaled):
    """The decoder of 0.1.0 (see the module's docstring)."""

    FILTERS, DROP = 8, 0.2

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len, n_channels, n_static=0):
        super().__init__()
        self.seq_len, self.future_len, self.n_params = seq_len, future_len, out_len // future_len
        self.filters = nn.Linear(seq_len * n_future, self.FILTERS)
        self.mixing = nn.Linear(patch_num * d_model, self.FILTERS * self.n_params)
        nn.init.zeros_(self.mixing.weight)
        nn.init.zeros_(self.mixing.bias)

    def forward(self, channels, known, mean, std, static=None):
        b, c, _ = channels.shape
        known_mean, known_std = instance_stats(known)  # over window and horizon
        steps = ((known - known_mean) / known_std)[:, 1:].unfold(1, self.seq_len, 1).flatten(2)
        mixing = self.mixing(channels).view(b, c, self.n_params, self.FILTERS)
        out = torch.einsum("bhr,bcqr->bhqc", self.filters(steps), mixing)
        if self.training:
            out = out * torch.bernoulli(out.new_full((b, 1, 1, 1), 1 - self.DROP)) / (1 - self.DROP)
        return out.reshape(b, self.future_len * self.n_params, c)


class Tide(_Unscaled):
    """TiDE's feature projection, dense encoder-decoder and temporal decoder, per target channel."""

    FEATURES, CONTEXT, HIDDEN, DECODED = 4, 16, 128, 8

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len, n_channels, n_static=0):
        super().__init__()
        self.seq_len, self.future_len, self.n_params = seq_len, future_len, out_len // future_len
        self.features = ResidualMLP(n_future, 32, self.FEATURES)
        self.context = nn.Linear(patch_num * d_model, self.CONTEXT)
        flat = (seq_len + future_len) * self.FEATURES + self.CONTEXT + 2 + n_static
        self.dense = nn.Sequential(
            ResidualMLP(flat, self.HIDDEN, self.HIDDEN), nn.LayerNorm(self.HIDDEN),
            ResidualMLP(self.HIDDEN, self.HIDDEN, future_len * self.DECODED), nn.LayerNorm(future_len * self.DECODED),
        )  # fmt: skip
        self.temporal = ResidualMLP(self.DECODED + self.FEATURES, 32, self.n_params, zero=True)

    def forward(self, channels, known, mean, std, static=None):
        b, c, _ = channels.shape
        h = self.future_len
        features = self.features(known)  # (B, L + H, E)
        context = torch.cat([self.context(channels), mean.transpose(1, 2), std.log().transpose(1, 2)], dim=-1)
        read = features.flatten(1) if static is None else torch.cat([features.flatten(1), static.flatten(1)], dim=1)
        flat = read[:, None].expand(b, c, read.shape[1])
        decoded = self.dense(torch.cat([flat, context], dim=-1)).view(b, c, h, self.DECODED).transpose(1, 2)
        out = self.temporal(torch.cat([decoded, features[:, self.seq_len :, None].expand(b, h, c, -1)], dim=-1))
        return out.transpose(2, 3).reshape(b, h * self.n_params, c)


class FeatureFilters(known_future.KnownFutureDecoder):
    """The package's decoder before ``data_units`` was chosen: one MLP per step and channel whose
    inputs add the window's level and spread (standardised with the training data's) to the
    channel's context; its addition is in the window's standardised units, with no gain. Its
    modules are made in that decoder's order, so a seed draws the same weights."""

    WITH_LEVEL = True

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len, n_channels, n_static=0):
        nn.Module.__init__(self)
        k = known_future
        self.seq_len, self.future_len, self.n_params = seq_len, future_len, out_len // future_len
        self.features = ResidualMLP(n_future, k.FEATURE_HIDDEN, k.FEATURES)
        self.filters = nn.Conv1d(k.FEATURES, k.FILTERS, seq_len)
        self.context = nn.Linear(patch_num * d_model, k.CONTEXT)
        self.channel = nn.Parameter(torch.zeros(n_channels, k.CONTEXT))
        self.static = nn.Linear(n_static, k.CONTEXT, bias=False) if n_static else None
        inputs = k.FILTERS + k.FEATURES + k.CONTEXT + 2 * self.WITH_LEVEL
        self.decode = ResidualMLP(inputs, k.HIDDEN, self.n_params, zero=True)
        for name, size in (("known", n_future), ("level", n_channels)):
            self.register_buffer(f"{name}_mean", torch.zeros(size))
            self.register_buffer(f"{name}_std", torch.ones(size))

    @torch.no_grad()
    def set_statistics(self, known_mean, known_std, level_mean, level_std) -> None:
        super().set_statistics(known_mean, known_std, level_mean, level_std)
        self.level_mean[: len(level_mean)] = torch.as_tensor(level_mean, dtype=torch.float32)

    def forward(self, channels, known, mean, std, static=None):
        c = channels.shape[1]
        step = self.step_inputs(known).to(channels.dtype)
        context = self.channel_context(channels, static)
        if self.WITH_LEVEL:
            level = ((mean - self.level_mean[:c]) / self.level_std[:c]).transpose(1, 2)  # (B, C, 1)
            spread = torch.log(std / self.level_std[:c]).transpose(1, 2)
            context = torch.cat([context, level, spread], dim=-1)
        return self.laid_out(pairwise(self.decode, step, context.to(channels.dtype)))


class NoLevel(FeatureFilters):
    """:class:`FeatureFilters` without the window's level and spread in a channel's context: where a
    series' level drifts, an MLP of the level and the covariates can learn the training period's
    levels, which the test period does not have."""

    WITH_LEVEL = False


class LevelGain(known_future.KnownFutureDecoder):
    """The package's decoder with its addition in the window's standardised units: :class:`NoLevel`
    plus a gain on the window's level: each step's addition is ``d + g (mean +
    o_c) / std`` (in the head's standardised units), ``d`` and ``g`` MLPs of the step and the
    channel, ``o_c`` a learned offset per channel (in units of its training spread). An effect
    proportional to the series' own level (a promotion that lifts sales by a share) is then one
    function of the covariates, while the level never enters an MLP."""

    def forward(self, channels, known, mean, std, static=None):
        c = channels.shape[1]
        step = self.step_inputs(known).to(channels.dtype)
        context = self.channel_context(channels, static).to(channels.dtype)
        level = ((mean + self.offset[:c] * self.level_std[:c]) / std).transpose(1, 2)[:, None]
        out = pairwise(self.decode, step, context) + pairwise(self.gain, step, context) * level
        return self.laid_out(out)


CANDIDATES = {
    "filters": Filters,
    "tide": Tide,
    "feature_filters": FeatureFilters,
    "no_level": NoLevel,
    "level_gain": LevelGain,
    "data_units": known_future.KnownFutureDecoder,
}
