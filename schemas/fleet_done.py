"""ops/fleet_done — one row per log the fleet stage has counted in the marts (`jobs/fleet.py`).

The stage's bookkeeping: the logs of silver/job_features without a row here are the new ones,
whose months (and ingest nights) it recomputes. `done_at` is when the stage counted the log.
Delete a log's row (or the table) to have its months recomputed on the next run.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

SPEC = TableSpec(
    name="fleet_done",
    layer="ops",
    struct=T.StructType([LOG_ID, JOB_MONTH, T.StructField("done_at", T.TimestampType(), False)]),
    keys=("log_id",),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("unique", "log_id"),
        Expectation("not_null", "done_at"),
    ),
    doc=__doc__,
)
