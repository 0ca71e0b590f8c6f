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

from iolake.runner import entry_points

from features import bottleneck_tags

OUT = "silver/bottleneck_tags"


def transform(inputs: dict, conf) -> dict:
    """silver/bottleneck_tags rows from bronze and silver DataFrames; no I/O, no action."""
    bronze = {name.split("/", 1)[1]: df for name, df in inputs.items() if name.startswith("bronze/")}
    return {OUT: bottleneck_tags.transform(bronze, inputs["silver/file_features"], inputs["silver/job_features"],
                                           conf.tags)}

SUMMARY = ("tagged",)  # facts `summarize` adds to the stage summary (0 when nothing was new)


def summarize(outputs: dict) -> dict:
    import pyspark.sql.functions as F

    facts = outputs[OUT].agg(F.countDistinct(F.when(F.col("tag") != "no_issue", F.col("log_id"))).alias("tagged")).first()
    return {"tagged": facts.tagged}


run, main = entry_points("tags")


if __name__ == "__main__":
    sys.exit(main())
