"""The shipped IOR-sweep benchmark table from a lake that ingested the sweep's Darshan logs.

    python -m apps.benchmark_table LAKE LABELS_CSV [OUT]

LAKE: a lake where `iolake run` (ingest + features) read `iosweep/darshan/`; LABELS_CSV: the
sweep's `labels.csv`. Reads silver/file_features, bronze/logs and silver/job_features without
Spark (`iolake.lake.arrow`), derives one row per labelled configuration with
`models.benchmarks.derive.derive` (which says what the columns are) and writes them to OUT
(default: `models/benchmarks/iosweep.csv`). This shell reads the lake, so it lives with the
apps: `models/` does not import the platform (`.importlinter`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from iolake.lake import arrow
from models.benchmarks.derive import OUT, derive
from schemas import TABLES


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    lake, labels_csv, *rest = argv
    out_path = Path(rest[0]) if rest else OUT

    def read(name):
        return arrow.read(lake, TABLES[name]).to_pandas()

    table = derive(
        read("file_features"), read("logs"), read("job_features"), pd.read_csv(labels_csv)
    )
    table.to_csv(out_path, index=False, float_format="%.6g")
    bb, pfs = int((table.best_tier == "bb").sum()), int((table.best_tier == "pfs").sum())
    print(
        f"{out_path}: {len(table)} configurations, {len(table.columns)} columns, "
        f"best tier bb {bb} / pfs {pfs}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
