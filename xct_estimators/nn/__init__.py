"""The XCTFormer network in plain PyTorch (no Darts, sktime or Lightning)."""

from importlib import import_module

from . import requirements  # noqa: F401 (first: it checks torch before the modules that need it)

#: Public names and the submodule each lives in: imported on first use, so reading a preset or a
#: hyperparameter's name (``xct-bench``'s parser) does not load torch.
_LAZY = {
    "abs_act": "absact",
    "CRABAttention": "attention",
    "DeCoPAttention": "attention",
    "XCTFormerConfig": "config",
    "patch_count": "config",
    "DEFAULT_MAX_ATTENTION_BYTES": "hyperparameters",
    "HYPERPARAMETERS": "hyperparameters",
    "NETWORK_PARAMS": "hyperparameters",
    "XCTFormerNet": "model",
    "instance_stats": "norm",
    "ABLATIONS": "hyperparameters",
    "DECOP_CHANNEL_THRESHOLD": "hyperparameters",
    "PRESETS": "presets",
    "XCTFormerPreset": "presets",
    "auto_decop_k": "hyperparameters",
    "get_preset": "presets",
    "list_presets": "presets",
    "PatchTokenizer": "tokenizer",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))


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
