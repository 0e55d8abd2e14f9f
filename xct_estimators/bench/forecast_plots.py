"""Each forecast run's first test window, saved beside the records (``examples/``), and the plots
drawn from them: truth against every model, and the test MSE by model."""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Optional

from .forecast.record import ForecastRecord
from .record import Record
from .runs import write_atomically

EXAMPLES_DIR = "examples"


def save_example(output: Path, record: ForecastRecord, example: dict) -> None:
    write_atomically(_example_path(output, record), lambda path: path.write_text(json.dumps(example)))


def file_name(text) -> str:
    """``text`` as one safe file-name part: a dataset given as a CSV path becomes its stem, and
    anything but letters, digits, ``.``, ``-`` and ``_`` becomes ``_`` (files stay in --output)."""
    text = str(text)
    if text.endswith(".csv"):
        text = Path(text).stem
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "dataset"


def dataset_part(dataset: str, sha: Optional[str]) -> str:
    """The dataset's part of a file name: a CSV's stem with its content hash (``sha``), so two files
    of one name (``a/data.csv``, ``b/data.csv``) never write over each other's pictures."""
    return file_name(dataset) + (f"-{sha[:8]}" if sha else "")


def _dataset_part(record: ForecastRecord) -> str:
    return dataset_part(record.dataset, record.data_sha256 or (record.run or {}).get("data_sha256"))


def _example_path(output: Path, record: ForecastRecord) -> Path:
    parts = (_dataset_part(record), record.horizon, record.model, record.seed)
    name = "_".join(file_name(part) for part in parts) + ".json"
    return Path(output) / EXAMPLES_DIR / name


def plot_forecasts(output: Path, records: list[Record]) -> list[Path]:
    """One ``forecast_<dataset>_<horizon>.png`` per dataset and horizon: truth against every model
    on the first test window, beside the test MSE by model. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    output = Path(output)
    written = []
    groups: dict[tuple, list[ForecastRecord]] = defaultdict(list)
    for r in records:
        if isinstance(r, ForecastRecord):  # the only ones with a first test window saved
            groups[(_dataset_part(r), r.dataset, r.horizon)].append(r)
    for (part, dataset, horizon), group in sorted(groups.items()):
        group = sorted(group, key=lambda r: r.mse)
        fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4), gridspec_kw={"width_ratios": [2, 1]})
        plotted_truth = False
        for r in group:
            example = _load_example(output, r)
            if example is None:
                continue
            n_hist = len(example["history"])
            if not plotted_truth:
                truth = example["history"] + example["truth"]
                left.plot(range(len(truth)), truth, color="black", lw=1.5, label=f"truth ({example['channel']})")
                left.axvline(n_hist - 0.5, color="grey", ls=":")
                plotted_truth = True
            left.plot(range(n_hist, n_hist + len(example["forecast"])), example["forecast"], lw=1, label=r.model)
        left.set_title(f"{dataset}, horizon {horizon}: first test window")
        left.set_xlabel("step")
        if plotted_truth:
            left.legend(fontsize=8)
        else:  # e.g. a folder copied without its examples/
            left.text(0.5, 0.5, "no saved forecast", ha="center", va="center", transform=left.transAxes)
        right.barh([r.model for r in group], [r.mse for r in group], color="tab:blue")
        right.invert_yaxis()
        right.set_xlabel("test MSE (standardised)")
        right.set_title("MSE by model")
        fig.tight_layout()
        path = output / f"forecast_{part}_{horizon}.png"
        write_atomically(path, functools.partial(fig.savefig, dpi=110, format="png"))
        plt.close(fig)
        written.append(path)
    return written


def _load_example(output: Path, record: ForecastRecord) -> Optional[dict]:
    path = _example_path(output, record)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (ValueError, OSError) as error:  # written before atomic writes, or edited
        warnings.warn(f"{path}: unreadable example ({error}); its model is left out of the plot.", stacklevel=2)
        return None
