"""features: bronze -> silver/file_features and silver/job_features, for logs not featured yet.

Reads:  bronze/jobs, files, posix, mpiio, stdio, h5f, h5d, lustre, io_ops (new logs only).
Writes: silver/file_features, silver/job_features (job_features last: it marks a log done).
Rules: `features/file_features.py`, `features/job_features.py`. Runs through `iolake/runner.py`.
"""
from __future__ import annotations

import sys

from iolake.runner import entry_points

from features import file_features, job_features


def transform(inputs: dict, conf) -> dict:
    """silver/file_features and silver/job_features from bronze DataFrames; no I/O, no action."""
    tables = {name.split("/", 1)[1]: df for name, df in inputs.items()}
    ff = file_features.transform(tables, conf.features)
    return {"silver/file_features": ff, "silver/job_features": job_features.transform(tables, ff)}


run, main = entry_points("features")


if __name__ == "__main__":
    sys.exit(main())
