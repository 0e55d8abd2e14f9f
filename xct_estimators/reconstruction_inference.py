"""Reconstruction after training: windows of any series through the trained network, on one
device (:class:`ReconstructionInference`, a base of
:class:`~xct_estimators.reconstruction.ReconstructionEngine`), and its ONNX export."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import torch

from ._checks import NotFittedError
from ._optional import optional_import
from .nn import memory
from .nn.attention import plain_attention
from .nn.compiling import compile_options, uncompiled
from .nn.fill import linear_fill
from .reconstruction_module import _ReconstructionModule
from .windows import covering_starts


def check_hidden_passes(hidden_passes) -> None:
    """Refuse a ``hidden_passes`` that is neither None nor an integer >= 2."""
    if hidden_passes is not None and not (type(hidden_passes) is int and hidden_passes >= 2):
        raise ValueError(f"hidden_passes must be None or an integer >= 2, got {hidden_passes!r}.")


def _available(device: torch.device) -> bool:
    if device.type == "cuda":
        return torch.cuda.is_available()
    if device.type == "mps":
        return torch.backends.mps.is_available()
    return True


class ReconstructionInference:
    """What a fitted engine does: reconstruct windows and series, score them, export the network.
    Reads the engine's ``module``, ``window_length``, ``window_stride``, ``stride``, ``n_channels``,
    ``batch_size``, ``context``, ``compile``, ``inference_device`` and ``trained_on``."""

    def _net_on_device(self) -> tuple[_ReconstructionModule, torch.device]:
        if self.module is None:
            raise NotFittedError("The engine has not been fitted yet: call fit() first.")
        device = torch.device(self.inference_device or getattr(self, "trained_on", None) or "cpu")
        if not _available(device):
            warnings.warn(
                f"The engine was trained on {device}, which this machine does not have: reconstructing on the "
                "CPU. Pass inference_device to choose another device.",
                UserWarning,
                stacklevel=3,
            )
            device = torch.device("cpu")
        self.module.compile_options = compile_options(self.compile)  # the engine's switch, even if set after fit
        self.module.compile_network(device)
        return self.module.to(device).eval(), device

    @torch.inference_mode()
    def reconstruct_windows(self, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
        """Reconstruct (windows, window_length, channels) ``x`` from its ``visible`` points.

        Each window is reconstructed on its own (no averaging); the values of ``x`` where
        ``visible`` is false are never read.
        """
        module, device = self._net_on_device()
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 3 or x.shape[1:] != (self.window_length, self.n_channels):
            raise ValueError(f"Expected windows of shape (n, {self.window_length}, {self.n_channels}), got {x.shape}.")
        visible = np.asarray(visible, dtype=bool)
        batch = memory.inference_batch_size(module.net.config, self.batch_size)
        out = np.empty_like(x)
        for i in range(0, len(x), batch):
            chunk = np.arange(i, min(i + batch, len(x)))
            rows = _full_batch(chunk, batch, module.compile_options)
            xb = torch.from_numpy(np.where(visible[rows], x[rows], 0.0)).to(device)
            seen = torch.from_numpy(visible[rows]).to(device)
            out[chunk] = module.reconstruct(xb, seen)[: len(chunk)].cpu()
        return out

    def reconstruct(self, values: np.ndarray) -> np.ndarray:
        """Reconstruct a (time, channels) array of any length.

        Missing points (NaN) are filled by the network (imputation); observed points are
        reconstructed too (anomaly scoring). Windows start every ``window_stride`` steps, the
        last one ends at the end of the series, and overlapping outputs are averaged.

        A series shorter than ``window_length`` is taken to follow the training series: it is
        reconstructed as the end of one window whose first steps are the training series' last
        ones, and a warning says so.
        """
        if self.module is None:
            raise NotFittedError("The engine has not been fitted yet: call fit() first.")
        return self._reconstruct_checked(self.check_values(values, fitting=False))

    def _reconstruct_checked(self, values: np.ndarray, skip_heads: bool = False) -> np.ndarray:
        missing = self.window_length - len(values)
        if missing <= 0:
            return self._reconstruct(values, skip_heads)
        warnings.warn(
            f"The series has {len(values)} time steps, fewer than window_length={self.window_length}: "
            f"it was reconstructed as the continuation of the training series (its last {missing} "
            "steps fill the window). Pass at least window_length steps to reconstruct it on its own.",
            UserWarning,
            stacklevel=3,
        )
        padded = np.concatenate([self.context[len(self.context) - missing :], values])
        return self._reconstruct(padded, skip_heads)[missing:]

    @torch.inference_mode()
    def _reconstruct(self, values: np.ndarray, skip_heads: bool = False) -> np.ndarray:
        """Overlapping windows' outputs averaged. ``skip_heads`` (scoring): the tokenizer pads a
        window's end, so its first ``stride`` steps are in one patch only and come out several times
        worse (false alarms at every window's start); they count only where no other window has
        them (the series' first steps)."""
        module, device = self._net_on_device()
        length = self.window_length
        starts = self.window_starts(len(values))
        total = torch.zeros(values.shape, dtype=torch.float64, device=device)
        count = torch.zeros((len(values), 1), dtype=torch.float64, device=device)
        clean = torch.from_numpy(np.nan_to_num(values)).to(device)
        observed = torch.from_numpy(~np.isnan(values)).to(device)
        offsets = torch.arange(length, device=device)
        batch = memory.inference_batch_size(module.net.config, self.batch_size)
        weight = torch.where(offsets < self.stride, 1e-6 if skip_heads else 1.0, 1.0).double()
        ones = weight.to(device).repeat(batch)[:, None]
        for i in range(0, len(starts), batch):
            chunk = starts[i : i + batch]
            padded = _full_batch(chunk, batch, module.compile_options)
            windows = torch.as_tensor(padded, device=device)[:, None] + offsets
            out = module.reconstruct(clean[windows], observed[windows])[: len(chunk)]
            index = windows[: len(chunk)]
            weighted = out.reshape(-1, out.shape[-1]).double() * ones[: index.numel()]
            total.index_add_(0, index.reshape(-1), weighted)
            count.index_add_(0, index.reshape(-1), ones[: index.numel()])
        return (total / count).cpu().numpy().astype(np.float32)

    def window_starts(self, n_steps: int) -> np.ndarray:
        """Starts of the inference windows over ``n_steps >= window_length`` steps: every
        ``window_stride``, plus one that ends at the last step."""
        return covering_starts(n_steps, self.window_length, self.window_stride)

    def to_onnx(self, path: str, **kwargs) -> str:
        """The trained network as an ONNX file that reconstructs windows: inputs ``x`` (windows,
        ``window_length``, channels; float32, any values at hidden points) and ``visible`` (same
        shape, bool), output ``reconstruction`` (the same shape), as :meth:`reconstruct_windows`.
        The number of windows is free. Exported on CRAB's plain path in inference mode;
        ``kwargs`` go to ``torch.onnx.export``. Needs ``pip install 'xct-estimators[onnx]'``."""
        if self.module is None:
            raise NotFittedError("The engine has not been fitted yet: call fit() before to_onnx().")
        optional_import("onnx", "onnxscript", extra="onnx", purpose="to_onnx")
        module = _WindowReconstruction(self.module).cpu().eval()
        x = torch.zeros(2, self.window_length, self.n_channels)
        visible = torch.ones(x.shape, dtype=torch.bool)
        batch = torch.export.Dim("windows", min=1)
        options = dict(input_names=["x", "visible"], output_names=["reconstruction"], dynamo=True)
        options.update(dynamic_shapes={"x": {0: batch}, "visible": {0: batch}}, **kwargs)
        with torch.no_grad(), plain_attention(module), uncompiled(module):
            torch.onnx.export(module, (x, visible), path, **options)
        return path

    def score(self, values: np.ndarray, hidden_passes: Optional[int] = None) -> np.ndarray:
        """Per-point squared reconstruction error, (time, channels); NaN where unobserved.

        ``hidden_passes=K`` (an integer >= 2) judges each point by what its context says it should
        be: K reconstructions, each hiding every K-th point of each channel (shifted by one step per
        channel), and each point's error taken from the one where it was hidden. A reconstruction
        from the point itself can copy an anomaly; this one cannot. Meant for an engine trained with
        ``mask_rate`` (to fill hidden points); K times the work of ``None`` (every point seen).
        """
        if self.module is None:
            raise NotFittedError("The engine has not been fitted yet: call fit() first.")
        check_hidden_passes(hidden_passes)
        values = self.check_values(values, fitting=False)
        if hidden_passes is None:
            return (self._reconstruct_checked(values, skip_heads=True) - values) ** 2
        if self.mask_rate is None:
            warnings.warn(
                "hidden_passes with an engine trained without mask_rate: the network never learned to fill hidden "
                "points, so its errors there are close to those of their linear interpolation. Train with mask_rate "
                "(e.g. 0.25) to score hidden points.",
                UserWarning,
                stacklevel=2,
            )
        phase = (np.arange(len(values))[:, None] + np.arange(values.shape[1])) % hidden_passes
        errors = np.full(values.shape, np.nan, dtype=np.float32)
        for k in range(hidden_passes):
            hidden = (phase == k) & ~np.isnan(values)
            reconstruction = self._reconstruct_checked(np.where(hidden, np.nan, values), skip_heads=True)
            errors[hidden] = ((reconstruction - values) ** 2)[hidden]
        return errors


class _WindowReconstruction(torch.nn.Module):
    """The module's reconstruction as one traceable function of (windows, visible points)."""

    def __init__(self, module: _ReconstructionModule):
        super().__init__()
        self.module = module

    def forward(self, x: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        x = torch.where(visible, x, torch.zeros_like(x))
        if self.module.fill == "linear":
            return self.module.net(linear_fill(x, visible))
        return self.module.net(x, mask=visible)


def _full_batch(rows: np.ndarray, batch: int, compiled) -> np.ndarray:
    """``rows`` padded to ``batch`` entries by repeating the last one when the network is compiled,
    so that every inference batch has one shape and compiles once (the extra outputs are dropped)."""
    if not compiled or len(rows) == batch:
        return rows
    return np.concatenate([rows, np.full(batch - len(rows), rows[-1])])
