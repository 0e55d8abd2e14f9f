"""The XCTFormer network in plain PyTorch (no Darts, sktime or Lightning)."""

from .attention import CRABAttention, DeCoPAttention, abs_act
from .config import (
    ABLATIONS,
    DECOP_CHANNEL_THRESHOLD,
    DEFAULT_MAX_ATTENTION_BYTES,
    XCTFormerConfig,
    auto_decop_k,
    patch_count,
)
from .model import XCTFormerNet
from .norm import instance_stats
from .presets import PRESETS, XCTFormerPreset, get_preset, list_presets
from .tokenizer import PatchTokenizer

__all__ = [
    "ABLATIONS",
    "CRABAttention",
    "DECOP_CHANNEL_THRESHOLD",
    "DEFAULT_MAX_ATTENTION_BYTES",
    "DeCoPAttention",
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
