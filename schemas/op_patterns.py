"""bronze/op_patterns — each log's DXT access-pattern counts, computed by ingest where it decodes the log.

What `features/file_features.py`'s `ops_pattern_stats` computes in Spark from `io_ops`, for every
length a file's ops have rather than only the file's transfer size (which needs the counters of
every module, so the features stage picks it later): one row per (record_id, source, length) of
the log's DXT read and write segments of that length, per rank and direction in time order.

- `source`: `DXT_POSIX` or `DXT_MPIIO`; `length`: the segments' length in bytes.
- `op_n`: the segments with a predecessor (of that length, rank and direction), the ones judged;
  `op_consec`, `op_seq`, `op_random`: those that start where the predecessor ended, after its
  start, or anywhere else (a segment without an offset is judged but none of the three).
- `op_first_read`, `op_first_write`: the earliest start of a read and of a write of that length.
- `h5f_calls`: true on the one row a Recorder-traced file with H5F calls gets (`source`
  `RECORDER`, `length` and the counts null): the features stage's HDF5 interface evidence.

The features stage joins the row whose `length` is the file's transfer size (its data layer's
source) and runs its own Spark pass only for the logs ingest did not pattern: a log ingest
patterned has `op_patterns` in its ledger row's `row_counts` (0 when it has no such segment); one
it did not (a huge DXT log streamed to disk, a lake ingested before this table,
`ingest.patterns: false`) has not.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="op_patterns",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("record_id", T.LongType(), False),
            F("source", T.StringType(), False),
            F("length", T.LongType(), True),
            F("op_n", T.LongType(), True),
            F("op_consec", T.LongType(), True),
            F("op_seq", T.LongType(), True),
            F("op_random", T.LongType(), True),
            F("op_first_read", T.DoubleType(), True),
            F("op_first_write", T.DoubleType(), True),
            F("h5f_calls", T.BooleanType(), False),
        ]
    ),
    keys=("log_id", "record_id", "source", "length"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("in_set", "source", {"values": ["DXT_POSIX", "DXT_MPIIO", "RECORDER"]}),
        Expectation("between", "op_n", {"min": 0}),
    ),
    doc=__doc__,
)
