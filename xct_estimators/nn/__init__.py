"""The XCTFormer network in plain PyTorch (no Darts, sktime or Lightning)."""

from . import requirements  # noqa: F401 (first: it checks torch before the modules that need it)
from .absact import abs_act
from .attention import CRABAttention, DeCoPAttention
from .config import XCTFormerConfig, patch_count
from .hyperparameters import DEFAULT_MAX_ATTENTION_BYTES, HYPERPARAMETERS, NETWORK_PARAMS
from .model import XCTFormerNet
from .norm import instance_stats
from .presets import (
    ABLATIONS,
    DECOP_CHANNEL_THRESHOLD,
    PRESETS,
    XCTFormerPreset,
    auto_decop_k,
    get_preset,
    list_presets,
)
from .tokenizer import PatchTokenizer

__all__ = [
    "ABLATIONS",
    "CRABAttention",
    "DECOP_CHANNEL_THRESHOLD",
    "DEFAULT_MAX_ATTENTION_BYTES",
    "DeCoPAttention",
    "HYPERPARAMETERS",
    "NETWORK_PARAMS",
    "PRESETS",
    "PatchTokenizer",
    "XCTFormerConfig",
    "XCTFormerNet",
    "XCTFormerPreset",
    "abs_act",
    "auto_decop_k",
    "get_preset",
    "instance_stats",
    "list_presets",
    "patch_count",
]
