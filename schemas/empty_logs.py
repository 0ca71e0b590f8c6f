"""ops/empty_logs — logs an incremental stage processed that left no row in its `done` table.

A stage with `new_logs: {from, done}` (pipeline.yaml) works on the logs of `from` that `done`
does not hold. Most `done` tables get a row for every log, but `silver/covering_sets` has none
for a job without an I/O interval, so such a job was new work again at every run, and its
`job_month` widened every later run's partition filter. The runner (`iolake/runner.py`) records
those logs here after the stage has committed, and the next run's new work leaves them out.

A row belongs to one build of the `done` table (`done_table_id`, Delta's table id): when that
table is dropped and rebuilt (a new id), its stage's rows here no longer count, so every log is
new work again. Insert-only, keyed (stage, done_table_id, log_id); not partitioned (a few rows a
night).
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField

SPEC = TableSpec(
    name="empty_logs",
    layer="ops",
    struct=T.StructType(
        [
            F("stage", T.StringType(), False),
            F("done_table", T.StringType(), False),  # e.g. "silver/covering_sets"
            F("done_table_id", T.StringType(), False),  # Delta's id of that table's build
            F("log_id", T.StringType(), False),
            F("job_month", T.StringType(), True),
            F("run_id", T.StringType(), False),
        ]
    ),
    keys=("stage", "done_table_id", "log_id"),
    partition_by=(),
    merge_on=("stage", "done_table_id", "log_id"),
    zorder_by=(),
    expectations=(
        Expectation("not_null", "stage"),
        Expectation("not_null", "log_id"),
        Expectation("compound_unique", ("stage", "done_table_id", "log_id")),
    ),
    doc=__doc__,
)
