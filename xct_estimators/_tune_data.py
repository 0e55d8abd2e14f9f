"""The data of a hyperparameter search: training and validation, checked once, the same
validation targets for every input length a trial reads."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

#: Share of the training data held out for validation when none is given.
VALIDATION_FRACTION = 0.2


class SearchData:
    """The training and validation data of a search, checked once.

    Forecasting validation data holds ``look_back`` steps (the longest input length a trial may
    read) before its first target; a trial with a shorter input drops the steps it does not read
    (:meth:`val_for`), so every trial is scored on the same targets.
    """

    def __init__(self, task: str, series, val_series, params: dict[str, Any], output_chunk_length: int, look_back: int):
        self.look_back = look_back
        if task == "forecast":
            from ._series_checks import as_list

            train = as_list(series)
            if val_series is None:
                train, val = zip(*(_split_series(s, look_back) for s in train), strict=True)
                train, val = list(train), list(val)
            else:
                val = as_list(val_series)
            self.train, self.val = train, val
            self.n_channels = train[0].n_components
            self.out_len = output_chunk_length
            _check_lengths(train, val, look_back, output_chunk_length)
        else:
            self.train = _values(series)
            self.val = None if val_series is None else _values(val_series)
            self.n_channels = self.train.shape[1]
            self.out_len = params["window_length"]

    def val_for(self, input_chunk_length: int):
        """The validation series a trial with ``input_chunk_length`` reads: the same targets for every trial."""
        if self.val is None or input_chunk_length == self.look_back:
            return self.val
        return [series[self.look_back - input_chunk_length :] for series in self.val]

    def fingerprint(self) -> str:
        """sha256 (16 hex digits) of the training and validation values: a study's data."""
        digest = hashlib.sha256()
        for part in (*_as_parts(self.train), *_as_parts(self.val)):
            digest.update(np.ascontiguousarray(_values(part), dtype=np.float64).tobytes())
        return digest.hexdigest()[:16]


def _check_lengths(train: list, val: list, look_back: int, output_chunk_length: int) -> None:
    """Refuse, before any trial, series too short for one window of the longest input length."""
    needed = look_back + output_chunk_length
    for what, parts in (("series", train), ("the validation series", val)):
        for part in parts:
            if len(part) < needed:
                where = " (its first look_back steps are input only)" if what != "series" else ""
                raise ValueError(
                    f"{what} has one of {len(part)} steps, fewer than the longest input length {look_back} + "
                    f"output_chunk_length {output_chunk_length} = {needed}{where}. Give longer series or search "
                    "shorter look-backs."
                )


def n_channels_of(task: str, series) -> int:
    if task == "forecast":
        from ._series_checks import as_list

        return as_list(series)[0].n_components
    return _values(series).shape[1]


def _as_parts(data) -> list:
    return [] if data is None else list(data) if isinstance(data, (list, tuple)) else [data]


def _values(data) -> np.ndarray:
    values = data.values(copy=False) if hasattr(data, "values") and callable(data.values) else np.asarray(data)
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values


def _split_series(series, input_chunk_length: int):
    """The last ``VALIDATION_FRACTION`` of ``series`` as validation (with its look-back before it)."""
    n_val = max(int(len(series) * VALIDATION_FRACTION), 1)
    cut = len(series) - n_val
    if cut < input_chunk_length + 1:
        raise ValueError(
            f"series has {len(series)} steps: too short to hold out {n_val} validation steps after a training "
            f"part of input_chunk_length + 1 = {input_chunk_length + 1}. Pass val_series or a longer series."
        )
    return series[:cut], series[cut - input_chunk_length :]
