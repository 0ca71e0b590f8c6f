"""tags: silver features + bronze counters -> silver/bottleneck_tags, for logs not tagged yet.

Reads:  silver/job_features (which logs are featured), silver/file_features, bronze/files,
        posix, mpiio, stdio, lustre, io_ops; a table no run has written yet reads as empty.
Writes: silver/bottleneck_tags, insert-only on (job_month, log_id).
Logic:  `features/bottleneck_tags.py`; thresholds: conf `tags:`.
Incremental: the logs in job_features that bottleneck_tags lacks. Every tagged log has at
least one row (a `no_issue` row when no rule fires), so "has a row" is the processed marker;
no side table to keep in step.
"""
from __future__ import annotations

import sys
import time

from features import bottleneck_tags
from iolake.config import Config
from iolake.runinfo import RunInfo
from schemas import BRONZE, SILVER

SPEC = SILVER["bottleneck_tags"]
BRONZE_INPUTS = ("files", "posix", "mpiio", "stdio", "lustre", "io_ops")


def transform(tables: dict, file_features, job_features, conf: Config):
    """silver/bottleneck_tags rows from bronze and silver DataFrames; no I/O, no action."""
    return bottleneck_tags.transform(tables, file_features, job_features, conf.tags)


def run(spark, conf: Config, run_info: RunInfo | None = None, echo=print) -> dict:
    import pyspark.sql.functions as F

    from iolake import gates
    from iolake.lake import commit_metadata, read_or_empty, unprocessed_logs

    run_info = run_info or RunInfo.new(conf)
    t0 = time.monotonic()
    commit_metadata(spark, run_info.run_id, run_info.config_digest, "tags", run_info.git_sha)
    todo = unprocessed_logs(spark, SILVER["job_features"], SPEC, conf.lake).select("log_id").cache()
    n = todo.count()
    if n == 0:
        todo.unpersist()
        echo("[tags] no new logs")
        return {"logs": 0, "rows": 0, "tagged": 0, "seconds": time.monotonic() - t0}

    def read(spec):
        return read_or_empty(spark, spec, conf.lake).join(todo, "log_id", "left_semi")

    tables = {t: read(BRONZE[t]) for t in BRONZE_INPUTS}
    tables["posix"] = tables["posix"].cache()  # most rules aggregate it
    out = transform(tables, read(SILVER["file_features"]), read(SILVER["job_features"]), conf).cache()
    facts = out.agg(F.count(F.lit(1)).alias("rows"),
                    F.countDistinct(F.when(F.col("tag") != "no_issue", F.col("log_id"))).alias("tagged")).first()
    gates.gate_and_merge(spark, conf, SPEC, out, echo)
    out.unpersist()
    tables["posix"].unpersist()
    todo.unpersist()
    summary = {"logs": n, "rows": facts.rows, "tagged": facts.tagged, "seconds": time.monotonic() - t0}
    echo(f"[tags] {n} new logs: {facts.tagged} with bottleneck tags, {facts.rows} rows, "
         f"in {summary['seconds']:.1f} s")
    return summary


def main(argv=None) -> int:
    from iolake.cli import stage_main

    return stage_main(run, "tags", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
