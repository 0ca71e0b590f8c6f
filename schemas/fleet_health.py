"""gold/fleet_health — one row per night: the lake's intake and the pipeline's runs
(`jobs/fleet.py`, `features/fleet.py`; definitions in docs/fleet.md).

`night` is the UTC date of bronze/logs.ingested_at. `logs` counts the ledger's rows of that
night, `ok`, `partial`, `quarantined` by status, `suspect` the night's logs flagged in
silver/job_features. `quarantine_reasons` maps a quarantined log's reason, cut at its first
clause (before the first `:`, `;` or `(`), to its count. `runs` and `failed_runs` count ops/runs
rows started that date (status other than `succeeded` is a failure), `run_seconds` sums their
duration_s (null when no run started that date; the run that builds the marts is recorded after
them). `lag` maps each downstream table (silver/job_features, silver/covering_sets,
silver/bottleneck_tags, gold/app_runs) to the night's decoded logs (status ok or partial) it
does not hold yet, as of the stage's last recompute of that night (logs a stage processed without
a row, ops/empty_logs, count as held). `month` (the night's YYYY-MM) is the partition column.
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="fleet_health",
    layer="gold",
    struct=T.StructType(
        [
            F("night", T.DateType(), False),
            F("logs", T.LongType(), False),
            F("ok", T.LongType(), False),
            F("partial", T.LongType(), False),
            F("quarantined", T.LongType(), False),
            F("suspect", T.LongType(), False),
            F("quarantine_reasons", T.MapType(T.StringType(), T.LongType()), False),
            F("runs", T.LongType(), False),
            F("failed_runs", T.LongType(), False),
            F("run_seconds", T.DoubleType(), True),
            F("lag", T.MapType(T.StringType(), T.LongType()), False),
            F("updated_at", T.TimestampType(), False),
            F("month", T.StringType(), False),
        ]
    ),
    keys=("night",),
    partition_by=("month",),
    merge_on=("month", "night"),
    zorder_by=(),
    expectations=(
        Expectation("not_null", "night"),
        Expectation("unique", "night"),
        Expectation("between", "logs", {"min": 1}),
        Expectation("between", "ok", {"min": 0}),
        Expectation("between", "partial", {"min": 0}),
        Expectation("between", "quarantined", {"min": 0}),
        Expectation("between", "suspect", {"min": 0}),
        Expectation("between", "runs", {"min": 0}),
        Expectation("between", "failed_runs", {"min": 0}),
        Expectation("between", "run_seconds", {"min": 0}),
        Expectation("not_null", "month"),
        Expectation("not_null", "updated_at"),
    ),
    doc=__doc__,
)
