"""ops/runs — one row per `iolake run` / `iolake ingest`, written when the run ends, failed or not.

Operators' record of what ran: the run id (the same id every Delta commit of the run carries in
its `userMetadata`), the command, environment, code and configuration, when it started and
finished (UTC), how it ended (`status`, the process `exit_code`, the `error` message), the
ingest counts (`listed`, `new`, `skipped` = already in the ledger or duplicate copies, and
logs `ok` / `partial` / `quarantined`), the seconds each stage took (`stages` lists them in
pipeline order) and every table's Delta version after the run.

It lives under `LAKE/ops/` — neither bronze, silver nor gold: it is about the pipeline, not the
traces. Appended once per run (never merged); not partitioned (a few rows a day).
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
STATUSES = ("succeeded", "failed")

SPEC = TableSpec(
    name="runs",
    layer="ops",
    struct=T.StructType(
        [
            F("run_id", T.StringType(), False),
            F("command", T.StringType(), False),  # run | ingest
            F("env", T.StringType(), False),  # local | cluster
            F("lake", T.StringType(), False),
            F("inputs", T.ArrayType(T.StringType()), True),
            F("git_sha", T.StringType(), True),
            F("config_digest", T.StringType(), True),
            F("started", T.TimestampType(), False),  # UTC
            F("finished", T.TimestampType(), False),
            F("duration_s", T.DoubleType(), False),
            F("status", T.StringType(), False),
            F("exit_code", T.IntegerType(), False),
            F("error", T.StringType(), True),  # "<ExceptionType>: message" of a failed run
            F("ingest_counts", T.MapType(T.StringType(), T.LongType()), True),
            F(
                "stages", T.ArrayType(T.StringType()), True
            ),  # stages that ran (or started), in order
            F("stage_seconds", T.MapType(T.StringType(), T.DoubleType()), True),
            F(
                "table_versions", T.MapType(T.StringType(), T.LongType()), True
            ),  # "bronze/posix" -> version
        ]
    ),
    keys=("run_id",),
    partition_by=(),
    zorder_by=(),  # a few rows a day: compaction only
    expectations=(
        Expectation("not_null", "run_id"),
        Expectation("unique", "run_id"),
        Expectation("in_set", "status", {"values": list(STATUSES)}),
    ),
    doc=__doc__,
)
