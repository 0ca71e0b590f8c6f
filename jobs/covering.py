"""covering: bronze -> silver/covering_sets, the minimum I/O covering set of each new log.

Reads:  bronze/jobs (which logs exist), io_ops, posix, mpiio, stdio, files (standard streams
        are not storage I/O); a table no run has written yet reads as empty.
Writes: silver/covering_sets, insert-only on (job_month, log_id).
Logic:  `features/covering_sets.py`. Incremental: only logs silver/covering_sets lacks are
        computed. A log without any timed read or write has no row, so it is looked at again
        on the next run (cheap: it has no intervals) and still adds nothing.
"""
from __future__ import annotations

import sys
import time

from features.covering_sets import covering_sets
from iolake.config import Config
from iolake.runinfo import RunInfo
from schemas import BRONZE, SILVER

SPEC = SILVER["covering_sets"]
INPUTS = ("io_ops", "posix", "mpiio", "stdio", "files")


def transform(io_ops, posix, mpiio, stdio, files=None):
    """silver/covering_sets rows from bronze DataFrames; no I/O, no action."""
    return covering_sets(io_ops, posix, mpiio, stdio, files)


def run(spark, conf: Config, run: RunInfo | None = None, echo=print) -> dict:
    import pyspark.sql.functions as F

    from iolake import gates
    from iolake.lake import commit_metadata, read_or_empty, unprocessed_logs

    run = run or RunInfo.new(conf)
    t0 = time.monotonic()
    commit_metadata(spark, run.run_id, run.config_digest, "covering", run.git_sha)
    todo = unprocessed_logs(spark, BRONZE["jobs"], SPEC, conf.lake).select("log_id").cache()
    n = todo.count()
    if n == 0:
        todo.unpersist()
        echo("[covering] no new logs")
        return {"logs": 0, "covered": 0, "members": 0, "seconds": time.monotonic() - t0}
    tables = {t: read_or_empty(spark, BRONZE[t], conf.lake).join(todo, "log_id", "left_semi") for t in INPUTS}
    out = transform(**tables).cache()
    facts = out.agg(F.count(F.lit(1)).alias("members"), F.countDistinct("log_id").alias("covered")).first()
    if facts.members:  # logs without any timed read or write: nothing to commit
        gates.gate_and_merge(spark, conf, SPEC, out, echo)
    out.unpersist()
    todo.unpersist()
    summary = {"logs": n, "covered": facts.covered, "members": facts.members, "seconds": time.monotonic() - t0}
    echo(f"[covering] {n} new logs: {facts.covered} with I/O intervals, {facts.members} covering-set "
         f"members, in {summary['seconds']:.1f} s")
    return summary


def main(argv=None) -> int:
    from iolake.cli import stage_main

    return stage_main(run, "covering", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
