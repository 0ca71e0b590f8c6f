"""bronze/phases — each log's traced I/O phases, computed by ingest where it decodes the log.

What the tags stage's `traced_phases` (`features/bottleneck_tags.py`) computes in Spark from
`io_ops` for the `many_io_phases` rule: the log's DXT / Recorder reads and writes in time order,
split where the idle gap after everything before exceeds `gap_s` (`tags.io_phase_gap_s` when
ingest ran). One row per phase: `phase` (1, 2, ...), its first start `t0`, last end `t1` and the
bytes its ops moved.

The tags stage takes these rows for a log ingest phased with the gap it is configured with, and
runs its own Spark pass for the others: a log ingest phased has `phases` in its ledger row's
`row_counts` (0 when it has no traced read or write: its phases come from HEATMAP); one it did not
(a huge DXT log streamed to disk, a lake ingested before this table, `ingest.phases: false`), or
phased with another gap, has not.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="phases",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("gap_s", T.DoubleType(), False),
            F("phase", T.LongType(), False),
            F("t0", T.DoubleType(), True),
            F("t1", T.DoubleType(), True),
            F("bytes", T.LongType(), True),
        ]
    ),
    keys=("log_id", "phase"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("between", "phase", {"min": 1}),
    ),
    doc=__doc__,
)
