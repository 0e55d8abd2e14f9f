"""The decoder of known future inputs (docs/forecasting.md, Covariates, says why it is built so).

A regression with forecast errors: the targets are the known inputs' effects plus a series the
paper's network forecasts. At every step ``t`` of window and horizon, a small MLP turns the step's
covariates, standardised with the training data's statistics, into :data:`FEATURES` features (any
function of one step's values: a square, a threshold, a product of two inputs); :data:`FILTERS`
learned causal filters read those features over the ``seq_len`` steps up to ``t`` (a lag, a decay),
taking the window's first step for the steps before it, so that covariates which hold one value
give every step the same response; and for each target channel an MLP of the filters' responses,
the step's features and the channel's context (which channel it is, the static covariates) gives
the step's effect in the data's units (the channel's training spread), and an MLP of the step's
features and the channel's context a gain on the window's level, so that the effect is ``d
level_std + g (level - floor + softplus(offset) level_std)``: a promotion whose effect grows with
the series' own level (the suite's ``known-multiplicative``). The level is measured from the lowest
window mean of training (``floor``), so the share it scales is positive in training: a share of the
level measured from the training mean would flip sign when a test period's level moves past it. The
gain reads no filter: the filters' responses at the window's first steps read a history the network
does not have, so a gain that read them could tell a window step from a horizon step and move the
horizon by a share of the window's level that no covariate explains. In training, dropout
(:data:`DROPOUT`) on the feature MLP's hidden layer and on what decoding and gain read of a step
shrinks effects the data support weakly: without it, the gain learned a share of ETTm1's level in
its training period that a calendar does not explain, and moved the long horizons by it. The
network takes the window's effects off the window before it normalises it and adds the horizon's
to its forecast, so the backbone forecasts what the covariates do not explain. No effect reads the
target's tokens: they would see the effects being taken off. The effects are zero at the start of
training, which starts from the paper's forecast.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import crab_kernel, ops

#: Features of one step's covariates, learned filters over them, and the width of a channel's context.
FEATURES, FILTERS, CONTEXT = 8, 16, 16
#: Hidden widths of the per-step feature MLP and of the per-channel decoding MLP.
FEATURE_HIDDEN, HIDDEN = 32, 64
#: Dropout in training on the feature MLP's hidden layer and on what decoding and gain read of a step:
#: TiDE's default rate (``darts.models.TiDEModel``), which shrinks effects the data support weakly.
DROPOUT = 0.1


def usable_scale(mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """``std``, where an input was constant in training (std 0) its mean's size (at least 1): a
    later value far from that constant stays of moderate size once standardised."""
    return torch.where(std > 0, std, mean.abs().clamp_min(1.0))


class ResidualMLP(nn.Module):
    """TiDE's residual block without its layer norm: ``Linear -> ReLU -> Linear`` plus a linear
    skip, ``dropout`` on the hidden layer in training."""

    dropout = 0.0  # what a pickle made before the rate was an attribute unpickles with

    def __init__(self, inputs: int, hidden: int, outputs: int, zero: bool = False, dropout: float = 0.0):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, outputs))
        self.skip = nn.Linear(inputs, outputs)
        self.dropout = dropout
        if zero:  # the output starts at zero
            for layer in (self.mlp[-1], self.skip):
                nn.init.zeros_(layer.weight)
                nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first, relu, last = self.mlp
        return last(_dropped(relu(first(x)), self.dropout, self.training)) + self.skip(x)


def _dropped(x: torch.Tensor, rate: float, training: bool) -> torch.Tensor:
    """``x`` through dropout at ``rate`` in training; untouched (no random draw) at rate 0."""
    return F.dropout(x, rate, training) if rate else x


class KnownFutureDecoder(nn.Module):
    """(known covariates over window and horizon, the targets' window level, static covariates) ->
    each target channel's effect at every step, in the data's units.

    The buffers ``known_mean``/``known_std`` (per covariate) standardise the covariates,
    ``level_std`` (per target channel) is the data's unit of the effects and ``level_floor`` (per
    target channel) the zero of the level the gain scales; they are the identity (and 0) until
    :meth:`set_statistics` gives them the training data's (``XCTFormerModel.fit`` does).
    """

    #: The decoder's dropout rate (the lab's candidates before ``feature_dropout`` have none).
    DROPOUT = DROPOUT

    def __init__(self, seq_len: int, n_future: int, n_channels: int, n_static: int = 0):
        super().__init__()
        self.seq_len = seq_len
        self.features = ResidualMLP(n_future, FEATURE_HIDDEN, FEATURES, dropout=self.DROPOUT)
        self.filters = nn.Conv1d(FEATURES, FILTERS, seq_len)  # causal: step t reads the seq_len steps up to t
        self.channel = nn.Parameter(torch.zeros(n_channels, CONTEXT))
        self.static = nn.Linear(n_static, CONTEXT, bias=False) if n_static else None
        self.decode = ResidualMLP(FILTERS + FEATURES + CONTEXT, HIDDEN, 1, zero=True)
        self.register_buffer("known_mean", torch.zeros(n_future))
        self.register_buffer("known_std", torch.ones(n_future))
        self.register_buffer("level_std", torch.ones(n_channels))
        self.build_gain(n_channels)

    def build_gain(self, n_channels: int) -> None:
        """The gain on the window's level, its margin and its floor, drawn after the other modules."""
        self.gain = ResidualMLP(FEATURES + CONTEXT, HIDDEN, 1, zero=True)  # the step's features only
        self.offset = nn.Parameter(torch.zeros(n_channels))  # the level's zero below the floor, softplus'd spreads
        self.register_buffer("level_floor", torch.zeros(n_channels))

    #: What this decoder holds and the development builds without a gain on the window's level had not.
    REQUIRED = frozenset({"gain", "offset", "level_floor"})
    REFIT = (
        "This model was saved by a development build whose known-future decoder lacks this one's gain on the "
        "window's level above the training floor, which no release has: refit the model with its future covariates"
    )

    def __setstate__(self, state: dict) -> None:
        """A pickle (an sktime forecaster's) of the decoder without the gain is refused: unpickled as
        it is, it would fail at its first forecast with an error that names no cause."""
        held = {*state.get("_modules", {}), *state.get("_parameters", {}), *state.get("_buffers", {})}
        if self.REQUIRED - held:
            raise ValueError(f"{self.REFIT}.")
        super().__setstate__(state)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        """Weights without the gain (``load_weights``, Lightning's ``load_from_checkpoint``) are
        refused with :attr:`REFIT`, not a list of missing keys."""
        held = {key[len(prefix) :].split(".")[0] for key in state_dict if key.startswith(prefix)}
        missing = sorted(self.REQUIRED - held)
        if missing:
            raise ValueError(f"{self.REFIT} (its weights lack {', '.join(prefix + name for name in missing)}).")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @torch.no_grad()
    def set_statistics(self, known_mean, known_std, level_mean, level_std, level_floor=None) -> None:
        """The training data's mean and std of each covariate and of the first channels (the
        targets), and the targets' lowest window mean (``level_floor``); a std of 0 (constant in
        training) is replaced as :func:`usable_scale` says."""
        known_mean, known_std, level_mean, level_std = (
            torch.as_tensor(v, dtype=torch.float32) for v in (known_mean, known_std, level_mean, level_std)
        )
        self.known_mean[:] = known_mean
        self.known_std[:] = usable_scale(known_mean, known_std)
        self.level_std[: len(level_std)] = usable_scale(level_mean, level_std)  # the targets', the first channels
        if level_floor is not None:
            self.level_floor[: len(level_std)] = torch.as_tensor(level_floor, dtype=torch.float32)

    def forward(self, known: torch.Tensor, level: torch.Tensor, static=None) -> torch.Tensor:
        """``known`` (B, seq_len + future_len, F), as given; ``level`` (B, 1, C): the window mean
        of each of the first C channels (the targets), as given; ``static`` (B, rows, features): the
        static covariates, standardised, if the network has them. Returns the effects (B, seq_len + future_len, C)."""
        c = level.shape[-1]
        step = _dropped(self.step_inputs(known), self.DROPOUT, self.training).to(level.dtype)  # (B, L + H, R + E)
        context = self.channel_context(level.shape[0], c, static).to(level.dtype)  # (B, C, Z)
        gain = pairwise(self.gain, self.gain_inputs(step), context)[..., 0]
        return pairwise(self.decode, step, context)[..., 0] * self.level_std[:c] + gain * self.gained(level)

    def gained(self, level: torch.Tensor) -> torch.Tensor:
        """What the gain scales, (B, 1, C): the window's level above the training floor, plus a
        learned positive margin (the module's docstring)."""
        c = level.shape[-1]
        return level - self.level_floor[:c] + F.softplus(self.offset[:c]) * self.level_std[:c]

    @staticmethod
    def gain_inputs(step: torch.Tensor) -> torch.Tensor:
        """What the gain reads of step t: its features, not the filters' responses (the module's docstring)."""
        return step[..., FILTERS:]

    def step_inputs(self, known: torch.Tensor) -> torch.Tensor:
        """What the decoding reads of step t: the filters' responses up to t and t's features."""
        features = self.features((known - self.known_mean) / self.known_std)  # (B, L + H, E)
        responses = self.filtered(self.with_history(features.transpose(1, 2))).transpose(1, 2)  # (B, L + H, R)
        return torch.cat([responses, features], dim=-1)

    def filtered(self, features: torch.Tensor) -> torch.Tensor:
        """The filters' responses to ``features`` (B, E, seq_len - 1 + T), (B, R, T). In eager training
        on CPU (:func:`_eager_cpu_training`) by FFT, since a seq_len-wide convolution's backward is
        most of a long horizon's step there; elsewhere by the convolution."""
        if not _eager_cpu_training(self, features):
            return self.filters(features)
        n, width = features.shape[-1], self.seq_len
        size = 1 << (n - 1).bit_length()  # a circular product this long is the linear one where it is read
        products = torch.einsum(
            "bef,ref->brf", torch.fft.rfft(features, n=size), torch.fft.rfft(self.filters.weight.flip(-1), n=size)
        )
        return torch.fft.irfft(products, n=size)[..., width - 1 : n] + self.filters.bias[:, None]

    def with_history(self, features: torch.Tensor) -> torch.Tensor:
        """``features`` (B, E, T) after ``seq_len - 1`` steps before the window, each the window's
        first: zeros would give early window steps responses of their own, apart from any covariate."""
        first = features[..., :1].expand(-1, -1, self.seq_len - 1)  # F.pad's replicate: no deterministic CUDA backward
        return torch.cat([first, features], dim=-1)

    def channel_context(self, batch: int, n_channels: int, static) -> torch.Tensor:
        """What the decoding reads of each target channel: which channel it is, the static covariates."""
        own = self.channel[:n_channels].expand(batch, n_channels, CONTEXT)  # (B, C, Z)
        if self.static is not None:  # a response that depends on what the static covariates say
            own = own + self.static(static.flatten(1).to(own.dtype))[:, None]
        return own


def pairwise(mlp: ResidualMLP, step: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    """``mlp`` of every (step, channel) pair's concatenated inputs, (B, T, C, outputs), from
    ``step`` (B, T, S) and ``context`` (B, C, Z): its first layer and skip are linear, so each is
    applied to the step and the channel apart and the two added, not to B x T x C concatenations.
    In training on CPU the hidden layer runs in the C++ kernel (:func:`~.ops.pairwise_relu`), which
    never stores the (B, T, C, hidden) values: most of a long horizon's training step otherwise.
    ``mlp`` has no dropout here (the decoder drops out ``step``'s values before)."""
    assert not mlp.dropout, "pairwise applies no hidden dropout"
    first, last, skip, s = mlp.mlp[0], mlp.mlp[2], mlp.skip, step.shape[-1]

    def linear(layer: nn.Linear) -> torch.Tensor:
        by_step = F.linear(step, layer.weight[:, :s], layer.bias)  # (B, T, O)
        return by_step[:, :, None] + F.linear(context, layer.weight[:, s:])[:, None]  # (B, T, C, O)

    if _kernel_for(mlp, step) is not None:
        by_step, by_channel = F.linear(step, first.weight[:, :s], first.bias), F.linear(context, first.weight[:, s:])
        return (ops.pairwise_relu(by_step, by_channel, last.weight[0]) + last.bias)[..., None] + linear(skip)
    return last(torch.relu(linear(first))) + linear(skip)


def _kernel_for(mlp: ResidualMLP, step: torch.Tensor):
    """The C++ kernels where :func:`pairwise` may use them: an eager training step on CPU
    (:func:`_eager_cpu_training`), a single output, the kernels built."""
    if not (_eager_cpu_training(mlp, step) and mlp.mlp[2].out_features == 1):
        return None
    return crab_kernel.load()


def _eager_cpu_training(module: nn.Module, x: torch.Tensor) -> bool:
    """Whether ``module`` takes its faster training path for ``x``: training with gradients, eager
    (inference, export and compiled runs keep PyTorch's operators; inductor generates no code for
    complex numbers), on CPU in float32 or float64 without autocast (whose products are bfloat16,
    which neither the kernel nor the CPU's FFT takes)."""
    if not (module.training and torch.is_grad_enabled()) or torch.compiler.is_compiling():
        return False
    if torch.is_autocast_enabled("cpu"):
        return False
    return x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
