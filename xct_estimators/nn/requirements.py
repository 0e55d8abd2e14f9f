"""The oldest torch the network runs on, checked when :mod:`xct_estimators.nn` is imported.

``torch.library.custom_op`` (the fused attention as an operator the compiler and exporters can
see) arrived in torch 2.4. pip refuses an older torch through the package's requirement; this
check names the fix where an environment was put together another way.
"""

from __future__ import annotations

import importlib.metadata
import re

#: The oldest supported torch, as (major, minor); ``pyproject.toml`` and the sktime estimators'
#: dependency tags say the same (``tests/nn/test_requirements.py``).
MIN_TORCH = (2, 4)
MIN_TORCH_TEXT = ".".join(map(str, MIN_TORCH))


def check_torch(version: str) -> None:
    """Raise an ``ImportError`` naming the fix when torch ``version`` is older than :data:`MIN_TORCH`."""
    numbers = re.match(r"(\d+)\.(\d+)", version)
    if numbers is None or (int(numbers.group(1)), int(numbers.group(2))) >= MIN_TORCH:
        return
    raise ImportError(
        f"xct-estimators needs torch >= {MIN_TORCH_TEXT} (torch.library.custom_op, for compiling and exporting "
        f"the network); this environment has torch {version}. Upgrade it: pip install -U 'torch>={MIN_TORCH_TEXT}'."
    )


def installed_torch() -> str:
    """The installed torch's version, from its metadata (importing torch takes a second), else from
    torch itself (a build without metadata)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        import torch

        return torch.__version__


check_torch(installed_torch())
