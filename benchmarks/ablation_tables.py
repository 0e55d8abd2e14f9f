"""The paper's ablation tables (App. "Ablation Study: Complete Analysis") beside ``xct-bench``
records of the ablation models: each variant's averages per dataset beside the paper's, then
"XCTFormer vs others (%)" by the paper's rule, ours beside the paper's on the same datasets.

    python -m benchmarks.ablation_tables FOLDER...

A table needs the full model and a variant over every horizon (forecasting) or mask rate
(imputation) of one setting, or ``--protocol tslib`` runs (anomaly detection): paper-scale runs,
which is why this is the lab's and not ``xct-bench report``'s.
"""

from __future__ import annotations

import argparse

from benchmarks.measure.ablation import tables
from xct_estimators.bench.results import ResultStore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="xct-bench results folders (their --output)")
    folders = parser.parse_args(argv).folders
    missing = [f for f in folders if not ResultStore(f).path.is_file()]
    if missing:
        parser.error(f"{', '.join(missing)}: no results.jsonl; pass folders that xct-bench wrote (its --output)")
    records = [r for folder in folders for r in ResultStore(folder).latest()]
    print(tables(records) or "No ablation table: the folders hold no full model beside an ablation model over a "
          "complete set of horizons or mask rates (anomaly detection: --protocol tslib).")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
