"""Why every detector ranks SMAP's anomalies below its normal points: where the anomalies sit,
whether the labels line up with the rows, and how the stored arrays are built.

SMAP's arrays are 53 telemetry channels concatenated in time: per channel, column 0 is the
telemetry value and columns 1-24 are binary commands (``SOURCES.md`` of the data folder). The
script scores the test array without any model, pooled (one standardisation over the training
array, as ``xct-bench detect`` does) and per channel, and checks the labels against
``labeled_anomalies.csv``. It writes ``analysis.json``, which the results page renders.

    python -m benchmarks.smap_analysis --data-dir DATA --output benchmarks/results/cpu/smap-analysis
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from xct_estimators.bench.datasets import load_anomaly_dataset
from xct_estimators.bench.provenance import provenance


def _standardised(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    return (values - reference.mean(axis=0)) / (reference.std(axis=0) + 1e-8)


def rebuilt_labels(folder: Path, channels: pd.DataFrame) -> np.ndarray:
    """Test labels from ``labeled_anomalies.csv``: each channel's ``[start, end]`` pairs, ends inclusive."""
    table = pd.read_csv(folder / "labeled_anomalies.csv").drop_duplicates("chan_id").set_index("chan_id")
    labels = np.zeros(int(channels.test_len.sum()), dtype=bool)
    for row in channels.itertuples():
        for start, end in ast.literal_eval(table.loc[row.chan_id, "anomaly_sequences"]):
            labels[row.test_start + start : row.test_start + end + 1] = True
    return labels


def analyse(data_dir: Path) -> dict:
    folder = Path(data_dir) / "SMAP"
    data = load_anomaly_dataset("SMAP", data_dir)
    train, test, labels = data.train, data.test, np.asarray(data.labels, dtype=bool)
    channels = pd.read_csv(folder / "SMAP_channels.csv")
    lengths = pd.read_csv(folder / "labeled_anomalies.csv").drop_duplicates("chan_id").set_index("chan_id")
    pooled = _standardised(test, train)
    per_channel, rows = np.empty(len(test)), []
    for row in channels.itertuples():
        own = slice(row.test_start, row.test_start + row.test_len)
        own_train = train[row.train_start : row.train_start + row.train_len, :1]
        per_channel[own] = np.abs(_standardised(test[own, :1], own_train))[:, 0]
        hit = labels[own]
        within = float(roc_auc_score(hit, per_channel[own])) if 0 < hit.sum() < len(hit) else None
        rows.append(
            {
                "channel": row.chan_id,
                "test_steps": int(row.test_len),
                "anomalous_steps": int(hit.sum()),
                "auc_roc_within_channel": within,
                "pooled_score_mean": float(np.square(pooled[own]).mean()),
            }
        )
    commands_train_constant = (train[:, 1:].std(axis=0) == 0) & (test[:, 1:].std(axis=0) > 0)
    within = [r["auc_roc_within_channel"] for r in rows if r["auc_roc_within_channel"] is not None]
    pooled_score = np.square(pooled).mean(axis=1)
    return {
        "shapes": {"train": list(train.shape), "test": list(test.shape)},
        "anomaly_share": float(labels.mean()),
        "auc_roc": {
            "pooled, every column": float(roc_auc_score(labels, pooled_score)),
            "pooled, telemetry value": float(roc_auc_score(labels, np.abs(pooled[:, 0]))),
            "per channel, telemetry value": float(roc_auc_score(labels, per_channel)),
        },
        "pooled_score_median": {
            "anomalies": float(np.median(pooled_score[labels])),
            "elsewhere": float(np.median(pooled_score[~labels])),
        },
        "within_channel": {
            "channels_with_anomalies": len(within),
            "median_auc_roc": float(np.median(within)),
            "channels_above_0.9": int(sum(v > 0.9 for v in within)),
        },
        "commands": {
            "active_share_in_anomalies": float(test[labels, 1:].mean()),
            "active_share_elsewhere": float(test[~labels, 1:].mean()),
            "columns_constant_in_training_active_in_test": int(commands_train_constant.sum()),
        },
        "labels": {
            "test_lengths_equal_num_values": bool(
                all(lengths.loc[r.chan_id, "num_values"] == r.test_len for r in channels.itertuples())
            ),
            "stored_equal_rebuilt_from_csv": bool(np.array_equal(labels, rebuilt_labels(folder, channels))),
        },
        "channels": rows,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="the folder holding SMAP/")
    parser.add_argument("--output", required=True, help="folder for analysis.json")
    args = parser.parse_args(argv)
    result = {"analysis": "smap", **analyse(Path(args.data_dir)), "provenance": provenance(argv)}
    Path(args.output).mkdir(parents=True, exist_ok=True)
    (Path(args.output) / "analysis.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("auc_roc", "within_channel", "commands", "labels")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
