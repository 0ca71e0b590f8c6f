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

from iolake.runner import entry_points

from features.covering_sets import covering_sets

OUT = "silver/covering_sets"


def transform(inputs: dict, conf) -> dict:
    """silver/covering_sets rows from bronze DataFrames; no I/O, no action."""
    t = {name.split("/", 1)[1]: df for name, df in inputs.items()}
    return {OUT: covering_sets(t["io_ops"], t["posix"], t["mpiio"], t["stdio"], t.get("files"))}

SUMMARY = ("members", "covered")  # facts `summarize` adds to the stage summary (0 when nothing was new)


def summarize(outputs: dict) -> dict:
    import pyspark.sql.functions as F

    facts = outputs[OUT].agg(F.count(F.lit(1)).alias("members"), F.countDistinct("log_id").alias("covered")).first()
    return {"members": facts.members, "covered": facts.covered}


run, main = entry_points("covering")


if __name__ == "__main__":
    sys.exit(main())
