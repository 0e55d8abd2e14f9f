"""Optional dependencies: imported where used, with the extra that installs them named on failure."""

from __future__ import annotations

import importlib
from types import ModuleType


def optional_import(*modules: str, extra: str, purpose: str) -> ModuleType:
    """Import ``modules`` (returning the first), or raise an ``ImportError`` that says what needs
    them and which extra of ``xct-estimators`` installs them."""
    try:
        return [importlib.import_module(name) for name in modules][0]
    except ImportError as error:
        raise ImportError(
            f"{purpose} needs {modules[0].split('.')[0]}: pip install 'xct-estimators[{extra}]' ({error})."
        ) from None
