"""bronze/file_rollups — each file record's counters rolled up over its ranks, computed by ingest
where it decodes the log.

What `features/file_features.py`'s `file_rollups` computes in Spark from the module tables (a
groupBy per module and seven joins for every new log): one row per record of the log's POSIX,
MPI-IO or STDIO module, with
- `px_*`, `mp_*`, `st_*`: that module's counters over the record's rows (ranks), each as the
  features rules read them: sums, maxima, distinct ranks (`*_ranks`), whether Darshan reduced it
  over ranks (`*_shared`: 1 for a rank -1 row), the most frequent access size (`*_access1`), the
  first read and write start (`*_first_read`, `*_first_write`: the least positive timestamp);
  null where the log has no such module record;
- `is_h5` (true, or null): the file has an H5F record, or H5F calls in a Recorder trace;
  `h5_opens` (H5F opens) and `h5_rw` (H5D reads + writes of its datasets) for an H5F record;
- `file_name`, `mount_point`, `fs_type` from bronze/files, and the job's `nprocs`.

The features stage applies its rules to these rows and runs its own Spark pass only for the logs
ingest did not roll up: a log ingest rolled up has `file_rollups` in its ledger row's `row_counts`
(0 when it has no such record); one it did not (a huge DXT log streamed to disk, a lake ingested
before this table, `ingest.rollups: false`) has not.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec, key_statistics

F = T.StructField


def _module(p: str, extra: list[str]) -> list:
    long_ = ["ranks", "opens", *extra, "syncs", "bytes_read", "bytes_written"]
    return [F(f"{p}_shared", T.IntegerType(), True)] + [
        F(f"{p}_{c}", T.LongType(), True) for c in long_
    ]


PX = _module("px", ["reads", "writes"]) + [
    F(f"px_{c}", T.LongType(), True)
    for c in ("max_byte", "consec_r", "consec_w", "seq_r", "seq_w", "access1")
]
MP = [F("mp_shared", T.IntegerType(), True)] + [
    F(f"mp_{c}", T.LongType(), True)
    for c in (
        "ranks",
        "indep_opens",
        "coll_opens",
        "reads",
        "writes",
        "coll_ops",
        "views",
        "syncs",
        "bytes_read",
        "bytes_written",
        "access1",
    )
]
ST = _module("st", ["reads", "writes"]) + [F("st_max_byte", T.LongType(), True)]


def _times(p: str) -> list:
    return [
        F(f"{p}_{c}", T.DoubleType(), True)
        for c in ("read_time", "write_time", "meta_time", "slowest", "first_read", "first_write")
    ]


SPEC = TableSpec(
    name="file_rollups",
    layer="bronze",
    struct=T.StructType(
        [LOG_ID, JOB_MONTH, F("record_id", T.LongType(), False)]
        + PX
        + _times("px")
        + MP
        + _times("mp")
        + ST
        + _times("st")
        + [
            F("is_h5", T.BooleanType(), True),
            F("h5_opens", T.LongType(), True),
            F("h5_rw", T.LongType(), True),
            F("file_name", T.StringType(), True),
            F("mount_point", T.StringType(), True),
            F("fs_type", T.StringType(), True),
            F("nprocs", T.LongType(), True),
        ]
    ),
    keys=("log_id", "record_id"),
    properties=key_statistics("log_id", "record_id"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("between", "px_ranks", {"min": 0}),
    ),
    doc=__doc__,
)
