"""How ``fixtures.json`` was made: VUS-PR and VUS-ROC from TSB-AD's published implementation.

TSB-AD pins numpy < 2, so it is not installed; its metric module needs only numpy and
scikit-learn and is loaded from the unpacked wheel:

    pip download TSB-AD==1.5 --no-deps -d /tmp/tsbad
    python -m zipfile -e /tmp/tsbad/TSB_AD-1.5-py3-none-any.whl /tmp/tsbad/x
    python tests/data/vus/make_fixtures.py /tmp/tsbad/x

The values are ``get_metrics``'s: ``generate_curve(labels, score, 2 * slidingWindow)``.
"""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np


def cases():
    rng = np.random.default_rng(2024)
    out = []
    # few segments, random scores
    labels = np.zeros(600, dtype=int)
    labels[100:130] = labels[400:405] = 1
    out.append(("random scores", labels, rng.random(600), 10))
    # a detector whose peaks come a little late (lag), with noise
    labels = np.zeros(800, dtype=int)
    labels[200:260] = labels[500:520] = labels[700:710] = 1
    score = np.convolve(labels, np.ones(15) / 15, mode="full")[:800]
    out.append(("late peaks", labels, np.roll(score, 8) + 0.05 * rng.random(800), 20))
    # segments at both edges, two that merge for large buffers, tied (quantised) scores
    labels = np.zeros(500, dtype=int)
    labels[0:12] = labels[200:210] = labels[222:240] = labels[480:500] = 1
    score = np.round(labels * 0.6 + rng.random(500), 1)
    out.append(("edges, merging, ties", labels, score, 15))
    # TSB-AD's default window, a longer series
    labels = np.zeros(3000, dtype=int)
    for start, length in ((150, 40), (900, 3), (1500, 120), (2600, 25)):
        labels[start : start + length] = 1
    score = rng.normal(size=3000) + 1.5 * np.convolve(labels, np.ones(30) / 30, mode="same")
    out.append(("default window", labels, score, 100))
    return out


def main(tsb_ad_root: str) -> None:
    path = Path(tsb_ad_root) / "TSB_AD" / "evaluation" / "basic_metrics.py"
    spec = importlib.util.spec_from_file_location("tsb_ad_basic_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fixtures = []
    for name, labels, score, window in cases():
        *_, vus_roc, vus_pr = module.generate_curve(labels, score, 2 * window)
        fixtures.append(
            {
                "case": name,
                "sliding_window": window,
                "labels": labels.tolist(),
                "scores": score.tolist(),
                "vus_pr": float(vus_pr),
                "vus_roc": float(vus_roc),
            }  # fmt: skip
        )
        print(f"{name}: VUS-PR {vus_pr:.6f}, VUS-ROC {vus_roc:.6f}")
    source = "TSB-AD 1.5, TSB_AD/evaluation/basic_metrics.py generate_curve (get_metrics' VUS)"
    out = {"source": source, "made_by": "tests/data/vus/make_fixtures.py", "cases": fixtures}
    (Path(__file__).parent / "fixtures.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
