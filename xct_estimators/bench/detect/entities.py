"""The per-entity protocol (``--protocol entity``), TSB-AD's way of comparing detectors: each entity
(spacecraft channel, rows from ``<name>_channels.csv``) standardised, thresholded and scored on its
own (docs/benchmarks.md, Anomaly detection)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.preprocessing import StandardScaler

from ..datasets import load_anomaly_dataset, resolve_data_dir
from .metrics import detection_metrics, threshold
from .scoring import continuous_channels, parse_scoring, scored

#: The columns of ``<name>_channels.csv`` (telemanom's channel table, rows in array order).
ENTITY_COLUMNS = ("chan_id", "train_start", "train_len", "test_start", "test_len")


@dataclass(frozen=True)
class Entity:
    name: str
    train: np.ndarray
    test: np.ndarray
    labels: np.ndarray


def load_entities(name: str, data_dir) -> list[Entity]:
    """The entities of MSL or SMAP, each standardised on its own training rows."""
    data = load_anomaly_dataset(name, data_dir)
    path = resolve_data_dir(data_dir) / name / f"{name}_channels.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"--protocol entity needs {path}: the table of {name}'s entities ({', '.join(ENTITY_COLUMNS)}) that "
            "comes with the data (docs/benchmarks.md, Datasets). Restore it or use --protocol tslib,point."
        )
    try:
        table = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(
            f"{path} is not a readable table ({error}): it must be the CSV of {name}'s entities with the columns "
            f"{', '.join(ENTITY_COLUMNS)}. Restore it from the data's source."
        ) from None
    if table.empty:
        raise ValueError(f"{path} lists no entity: restore it from the data's source (one row per entity).")
    missing = [column for column in ENTITY_COLUMNS if column not in table.columns]
    if missing:
        raise ValueError(f"{path} has no column(s) {', '.join(missing)}: restore the file from the data's source.")
    for part, rows in (("train", len(data.train)), ("test", len(data.test))):
        starts, lengths = table[f"{part}_start"].to_numpy(), table[f"{part}_len"].to_numpy()
        if starts[0] != 0 or not np.array_equal(starts[1:], np.cumsum(lengths)[:-1]) or lengths.sum() != rows:
            raise ValueError(
                f"{path}: the {part} rows of its entities do not tile the {rows} rows of {name}'s {part} array; "
                "the table and the arrays come from different builds. Restore both from one source."
            )
    entities = []
    for row in table.itertuples():
        train = data.train[row.train_start : row.train_start + row.train_len]
        test = slice(row.test_start, row.test_start + row.test_len)
        scaler = StandardScaler().fit(train)
        standardised = (scaler.transform(part).astype(np.float32) for part in (train, data.test[test]))
        entities.append(Entity(str(row.chan_id), *standardised, data.labels[test]))
    return entities


def training_rows(entities: list[Entity]) -> np.ndarray:
    """Every entity's standardised training rows, in order: what the one model is fitted on."""
    return np.concatenate([entity.train for entity in entities])


#: The measures a record keeps of each entity (``per_entity``), as TSB-AD reports each series.
ENTITY_MEASURES = ("vus_pr", "auc_pr", "auc_roc")


def evaluate_entities(detector, entities: list[Entity], anomaly_ratio: float, scorings) -> dict:
    """scoring -> the measures of each entity scored on its own, averaged over the entities with an
    anomaly; ``n_entities`` of them, ``n_windows`` summed, ``per_entity`` each one's
    :data:`ENTITY_MEASURES`. Each entity is reconstructed once."""
    measured, n_windows, names = {scoring: [] for scoring in scorings}, 0, []
    wanted = any(parse_scoring(scoring)[3] == "continuous" for scoring in scorings)
    continuous = continuous_channels(*(entity.train for entity in entities)) if wanted else None
    for entity in (e for e in entities if e.labels.any()):
        names.append(entity.name)
        entity_scores = scored(detector, entity.train, entity.test, scorings, continuous)
        for scoring, (train_scores, test_scores, _) in entity_scores.items():
            limit = threshold(train_scores, test_scores, anomaly_ratio)
            measured[scoring].append(detection_metrics(test_scores, entity.labels, limit))
        n_windows += next(iter(entity_scores.values()))[2] or 0
    out = {}
    for scoring, measures in measured.items():
        averaged = {key: float(np.mean([metrics[key] for metrics in measures])) for key in measures[0]}
        each = {name: {key: m[key] for key in ENTITY_MEASURES} for name, m in zip(names, measures, strict=True)}
        out[scoring] = {**averaged, "n_entities": len(measures), "n_windows": n_windows or None, "per_entity": each}
    return out
