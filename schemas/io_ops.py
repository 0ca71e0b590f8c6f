"""bronze/io_ops — one row per traced operation, from Darshan DXT segments and Recorder calls.

`source` says where a row came from (`DXT_POSIX`, `DXT_MPIIO`, `RECORDER`). `op` is the
operation class (`read`, `write`, and for Recorder also `open`, `close`, `seek`, `sync`,
`meta`, `other`); `func` is the traced function's name where the tracer records it (Recorder).
`seq` orders operations within (log, source, record, rank, op): DXT segments in the order stored,
writes and reads each numbered from 0 (Darshan stores a record's writes, then its reads), so
(op, seq) is unique within a (record, rank); Recorder calls in trace order. Times are seconds
since job start.
"""

from pyspark.sql import types as T

from schemas._spec import (
    DEFAULT_PROPERTIES,
    JOB_MONTH,
    LOG_ID,
    STATS_COLUMNS,
    Expectation,
    TableSpec,
)

SOURCES = ("DXT_POSIX", "DXT_MPIIO", "RECORDER")

SPEC = TableSpec(
    name="io_ops",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            T.StructField("source", T.StringType(), False),
            T.StructField("record_id", T.LongType(), True),
            T.StructField("rank", T.LongType(), False),
            T.StructField("seq", T.LongType(), False),
            T.StructField("op", T.StringType(), False),
            T.StructField("func", T.StringType(), True),
            T.StructField("offset", T.LongType(), True),
            T.StructField("length", T.LongType(), True),
            T.StructField("start_s", T.DoubleType(), True),
            T.StructField("end_s", T.DoubleType(), True),
            T.StructField("thread", T.LongType(), True),
            T.StructField("hostname", T.StringType(), True),
        ]
    ),
    keys=("log_id", "source", "record_id", "rank", "op", "seq"),
    # log_id alone: a month's rows sorted by log_id, so a job's read skips row groups and files
    # (with record_id interleaved the log_id ranges stay wide: docs/decisions/0034-per-job-reads.md)
    zorder_by=("log_id",),
    # min/max statistics only where queries filter (and Z-ORDER needs them): collecting them for
    # all 14 columns slows the commit of a large batch
    properties={
        **DEFAULT_PROPERTIES,
        STATS_COLUMNS: "log_id,record_id,rank,start_s",
    },
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("in_set", "source", {"values": list(SOURCES)}),
        Expectation("not_null", "op"),
    ),
    doc=__doc__,
)
