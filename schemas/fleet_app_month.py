"""gold/fleet_app_month — one row per (application, month): what the application cost the fleet
(`jobs/fleet.py`, `features/fleet.py`; definitions and limits in docs/fleet.md).

`app` is the watch's application key (gold/app_runs.app, conf `watch.key_parts`; a suspect job,
which has no app_runs row, gets the same key computed the same way); `month` the jobs'
`job_month` (UTC, from the start time). `exe_name` is the program (the smallest name when the key
has no executable part), `uid` the user (null when the key has no user part).
`runs` counts every job, `suspect_runs` those whose counters cannot be true
(silver/job_features.suspect): they count in `runs` and `core_hours` only.
`core_hours` = sum of nprocs * run_time_s / 3600; `io_core_hours` = sum of (read_time_s +
write_time_s + meta_time_s) / 3600 (silver/job_features: Darshan's per-record cumulative
F_*_TIME of POSIX, STDIO where POSIX is absent, summed over ranks: process-hours inside I/O
calls; MPI-IO time is not added, a lower bound for MPI-IO jobs); `io_share` = io_core_hours /
core_hours (null when core_hours is 0 or null). Throughput percentiles are exact (Spark
`percentile`, linear interpolation) over the non-suspect runs' throughput_mib_s. `tag_runs`: runs
on which each tag of silver/bottleneck_tags fired (`no_issue` left out). `regressions`: rows of
gold/regressions of this application whose start is in the month.
`efficiency_p50`: the median over the month's non-suspect runs of their efficiency
(gold/job_bandwidth_predictions.efficiency = measured / expected throughput, from the per-job
model in use for each job); null when that model was not trained on this lake (a benchmark
machine's expectation means nothing here). `efficiency_runs`: the runs it is over.
Partitioned by `month`; the fleet stage replaces the months new logs touch.
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="fleet_app_month",
    layer="gold",
    struct=T.StructType(
        [
            F("app", T.StringType(), False),
            F("month", T.StringType(), False),
            F("exe_name", T.StringType(), True),
            F("uid", T.LongType(), True),
            F("runs", T.LongType(), False),
            F("suspect_runs", T.LongType(), False),
            F("core_hours", T.DoubleType(), True),
            F("io_core_hours", T.DoubleType(), False),
            F("io_share", T.DoubleType(), True),
            F("bytes_read", T.LongType(), False),
            F("bytes_written", T.LongType(), False),
            F("throughput_p10_mib_s", T.DoubleType(), True),
            F("throughput_p50_mib_s", T.DoubleType(), True),
            F("throughput_p90_mib_s", T.DoubleType(), True),
            F("tag_runs", T.MapType(T.StringType(), T.LongType()), False),
            F("regressions", T.LongType(), False),
            F("efficiency_p50", T.DoubleType(), True),
            F("efficiency_runs", T.LongType(), True),
            F("updated_at", T.TimestampType(), False),
        ]
    ),
    keys=("app", "month"),
    partition_by=("month",),
    merge_on=("month", "app"),
    zorder_by=("app",),
    expectations=(
        Expectation("not_null", "app"),
        Expectation("not_null", "month"),
        Expectation("compound_unique", ("app", "month")),
        Expectation("between", "runs", {"min": 1}),
        Expectation("between", "suspect_runs", {"min": 0}),
        Expectation("between", "core_hours", {"min": 0}),
        Expectation("between", "io_core_hours", {"min": 0}),
        Expectation("between", "io_share", {"min": 0}),
        Expectation("between", "bytes_read", {"min": 0}),
        Expectation("between", "bytes_written", {"min": 0}),
        Expectation("between", "throughput_p50_mib_s", {"min": 0}),
        Expectation("between", "regressions", {"min": 0}),
        Expectation("between", "efficiency_p50", {"min": 0}),
        Expectation("not_null", "updated_at"),
    ),
    doc=__doc__,
)
