"""gold/app_runs — one row per job: its application key, start and the metrics the regression watch
follows (`jobs/watch.py`, `features/regressions.py`).

`app` joins the key's parts named in conf `watch.key_parts` with `|` (default: executable name,
user, process-count bucket, file system, I/O direction, layout); every part is kept in its own
column too. `fs` is the mount point of the job's data file with the most bytes moved
(silver/file_features; files without a mount, such as standard streams, do not count), null
when the job moved no bytes to a mounted file. `direction` is `read` when the job read more
bytes than it wrote, else `write`; `layout` is `shared` when a file was accessed by more than
one rank, else `fpp`. Metrics (silver/job_features): `bandwidth_mib_s` (bytes moved over the
slowest process's I/O time, Darshan's agg_perf_by_slowest), `io_time_s` (that time),
`meta_time_share` (metadata share of the I/O time), `bytes` (read + written).
Insert-only per log: the key is computed once, when the job is added; a change of
`watch.key_parts` or `watch.nprocs_buckets` applies to jobs added afterwards (drop the table to
rebuild it).
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="app_runs",
    layer="gold",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("app", T.StringType(), False),
            F("exe", T.StringType(), True),
            F("uid", T.LongType(), True),
            F("nprocs", T.LongType(), True),
            F("nprocs_bucket", T.StringType(), True),
            F("fs", T.StringType(), True),
            F("direction", T.StringType(), True),
            F("layout", T.StringType(), True),
            F("start", T.TimestampType(), False),
            F("bandwidth_mib_s", T.DoubleType(), True),
            F("io_time_s", T.DoubleType(), True),
            F("meta_time_share", T.DoubleType(), True),
            F("bytes", T.LongType(), True),
        ]
    ),
    keys=("log_id",),
    zorder_by=("app", "start"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("unique", "log_id"),
        Expectation("not_null", "app"),
        Expectation("not_null", "start"),
        Expectation("between", "bandwidth_mib_s", {"min": 0}),
        Expectation("between", "meta_time_share", {"min": 0, "max": 1}),
        Expectation("in_set", "direction", {"values": ["read", "write"]}),
        Expectation("in_set", "layout", {"values": ["shared", "fpp"]}),
    ),
    doc=__doc__,
)
