"""The network's hyperparameters, defined once: name, default and documentation; and the paper's
rules on them: when DeCoP replaces full CRAB, and the ablations as overrides.

:class:`~xct_estimators.nn.XCTFormerConfig`'s fields, every estimator's signature, and the name
lists of the adapters, ``xct-bench --arch`` and the tuner come from :data:`HYPERPARAMETERS`. So do
the estimators' docstrings: :func:`documented` writes each entry (:func:`parameter_entries`) where
a docstring says ``{parameters}``.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from dataclasses import dataclass
from typing import Any, Optional

#: Default bound for a training batch's full-CRAB attention memory (see :mod:`.memory`).
DEFAULT_MAX_ATTENTION_BYTES = 16 * 1024**3

#: The paper's rule (App. C): DeCoP replaces full CRAB above this many channels.
DECOP_CHANNEL_THRESHOLD = 60

#: The ablations of the paper's Sec. 5 / App. E, as field overrides.
ABLATIONS: dict[str, dict] = {
    "no_mask": {"use_mask": False},
    "softmax": {"activation": "softmax"},
    "vanilla": {"use_mask": False, "activation": "softmax", "decop_k": None},
    "time": {"mixing": "time"},
    "channel": {"mixing": "channel"},
    "clipped": {"activation": "absact_clipped"},  # AbsAct, then negative weights set to 0 (ReLU)
}


def auto_decop_k(n_channels: int, k: int = 64) -> Optional[int]:
    """The paper's rule: full CRAB up to :data:`DECOP_CHANNEL_THRESHOLD` channels, DeCoP with ``k``
    columns above."""
    return k if n_channels > DECOP_CHANNEL_THRESHOLD else None


@dataclass(frozen=True)
class Hyperparameter:
    name: str
    default: Any
    type: str  # as numpydoc writes it
    doc: str


_H = Hyperparameter
# fmt: off
HYPERPARAMETERS: tuple[Hyperparameter, ...] = (
    _H("patch_len", 16, "int", "Length of each patch (token) cut from every channel."),
    _H("stride", 8, "int", "Step between the starts of consecutive patches (the paper: ``patch_len / 2``)."),
    _H("d_model", 32, "int", "Width of every token; must be divisible by ``n_heads``."),
    _H("n_heads", 2, "int", "Number of attention heads."),
    _H("d_ff", 64, "int", "Width of the hidden layer of each encoder layer's feed-forward block."),
    _H("e_layers", 2, "int", "Number of encoder layers."),
    _H("dropout", 0.1, "float", "Dropout on the patch tokens (after the positional embedding)."),
    _H("fc_dropout", 0.05, "float", "Dropout on the attention output (before its residual) and in the feed-forward "
       "block."),
    _H("attn_dropout", 0.5, "float", "Dropout on the attention weights (after AbsAct, before they multiply V)."),
    _H("head_dropout", 0.0, "float", "Dropout on the flattened tokens before the linear output head."),
    _H("decop_k", None, "int or None", "``None`` for full CRAB attention over all N = channels x patches tokens; an "
       "integer ``k`` compresses the N x N attention to N x k with DeCoP (no learnable mask then)."),
    _H("use_mask", True, "bool", "Ablation switch: ``False`` removes CRAB's learnable mask and its min-shift."),
    _H("activation", "absact", '{"absact", "softmax", "absact_clipped"}', '``"absact"`` (the paper), ``"softmax"`` '
       '(ablation; scores scaled by 1/sqrt(d)) or ``"absact_clipped"`` (ablation: AbsAct\'s negative weights set to '
       "zero)."),
    _H("mixing", "full", '{"full", "time", "channel"}', '``"full"`` (every token attends to every token), ``"time"`` '
       '(only to tokens of its own channel) or ``"channel"`` (only to tokens of its own patch index); the last two '
       "are the paper's ablations."),
    _H("decop_variant", "paper", '{"paper", "authors"}', 'With DeCoP only: ``"paper"`` (the paper\'s equations) or '
       '``"authors"`` (the authors\' code\'s value reshaping and compressor initialisation; see ``docs/decop.md``).'),
    _H("fused_attention", None, "bool or None", "``True``: run CRAB's chain from Q, K, V to the weighted values as "
       "one autograd function that keeps no N x N tensor for the backward pass (a C++ kernel on a CPU, Triton kernels "
       "on a GPU; gradients equal plain autograd's). ``False``: the plain path of PyTorch operations, which keeps the "
       "N x N weights. ``None``: the one measured faster, the plain path on a GPU in a compiled run where a batch's "
       "N x N weights fit in ``max_attention_bytes``, the fused one elsewhere (docs/forecasting.md, GPU)."),
    _H("max_attention_bytes", DEFAULT_MAX_ATTENTION_BYTES, "int or None", "Bound on the estimated memory of full "
       "CRAB attention, checked for one sample when the model is built and for a training batch at ``fit``; above "
       "it an error names the largest batch that fits and suggests ``decop_k``. ``None`` disables the check."),
)
# fmt: on

BY_NAME: dict[str, Hyperparameter] = {h.name: h for h in HYPERPARAMETERS}
#: Every hyperparameter's name, in the table's order.
NETWORK_PARAMS: tuple[str, ...] = tuple(BY_NAME)
#: The architecture: what a search space or ``xct-bench --arch`` may set (numbers only).
ARCHITECTURE_PARAMS: tuple[str, ...] = (
    "patch_len",
    "stride",
    "d_model",
    "n_heads",
    "d_ff",
    "e_layers",
    "dropout",
    "fc_dropout",
    "attn_dropout",
    "decop_k",
)
#: The reconstruction estimators (engine, imputer, detector, scorer) differ in one default: their
#: defaults were measured together with this attention dropout (``benchmarks/imputer_defaults.py``).
RECONSTRUCTION_DEFAULTS: dict[str, Any] = {"attn_dropout": 0.3}


def defaults(reconstruction: bool = False) -> dict[str, Any]:
    """Every hyperparameter's default (the reconstruction estimators' with ``reconstruction``)."""
    values = {h.name: h.default for h in HYPERPARAMETERS}
    return {**values, **RECONSTRUCTION_DEFAULTS} if reconstruction else values


def hyperparameters_of(estimator_cls) -> tuple[str, ...]:
    """The hyperparameters ``estimator_cls.__init__`` takes, in its signature's order."""
    return tuple(name for name in inspect.signature(estimator_cls.__init__).parameters if name in BY_NAME)


def network_kwargs(estimator) -> dict[str, Any]:
    """The hyperparameters an estimator holds as attributes (those its signature takes), by name:
    how every adapter hands its architecture to :class:`~xct_estimators.nn.XCTFormerConfig`."""
    return {name: getattr(estimator, name) for name in NETWORK_PARAMS if hasattr(estimator, name)}


#: Extra values the forecasting estimators take for ``decop_k``.
DECOP_AUTO_DOC = (
    'int, "auto" or None',
    '``"auto"``: the paper\'s rule (DeCoP with ``k=64`` above 60 channels, '
    "counting target and past-covariate components).",
)


def architecture_type(name: str) -> type:
    """``int`` or ``float``: how ``xct-bench --arch`` parses an architecture value."""
    return float if BY_NAME[name].type == "float" else int


# -- documentation: each estimator's docstring gets these entries from the table -----------------

_WIDTH = 100


def _default_text(value) -> str:
    if value == DEFAULT_MAX_ATTENTION_BYTES and not isinstance(value, bool):
        return "16 GiB"
    return repr(value)


def parameter_entries(cls, style: str, extra: dict | None = None, more: dict | None = None) -> dict[str, str]:
    """Name -> the docstring entry of each hyperparameter ``cls.__init__`` takes, and of each entry
    of the adapter's own table ``more`` (name -> Hyperparameter), as the docstring must hold it (the
    tests check it). ``style``: ``"sktime"`` (``name : type, default=...``) or ``"darts"``
    (``Default: ...`` last). ``extra``: name -> (type, sentence added) where an estimator takes more
    values."""
    entries = {}
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        spec = BY_NAME.get(name) or (more or {}).get(name)
        if spec is None:
            continue
        default = _default_text(parameter.default)
        kind, added = (extra or {}).get(name, (spec.type, ""))
        text = f"{spec.doc} {added}".strip()
        head = f"{name} : {kind}, default={default}" if style == "sktime" else name
        text = text if style == "sktime" else f"{text} Default: ``{default}``."
        entries[name] = "\n".join([head, *textwrap.wrap(text, _WIDTH, initial_indent="    ", subsequent_indent="    ")])
    return entries


#: The line of a docstring that :func:`documented` replaces with the entries.
PLACEHOLDER = "{parameters}"


def documented(style: str, extra: dict | None = None, more: dict | None = None, own_words: tuple = ()):
    """Class decorator: the ``{parameters}`` line of the class's docstring (or of its ``__init__``'s,
    as Darts writes it) becomes the entry of each hyperparameter the class takes, in its signature's
    order, as :func:`parameter_entries` writes it; the entries named in ``own_words`` stay written
    out in the docstring. One home for each entry: its table."""

    def decorate(cls):
        entries = parameter_entries(cls, style, extra, more)
        if sys.flags.optimize >= 2:  # python -OO: no docstrings to write into
            return cls
        holder = next((h for h in (cls, cls.__init__) if PLACEHOLDER in (h.__doc__ or "")), None)
        if holder is None:
            raise ValueError(f"{cls.__name__}'s docstring needs a line {PLACEHOLDER} where its parameters go.")
        lines = holder.__doc__.split("\n")
        at = next(i for i, line in enumerate(lines) if line.strip() == PLACEHOLDER)
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        ours = [entry for name, entry in entries.items() if name not in own_words]
        written = [indent + line for entry in ours for line in entry.split("\n")]
        holder.__doc__ = "\n".join(lines[:at] + written + lines[at + 1 :])
        return cls

    return decorate
