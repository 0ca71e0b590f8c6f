"""covering: bronze -> silver/covering_sets, the minimum I/O covering set of each new log.

Reads:  bronze/jobs (which logs exist), bronze/logs (which of them ingest covered), bronze/covers
        (the covers ingest computed as it decoded), io_ops, posix, mpiio, stdio, files (standard
        streams are not storage I/O), heatmap (bounds without DXT); a table no run has written yet
        reads as empty.
Writes: silver/covering_sets, insert-only on (job_month, log_id).
Logic:  `features/covering_sets.py`. Incremental: only logs silver/covering_sets lacks are
        computed. A log ingest covered (its ledger row counts `covers`, 0 included) takes its rows
        from bronze/covers; the others (a huge DXT log whose segments ingest streamed to disk, a
        lake ingested before bronze/covers, `ingest.covers: false`) are covered here in one Spark
        pass over their segments (`transform`), which is not run when there are none; so is
        every new log when bronze/covers does not exist (delete it, and silver/covering_sets, to
        recompute every cover with this version's code), and every log whose bronze/covers rows
        have no `time_source` (ingested before bounds without DXT). A log without any timed read or
        write has no row; `ops/empty_logs` records it.
"""

from __future__ import annotations

import sys

from features.covering_sets import covering_sets
from iolake.cli import entry_points
from iolake.runner import commit_outputs, not_at_ingest, read_for

OUT = "silver/covering_sets"
LEDGER, COVERS = "bronze/logs", "bronze/covers"
SEGMENT_INPUTS = (
    "bronze/io_ops",
    "bronze/posix",
    "bronze/mpiio",
    "bronze/stdio",
    "bronze/files",
    "bronze/heatmap",
)
BOUND = "time_source"  # a bronze/covers row without it was computed before bounds without DXT


def transform(inputs: dict, conf) -> dict:
    """silver/covering_sets rows computed from bronze segments and counters (the Spark pass); no I/O, no action."""
    t = {name.split("/", 1)[1]: df for name, df in inputs.items()}
    return {
        OUT: covering_sets(
            t["io_ops"], t["posix"], t["mpiio"], t["stdio"], t.get("files"), t.get("heatmap")
        )
    }


def execute(ctx) -> dict:
    """The new logs' rows: bronze/covers' for the logs ingest covered, the Spark pass's for the rest
    (and for the logs whose bronze/covers rows predate `time_source`: their figure may be a bound)."""
    import pyspark.sql.functions as F

    out = ctx.read(COVERS)  # silver/covering_sets' columns, in its order (schemas/covers.py)
    current = F.col(BOUND).isNotNull() if BOUND in out.columns else F.lit(False)
    out = out.where(current).select(
        *[
            F.col(f.name) if f.name in out.columns else F.lit(None).cast(f.dataType).alias(f.name)
            for f in ctx.spec(OUT, "output").struct.fields
        ]
    )
    rest, n_rest = not_at_ingest(ctx, COVERS, LEDGER, where=current)
    if n_rest:
        ctx.echo(
            f"[covering] {n_rest:,} of {ctx.n_todo:,} new logs were not covered at ingest: "
            "one Spark pass over their segments"
        )
        segs = {t: read_for(ctx, t, rest, n_rest) for t in SEGMENT_INPUTS}
        out = out.unionByName(transform(segs, ctx.conf)[OUT])
    try:
        return commit_outputs(
            sys.modules[__name__],
            ctx,
            {OUT: out},
            {"from_ingest": ctx.n_todo - n_rest, "spark_pass": n_rest},
        )
    finally:
        rest.unpersist()


SUMMARY = (
    "members",
    "covered",
)  # facts `summarize` adds to the stage summary (0 when nothing was new)


def summarize(outputs: dict) -> dict:
    import pyspark.sql.functions as F

    facts = (
        outputs[OUT]
        .agg(F.count(F.lit(1)).alias("members"), F.countDistinct("log_id").alias("covered"))
        .first()
    )
    return {"members": facts.members, "covered": facts.covered}


run, main = entry_points("covering")


if __name__ == "__main__":
    sys.exit(main())
