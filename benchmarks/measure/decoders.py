"""The candidates of ``benchmarks/decoder_choice.py``, the families the choice is made on, and its
seeds and horizon.

``regression`` (the package's decoder until ``step_gain`` was chosen), ``regression_without_gain``
and ``step_gain`` take the decoder's place in the package's network (:class:`PackageNetwork`);
``replicated_history`` is ``step_gain`` whose filters read the window's first step before it, not
zeros, ``level_floor`` (:class:`LevelFloor`) ``replicated_history`` whose gain scales the level from
the training floor, and ``level_floor_without_gain`` ``level_floor`` without its gain (whose
unused modules it keeps, so a seed draws ``level_floor``'s weights): the package's decoder until
``feature_dropout`` (:class:`FeatureDropout`, no gain modules) added TiDE's dropout; ``window_spread``
is ``feature_dropout`` before that dropout whose effects may scale with the window's spread;
``level_floor_dropout``, ``level_floor`` with that dropout, is the package's
:class:`~xct_estimators.nn.known_future.KnownFutureDecoder`. None but those two have dropout. The
others add to the head's output, as the package's decoders did before it: they read each target channel's tokens,
the covariates over window and horizon and the targets' window statistics, and start at zero;
:func:`with_candidate` gives the network that runs one of them in the decoder's place
(:class:`AddedToTheHead`)."""

from __future__ import annotations

from typing import Optional
from unittest import mock

import torch
from torch import nn

from xct_estimators.nn import XCTFormerNet, known_future
from xct_estimators.nn import model as network_module
from xct_estimators.nn.known_future import (
    CONTEXT,
    FEATURE_HIDDEN,
    FEATURES,
    FILTERS,
    HIDDEN,
    ResidualMLP,
    pairwise,
    usable_scale,
)
from xct_estimators.nn.norm import instance_stats

SEEDS = (2021, 2022, 2023)
#: The families the decoder is chosen on; the rest of the suite is held out from the choice.
CHOSEN_ON = ("lagged", "multiplicative", "quadratic", "events", "some-channels", "panel")
HORIZON = 96


class _Unscaled(nn.Module):
    """A candidate that standardises nothing with the training data's statistics."""

    def set_statistics(self, *statistics, **named) -> None:
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


class DataUnits(nn.Module):
    """The package's decoder before ``regression``: per horizon step, a feature MLP of each step's
    standardised covariates, causal filters over the features, and for each target channel two
    MLPs of the filters' responses, the step's features and the channel's context (its tokens,
    which channel it is, the static covariates): an addition ``d`` in the data's units and a gain
    ``g`` on the window's level, ``d level_std / std + g (mean + offset level_std) / std`` in the
    head's standardised units."""

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len, n_channels, n_static=0):
        super().__init__()
        self.seq_len, self.future_len = seq_len, future_len
        self.n_params = out_len // future_len
        self.features = ResidualMLP(n_future, FEATURE_HIDDEN, FEATURES)
        self.filters = nn.Conv1d(FEATURES, FILTERS, seq_len)
        self.context = nn.Linear(patch_num * d_model, CONTEXT)
        self.channel = nn.Parameter(torch.zeros(n_channels, CONTEXT))
        self.static = nn.Linear(n_static, CONTEXT, bias=False) if n_static else None
        self.decode = ResidualMLP(FILTERS + FEATURES + CONTEXT, HIDDEN, self.n_params, zero=True)
        self.gain = ResidualMLP(FILTERS + FEATURES + CONTEXT, HIDDEN, self.n_params, zero=True)
        self.offset = nn.Parameter(torch.zeros(n_channels))
        self.register_buffer("known_mean", torch.zeros(n_future))
        self.register_buffer("known_std", torch.ones(n_future))
        self.register_buffer("level_std", torch.ones(n_channels))

    @torch.no_grad()
    def set_statistics(self, known_mean, known_std, level_mean, level_std, level_floor=None) -> None:
        known_mean, known_std, level_mean, level_std = (
            torch.as_tensor(v, dtype=torch.float32) for v in (known_mean, known_std, level_mean, level_std)
        )
        self.known_mean[:] = known_mean
        self.known_std[:] = usable_scale(known_mean, known_std)
        self.level_std[: len(level_std)] = usable_scale(level_mean, level_std)

    def forward(self, channels, known, mean, std, static=None):
        c = channels.shape[1]
        step = self.step_inputs(known).to(channels.dtype)
        context = self.channel_context(channels, static).to(channels.dtype)
        scale = self.level_std[:c]
        unit = (scale / std).transpose(1, 2)[:, None]
        level = ((mean + self.offset[:c] * scale) / std).transpose(1, 2)[:, None]
        out = pairwise(self.decode, step, context) * unit + pairwise(self.gain, step, context) * level
        return self.laid_out(out)

    def step_inputs(self, known):
        features = self.features((known - self.known_mean) / self.known_std)  # (B, L + H, E)
        responses = self.filters(features[:, 1:].transpose(1, 2)).transpose(1, 2)  # (B, H, R)
        return torch.cat([responses, features[:, self.seq_len :]], dim=-1)

    def laid_out(self, out):
        b, h, c, q = out.shape
        return out.transpose(2, 3).reshape(b, h * q, c)

    def channel_context(self, channels, static):
        own = self.context(channels) + self.channel[: channels.shape[1]]
        if self.static is not None:
            own = own + self.static(static.flatten(1).to(own.dtype))[:, None]
        return own


class FeatureFilters(DataUnits):
    """The package's decoder before ``data_units`` was chosen: one MLP per step and channel whose
    inputs add the window's level and spread (standardised with the training data's) to the
    channel's context; its addition is in the window's standardised units, with no gain. Its
    modules are made in that decoder's order, so a seed draws the same weights."""

    WITH_LEVEL = True

    def __init__(self, patch_num, d_model, seq_len, n_future, future_len, out_len, n_channels, n_static=0):
        nn.Module.__init__(self)
        self.seq_len, self.future_len, self.n_params = seq_len, future_len, out_len // future_len
        self.features = ResidualMLP(n_future, FEATURE_HIDDEN, FEATURES)
        self.filters = nn.Conv1d(FEATURES, FILTERS, seq_len)
        self.context = nn.Linear(patch_num * d_model, CONTEXT)
        self.channel = nn.Parameter(torch.zeros(n_channels, CONTEXT))
        self.static = nn.Linear(n_static, CONTEXT, bias=False) if n_static else None
        inputs = FILTERS + FEATURES + CONTEXT + 2 * self.WITH_LEVEL
        self.decode = ResidualMLP(inputs, HIDDEN, self.n_params, zero=True)
        for name, size in (("known", n_future), ("level", n_channels)):
            self.register_buffer(f"{name}_mean", torch.zeros(size))
            self.register_buffer(f"{name}_std", torch.ones(size))

    @torch.no_grad()
    def set_statistics(self, known_mean, known_std, level_mean, level_std, level_floor=None) -> None:
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


class LevelGain(DataUnits):
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


class LevelFloor(known_future.KnownFutureDecoder):
    """The package's decoder without its dropout, as it ran before it had any."""

    DROPOUT = 0.0


def without_gain(self, known, level, static=None):
    """A candidate's forward with no gain on the level: each effect is ``d level_std``, with the
    candidate's dropout on the step's inputs."""
    c = level.shape[-1]
    step = known_future._dropped(self.step_inputs(known), self.DROPOUT, self.training).to(level.dtype)
    context = self.channel_context(level.shape[0], c, static).to(level.dtype)
    return pairwise(self.decode, step, context)[..., 0] * self.level_std[:c]


class FeatureDropout(known_future.KnownFutureDecoder):
    """The package's decoder until ``level_floor_dropout``: no gain on the level (nor its modules,
    so a seed draws its weights), each effect ``d level_std``, with the package's dropout."""

    REQUIRED = frozenset()
    forward = without_gain

    def build_gain(self, n_channels):
        pass

    @torch.no_grad()
    def set_statistics(self, known_mean, known_std, level_mean, level_std, level_floor=None) -> None:
        super().set_statistics(known_mean, known_std, level_mean, level_std)  # no floor to set


class ReplicatedHistory(LevelFloor):
    """The package's decoder until ``level_floor`` was chosen: its gain scaled the window's level
    from the training mean, ``level + offset level_std`` (offset learned from 0), so where a test
    period's level moved away from the training mean the gain scaled what it never saw."""

    def gained(self, level):
        c = level.shape[-1]
        return level + self.offset[:c] * self.level_std[:c]


class Regression(LevelFloor):
    """The package's decoder until ``step_gain`` was chosen: its gain read the filters' responses
    too, which read zeros before the window, so it could tell a window step from a horizon step (on
    ETTh1 with a calendar it pulled the horizon toward the training period's level). Its modules
    are made in that decoder's order, so a seed draws the same weights."""

    def __init__(self, seq_len, n_future, n_channels, n_static=0):
        nn.Module.__init__(self)
        self.seq_len = seq_len
        self.features = ResidualMLP(n_future, FEATURE_HIDDEN, FEATURES)
        self.filters = nn.Conv1d(FEATURES, FILTERS, seq_len)
        self.channel = nn.Parameter(torch.zeros(n_channels, CONTEXT))
        self.static = nn.Linear(n_static, CONTEXT, bias=False) if n_static else None
        self.decode = ResidualMLP(FILTERS + FEATURES + CONTEXT, HIDDEN, 1, zero=True)
        self.gain = ResidualMLP(FILTERS + FEATURES + CONTEXT, HIDDEN, 1, zero=True)
        self.offset = nn.Parameter(torch.zeros(n_channels))
        self.register_buffer("known_mean", torch.zeros(n_future))
        self.register_buffer("known_std", torch.ones(n_future))
        self.register_buffer("level_std", torch.ones(n_channels))
        self.register_buffer("level_floor", torch.zeros(n_channels))

    @staticmethod
    def gain_inputs(step):
        return step  # the filters' responses too

    gained = ReplicatedHistory.gained

    def with_history(self, features):
        return torch.nn.functional.pad(features, (self.seq_len - 1, 0))  # zeros before the window


class RegressionWithoutGain(Regression):
    """:class:`Regression` without its gain on the window's level: each effect is ``d level_std``.
    A check of the gain on ETTh1 with a calendar. It keeps the unused ``gain`` and ``offset`` (a
    seed draws :class:`Regression`'s weights), which its parameter count includes."""

    forward = without_gain


class StepGain(Regression):
    """:class:`Regression` with its gain read off the step's own features and the channel only, zeros
    before the window; its gain is drawn after :class:`Regression`'s modules (the package draws it
    in their place), so a seed's weights, and its scores, differ from ``replicated_history``'s."""

    def __init__(self, seq_len, n_future, n_channels, n_static=0):
        super().__init__(seq_len, n_future, n_channels, n_static)
        self.gain = ResidualMLP(FEATURES + CONTEXT, HIDDEN, 1, zero=True)

    gain_inputs = staticmethod(LevelFloor.gain_inputs)


class LevelFloorWithoutGain(LevelFloor):
    """:class:`LevelFloor` without its gain, each effect ``d level_std``: the package's decoder until
    ``feature_dropout`` (no dropout), with ``level_floor``'s unused ``gain`` and ``offset`` (a seed
    draws its weights; its parameter count includes them), as its recorded runs had them."""

    forward = without_gain


class WindowSpread(FeatureDropout):
    """The package's decoder of the time (``feature_dropout`` without dropout) whose effects may
    scale with the window's spread: ``d level_std (1 +
    a (spread / level_std - 1))``, ``spread`` the target's std over the window (:class:`PackageNetwork`
    sets it), ``a`` a learned share per channel, 0 at the start (the package's decoder): a daily
    profile whose size follows the series' season, a promotion whose effect grows with the series'
    swings. Its share is drawn after the package's modules (zeros: a seed draws the package's weights).
    It has no dropout: it ran before the package's decoder had."""

    DROPOUT = 0.0

    def __init__(self, seq_len, n_future, n_channels, n_static=0):
        super().__init__(seq_len, n_future, n_channels, n_static)
        self.spread_share = nn.Parameter(torch.zeros(n_channels))

    def forward(self, known, level, static=None):
        effects, c = without_gain(self, known, level, static), level.shape[-1]
        ratio = self.spread.to(effects.dtype) / self.level_std[:c]  # (B, 1, C)
        return effects * (1 + self.spread_share[:c] * (ratio - 1))


CANDIDATES = {
    "filters": Filters,
    "tide": Tide,
    "feature_filters": FeatureFilters,
    "no_level": NoLevel,
    "level_gain": LevelGain,
    "data_units": DataUnits,
    "regression": Regression,
    "regression_without_gain": RegressionWithoutGain,
    "step_gain": StepGain,
    "replicated_history": ReplicatedHistory,
    "level_floor": LevelFloor,
    "level_floor_without_gain": LevelFloorWithoutGain,  # with level_floor's unused modules
    "window_spread": WindowSpread,
    "feature_dropout": FeatureDropout,
    "level_floor_dropout": known_future.KnownFutureDecoder,  # the package's
}


class AddedToTheHead(XCTFormerNet):
    """The network as it was before ``regression``: the decoder's output, ``CANDIDATE``'s, adds to
    the head's (standardised) output. Subclasses name the candidate (:func:`with_candidate`); it is
    built in the decoder's place, so a seed draws the backbone's weights as the package does."""

    CANDIDATE: type = DataUnits

    def __init__(self, config, *args, **kwargs):
        c = config
        sizes = (c.patch_num, c.d_model, c.seq_len, c.n_future_channels, c.future_len, c.out_len, c.n_token_channels)
        candidate = lambda *_: self.CANDIDATE(*sizes, c.n_static_tokens * c.static_features)  # noqa: E731
        with mock.patch.object(network_module, "KnownFutureDecoder", candidate):
            super().__init__(config, *args, **kwargs)

    def set_statistics(self, known=None, level=None, static=None, level_floor=None) -> None:
        super().set_statistics(known, level, static)  # no candidate here reads the floor

    def forward(self, x, mask=None, n_outputs: Optional[int] = None, future=None, static=None):
        self._check_input(x, mask, future, static)
        c = self.config
        n_outputs = c.n_token_channels if n_outputs is None else n_outputs
        f = c.n_future_channels
        known = torch.cat([x[..., -f:], future.to(x.dtype)], dim=1) if f else None
        x = x[..., : c.n_token_channels]
        observed = None if mask is None else mask[..., : c.n_token_channels].bool()
        mean, std = instance_stats(x, observed)
        x = (x - mean) / std
        if observed is not None:
            x = torch.where(observed, x, 0.0)
        tokens = [self.tokenizer(x)]
        if c.n_static_tokens:
            static = ((static - self.static_mean) / self.static_std).to(x.dtype)
            tokens.append(self.static_projection(static) + self.static_position)
        encoded = self.encoder(torch.cat(tokens, dim=1) if len(tokens) > 1 else tokens[0])
        channels = self.head.channels(encoded[:, : c.n_grid_tokens], c.n_token_channels, n_outputs)
        out = self.head(channels)
        mean, std = mean[..., :n_outputs], std[..., :n_outputs]
        if f:
            out = out + self.known_future(channels, known, mean, std, static)
        return out * std + mean


class PackageNetwork(XCTFormerNet):
    """The package's network with ``CANDIDATE``, a :class:`~known_future.KnownFutureDecoder`
    subclass, built in its decoder's place (the same weights for a seed)."""

    CANDIDATE: type = known_future.KnownFutureDecoder

    def __init__(self, config, *args, **kwargs):
        with mock.patch.object(network_module, "KnownFutureDecoder", self.CANDIDATE):
            super().__init__(config, *args, **kwargs)

    def forward(self, x, mask=None, n_outputs: Optional[int] = None, future=None, static=None):
        """The package's forward, the candidate given the targets' window std (``spread``) first:
        over the observed values, as the package reads their mean."""
        c = self.config
        self._check_input(x, mask, future, static)  # before the spread reads them
        if c.n_future_channels:
            n = c.n_token_channels if n_outputs is None else n_outputs
            observed = None if mask is None else mask[..., :n].bool()
            targets = x[..., :n] if observed is None else torch.where(observed, x[..., :n], 0.0)
            self.known_future.spread = instance_stats(targets, observed)[1]
        return super().forward(x, mask, n_outputs, future, static)


def with_candidate(candidate: type) -> type:
    """The network class that runs ``candidate`` (a value of :data:`CANDIDATES`) as its decoder."""
    if issubclass(candidate, known_future.KnownFutureDecoder):  # the package's network, another decoder in it
        return type(f"With{candidate.__name__}", (PackageNetwork,), {"CANDIDATE": candidate})
    return type(f"With{candidate.__name__}", (AddedToTheHead,), {"CANDIDATE": candidate})
