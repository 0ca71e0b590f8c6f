"""bronze/logs — the ingest ledger: one row per distinct trace file (by content hash) ever seen.

Ingest is incremental against this table: a file whose content hash is here is never decoded
again. A log is written here only after all of its rows are committed to the other bronze
tables, so a crash between the two leaves the log to be picked up again by the next run.

`status`: `ok`; `partial` — the log landed without some modules' records: Darshan flagged them
partial (it ran out of record memory), or their region was cut short or corrupt (a copy cut while
DXT was written; the native decoder keeps every module that decodes). `partial_modules` names
them, `reason` says which and why; `quarantined` — nothing landed, `reason` says why.

`modules_info` (Darshan logs): every module region of the log in module index order, with the
log's format version of that module (`version`) and the compressed size of its region in bytes
(`region_bytes`): darshan-parser's "# <MOD> module: <bytes> bytes (ver=<version>)" lines and
pydarshan's `report.modules[mod]["len"]` / `["ver"]`. Null for Recorder traces and quarantined logs.

`jobid`: the scheduler's job id of a decoded log, as in bronze/jobs, so that a job is found by
its id in this one small table (`iolake report JOBID`; decision 0042). Null for quarantined logs
and traces without one. A ledger written before the column existed gets it filled from
bronze/jobs by the next ingest, once; until then the table property JOBID_FILLED is absent and
readers look in bronze/jobs.
"""

from pyspark.sql import types as T

from schemas._spec import DEFAULT_PROPERTIES, LOG_ID, Expectation, TableSpec

STATUSES = ("ok", "partial", "quarantined")
# a table property: "true" once every row's `jobid` is filled (a new ledger has it from the start)
JOBID_FILLED = "iolake.ledger.jobidFilled"

# one module region of a Darshan log, as `darshan-parser` prints it ("# <MOD> module: <len> bytes
# (ver=<ver>)") and pydarshan holds it (`report.modules[mod]["len"]`, `["ver"]`); the fields are
# nullable because Delta keeps no NOT NULL constraint inside an array
MODULE_INFO = T.StructType(
    [
        T.StructField("module", T.StringType(), True),
        T.StructField("version", T.IntegerType(), True),
        T.StructField("region_bytes", T.LongType(), True),
    ]
)

SPEC = TableSpec(
    name="logs",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            T.StructField("job_month", T.StringType(), True),  # null when quarantined
            T.StructField("source_uri", T.StringType(), False),
            T.StructField("size_bytes", T.LongType(), False),
            T.StructField("mtime_ns", T.LongType(), True),
            T.StructField("format", T.StringType(), True),  # darshan | recorder | unknown
            T.StructField("format_version", T.StringType(), True),  # e.g. 3.41
            T.StructField("writer_version", T.StringType(), True),  # darshan library that wrote it
            T.StructField("compression", T.StringType(), True),  # zlib | bzip2 | none
            T.StructField("decoder", T.StringType(), True),  # e.g. pydarshan-3.5.0
            T.StructField("status", T.StringType(), False),
            T.StructField("reason", T.StringType(), True),
            T.StructField("modules", T.ArrayType(T.StringType()), True),
            T.StructField("partial_modules", T.ArrayType(T.StringType()), True),
            T.StructField("modules_info", T.ArrayType(MODULE_INFO), True),
            T.StructField("notes", T.ArrayType(T.StringType()), True),
            T.StructField("row_counts", T.MapType(T.StringType(), T.LongType()), True),
            T.StructField("decode_s", T.DoubleType(), True),
            T.StructField("ingest_run_id", T.StringType(), False),
            T.StructField("ingested_at", T.TimestampType(), False),
            T.StructField("jobid", T.LongType(), True),  # last: where ADD COLUMNS puts it
        ]
    ),
    keys=("log_id",),
    merge_on=("log_id",),
    partition_by=(),  # one small row per log; looked up by log_id, source_uri and jobid
    properties={**DEFAULT_PROPERTIES, JOBID_FILLED: "true"},
    # `iolake maintain` sorts it: one log's row is in one small row group (decision 0041)
    sorted_by=("log_id",),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("unique", "log_id"),
        Expectation("in_set", "status", {"values": list(STATUSES)}),
        Expectation("not_null", "source_uri"),
        Expectation("between", "size_bytes", {"min": 0}),
    ),
    doc=__doc__,
)
