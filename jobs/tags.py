"""tags: silver features + bronze counters -> silver/bottleneck_tags, for logs not tagged yet.

Reads:  silver/job_features (which logs are featured), silver/file_features, bronze/files,
        posix, mpiio, stdio, lustre, heatmap; the traced I/O phases from bronze/phases for the
        logs ingest phased with this config's `tags.io_phase_gap_s` (their ledger row in
        bronze/logs counts `phases`), from bronze/io_ops for the others (a huge DXT log streamed
        to disk, a lake ingested before bronze/phases, `ingest.phases: false`, another gap),
        which are not read at all when there are none. A table no run has written yet reads as
        empty.
Writes: silver/bottleneck_tags, insert-only on (job_month, log_id).
Logic:  `features/bottleneck_tags.py`; thresholds: conf `tags:`.
Incremental: the logs in job_features that bottleneck_tags lacks. Every tagged log has at
least one row (a `no_issue` row when no rule fires), so "has a row" is the processed marker;
no side table to keep in step.
"""

from __future__ import annotations

import sys

from features import bottleneck_tags
from iolake.cli import entry_points
from iolake.runner import commit_outputs, not_at_ingest, read_for
from schemas.bottleneck_tags import NO_ISSUE

OUT = "silver/bottleneck_tags"
PHASES, OPS, LEDGER = "bronze/phases", "bronze/io_ops", "bronze/logs"


def transform(inputs: dict, conf) -> dict:
    """silver/bottleneck_tags rows from bronze and silver DataFrames; no I/O, no action. Traced phases
    come from bronze/io_ops, and from bronze/phases' rows when it is among the inputs (a log is in
    one or the other; `execute` sees to it)."""
    bronze = {
        name.split("/", 1)[1]: df
        for name, df in inputs.items()
        if name.startswith("bronze/") and name not in (PHASES, LEDGER)
    }
    traced = None
    if PHASES in inputs:
        traced = (
            inputs[PHASES]
            .select(*bottleneck_tags.KEY, "phase", "t0", "t1", "bytes")
            .unionByName(bottleneck_tags.traced_phases(bronze["io_ops"], conf.tags.io_phase_gap_s))
        )
    return {
        OUT: bottleneck_tags.transform(
            bronze,
            inputs["silver/file_features"],
            inputs["silver/job_features"],
            conf.tags,
            traced=traced,
        )
    }


def execute(ctx) -> dict:
    """The new logs' tags; io_ops read only for the logs ingest did not phase with this gap."""
    import pyspark.sql.functions as F

    same_gap = F.col("gap_s") == F.lit(float(ctx.conf.tags.io_phase_gap_s))
    rest, n_rest = not_at_ingest(ctx, PHASES, LEDGER, where=same_gap)
    inputs = {t: ctx.read(t) for t in ctx.stage.tables_in if t not in (OPS, LEDGER)}
    inputs[PHASES] = inputs[PHASES].where(same_gap)
    if n_rest:
        ctx.echo(
            f"[{ctx.stage.name}] {n_rest:,} of {ctx.n_todo:,} new logs have no I/O phases from ingest at this gap: "
            "their segments are read from bronze/io_ops"
        )
    inputs[OPS] = read_for(ctx, OPS, rest, n_rest)
    try:
        return commit_outputs(
            sys.modules[__name__],
            ctx,
            transform(inputs, ctx.conf),
            {"phases_from_ingest": ctx.n_todo - n_rest, "phases_spark_pass": n_rest},
        )
    finally:
        rest.unpersist()


SUMMARY = ("tagged",)  # facts `summarize` adds to the stage summary (0 when nothing was new)


def summarize(outputs: dict) -> dict:
    import pyspark.sql.functions as F

    facts = (
        outputs[OUT]
        .agg(F.countDistinct(F.when(F.col("tag") != NO_ISSUE, F.col("log_id"))).alias("tagged"))
        .first()
    )
    return {"tagged": facts.tagged}


run, main = entry_points("tags")


if __name__ == "__main__":
    sys.exit(main())
