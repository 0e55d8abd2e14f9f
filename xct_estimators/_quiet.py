"""Keep Lightning quiet inside ``fit``: users call it in loops and grid searches."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_LOGGERS = ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning")
#: Lightning's hints that do not apply to in-memory tensors on one machine.
_HINTS = (
    ".*does not have many workers.*",
    ".*pin_memory.*",
    ".*litlogger.*",
    ".*LeafSpec.*",
    ".*no `val_dataloader`.*",  # validation is optional by design
    ".*Total length of .* across ranks is zero.*",  # Darts' predict loader on one process
    ".*overridden `transfer_batch_to_device`.*",  # ours, on purpose (XCTFormerModel)
)


@contextmanager
def quiet_lightning() -> Iterator[None]:
    """Silence Lightning's INFO banners ("GPU available", tips) and its data-loader hints;
    warnings that concern the user's data or model still show."""
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            for message in _HINTS:
                warnings.filterwarnings("ignore", message=message)
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
