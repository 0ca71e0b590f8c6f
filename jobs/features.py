"""features: bronze -> silver/file_features and silver/job_features, for logs not featured yet.

Reads:  bronze/jobs, files, posix, mpiio, stdio, h5f, h5d, lustre (new logs only); the DXT access
        pattern from bronze/op_patterns for the logs ingest counted it for (their ledger row in
        bronze/logs counts `op_patterns`), from bronze/io_ops for the others (a huge DXT log
        streamed to disk, a lake ingested before bronze/op_patterns, `ingest.patterns: false`),
        which are not read at all when there are none.
Writes: silver/file_features, silver/job_features (job_features last: it marks a log done).
Rules: `features/file_features.py`, `features/job_features.py`. Runs through `iolake/runner.py`.
"""
from __future__ import annotations

import sys

from iolake.runner import commit_outputs, entry_points, not_at_ingest, read_for

from features import file_features, job_features

PATTERNS, OPS = "bronze/op_patterns", "bronze/io_ops"


def transform(inputs: dict, conf) -> dict:
    """silver/file_features and silver/job_features from bronze DataFrames; no I/O, no action. With
    bronze/op_patterns among them, a log's access pattern comes from its rows there if it has any
    and from its io_ops otherwise (a log is in one or the other)."""
    tables = {name.split("/", 1)[1]: df for name, df in inputs.items() if name != "bronze/logs"}
    ff = file_features.transform(tables, conf.features)
    return {"silver/file_features": ff, "silver/job_features": job_features.transform(tables, ff)}


def execute(ctx) -> dict:
    """The new logs' features; io_ops read only for the logs ingest did not count patterns for."""
    rest, n_rest = not_at_ingest(ctx, PATTERNS)
    inputs = {t: ctx.read(t) for t in ctx.stage.tables_in if t not in (OPS, "bronze/logs")}
    if n_rest:
        ctx.echo(f"[{ctx.stage.name}] {n_rest:,} of {ctx.n_todo:,} new logs have no access pattern from ingest: "
                 "their segments are read from bronze/io_ops")
    inputs[OPS] = read_for(ctx, OPS, rest, n_rest)
    try:
        return commit_outputs(sys.modules[__name__], ctx, transform(inputs, ctx.conf),
                              {"patterns_from_ingest": ctx.n_todo - n_rest, "patterns_spark_pass": n_rest})
    finally:
        rest.unpersist()


run, main = entry_points("features")


if __name__ == "__main__":
    sys.exit(main())
