"""features: bronze -> silver/file_features and silver/job_features, for logs not featured yet.

Reads:  bronze/jobs, posix, stdio, lustre (new logs: job features); each file's rollup of its
        module records from bronze/file_rollups for the logs ingest rolled up (their ledger row in
        bronze/logs counts `file_rollups`), from bronze/jobs, files, posix, mpiio, stdio, h5f, h5d
        for the others; the DXT access pattern from bronze/op_patterns for the logs ingest counted it
        for (`op_patterns` in the ledger row), from bronze/io_ops for the others. The others are a
        huge DXT log streamed to disk, a lake ingested before those tables, or `ingest.rollups` /
        `ingest.patterns` false; their tables are not read at all when there are none.
Writes: silver/file_features, silver/job_features (job_features last: it marks a log done).
Rules: `features/file_features.py`, `features/file_rollups.py`, `features/job_features.py`. Runs
through `iolake/runner.py`.
"""

from __future__ import annotations

import sys

from features import file_features, job_features
from iolake.cli import entry_points
from iolake.runner import commit_outputs, not_at_ingest, read_for

SUMMARY = ("suspect",)  # facts `summarize` adds (0 when nothing was new)
PATTERNS, OPS, ROLLUPS = "bronze/op_patterns", "bronze/io_ops", "bronze/file_rollups"
FILE_ONLY = (
    "bronze/files",
    "bronze/mpiio",
    "bronze/h5f",
    "bronze/h5d",
)  # read by the Spark rollup pass alone
ROLLED = ("bronze/jobs", "bronze/posix", "bronze/stdio", *FILE_ONLY)  # what that pass reads


def _names(inputs: dict) -> dict:
    return {name.split("/", 1)[1]: df for name, df in inputs.items() if name != "bronze/logs"}


def transform(inputs: dict, conf, to_roll: dict | None = None) -> dict:
    """silver/file_features and silver/job_features from bronze DataFrames; no I/O, no action.
    With bronze/file_rollups among them, its rows stand for their logs' module records, and the
    Spark pass rolls up the others: those of `to_roll` (bronze tables of the logs ingest did not
    roll up), by default the logs of `inputs` without a rollup row. Likewise with bronze/op_patterns:
    a log's access pattern comes from its rows there if it has any and from its io_ops otherwise."""
    tables = _names(inputs)
    rolled = tables.pop("file_rollups", None)
    if to_roll is None and rolled is not None:
        ids = rolled.select("log_id").distinct()
        to_roll = {t: inputs[t].join(ids, "log_id", "left_anti") for t in ROLLED if t in inputs}
    ff = file_features.transform({**tables, **_names(to_roll or {})}, conf.features, rolled)
    return {
        "silver/file_features": ff,
        "silver/job_features": job_features.transform(tables, ff, conf.suspect),
    }


def summarize(outputs: dict) -> dict:
    """How many of the new logs are suspect (features/suspect.py): kept, and left out of models,
    watch and advice."""
    jf = outputs.get("silver/job_features")
    return {"suspect": jf.where("suspect").count() if jf is not None else 0}


def execute(ctx) -> dict:
    """The new logs' features: module records rolled up and io_ops read only for the logs ingest
    did not roll up or count patterns for."""
    rest, n_rest = not_at_ingest(ctx, PATTERNS)
    unrolled, n_unrolled = not_at_ingest(ctx, ROLLUPS)
    skip = (OPS, "bronze/logs", *FILE_ONLY)
    inputs = {t: ctx.read(t) for t in ctx.stage.tables_in if t not in skip}
    for what, n in (("an access pattern", n_rest), ("file rollups", n_unrolled)):
        if n:
            ctx.echo(
                f"[{ctx.stage.name}] {n:,} of {ctx.n_todo:,} new logs have no {what} from ingest: "
                "the stage computes them in Spark"
            )
    inputs[OPS] = read_for(ctx, OPS, rest, n_rest)
    to_roll = {t: read_for(ctx, t, unrolled, n_unrolled) for t in ROLLED}
    try:
        summary = commit_outputs(
            sys.modules[__name__],
            ctx,
            transform(inputs, ctx.conf, to_roll),
            {
                "patterns_from_ingest": ctx.n_todo - n_rest,
                "patterns_spark_pass": n_rest,
                "rollups_from_ingest": ctx.n_todo - n_unrolled,
                "rollups_spark_pass": n_unrolled,
            },
        )
        if summary.get("suspect"):
            ctx.echo(
                f"[{ctx.stage.name}] {summary['suspect']:,} of {ctx.n_todo:,} new logs suspect (counters that "
                "cannot be true: silver/job_features.suspect_reason); their throughput is left out of "
                "models, watch and advice"
            )
        return summary
    finally:
        rest.unpersist()
        unrolled.unpersist()


run, main = entry_points("features")


if __name__ == "__main__":
    sys.exit(main())
