"""features: bronze -> silver/file_features and silver/job_features, for logs not featured yet.

Reads:  bronze/jobs, files, posix, mpiio, stdio, h5f, h5d, lustre, io_ops.
Writes: silver/file_features, silver/job_features (job_features last: it marks a log done).
Rules: `features/file_features.py`, `features/job_features.py`.
"""
from __future__ import annotations

import sys
import time

from features import file_features, job_features
from iolake.config import Config
from iolake.runinfo import RunInfo
from schemas import BRONZE, SILVER

INPUTS = ("jobs", "files", "posix", "mpiio", "stdio", "h5f", "h5d", "lustre", "io_ops")


def transform(tables: dict, conf: Config):
    """(file_features, job_features) DataFrames from bronze DataFrames; no I/O, no action."""
    ff = file_features.transform(tables, conf.features)
    return ff, job_features.transform(tables, ff)


def run(spark, conf: Config, run: RunInfo | None = None, echo=print) -> dict:
    from iolake import gates
    from iolake.lake import commit_metadata, read_or_empty, unprocessed_logs

    run = run or RunInfo.new(conf)
    t0 = time.monotonic()
    commit_metadata(spark, run.run_id, run.config_digest, "features", run.git_sha)
    todo = unprocessed_logs(spark, BRONZE["jobs"], SILVER["job_features"], conf.lake).select("log_id").cache()
    n = todo.count()
    if n == 0:
        echo("[features] no new logs")
        return {"logs": 0, "files": 0, "seconds": time.monotonic() - t0}
    tables = {t: read_or_empty(spark, BRONZE[t], conf.lake).join(todo, "log_id", "left_semi") for t in INPUTS}
    ff, jf = transform(tables, conf)
    ff = ff.cache()
    n_files = ff.count()
    for spec, df in ((SILVER["file_features"], ff), (SILVER["job_features"], jf)):
        gates.gate_and_merge(spark, conf, spec, df, echo)
    ff.unpersist()
    todo.unpersist()
    summary = {"logs": n, "files": n_files, "seconds": time.monotonic() - t0}
    echo(f"[features] {n} logs, {n_files} files featured in {summary['seconds']:.1f} s")
    return summary


def main(argv=None) -> int:
    from iolake.cli import stage_main

    return stage_main(run, "features", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
