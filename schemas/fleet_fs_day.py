"""gold/fleet_fs_day — one row per (day, mount point): how each file system was used
(`jobs/fleet.py`, `features/fleet.py`; definitions in docs/fleet.md).

From silver/file_features of the jobs with a start time: `day` is the job's start date (UTC),
`mount_point` the file's mount (`(none)` when it has none, e.g. standard streams), `fs_type`
the mount's type (the largest name when logs disagree). `jobs` counts the jobs with a file
there; bytes, `reads`, `writes`, `opens` and `meta_time_s` are summed over the files; `io_time_s`
= read + write + metadata seconds summed over those files (cumulative over ranks, as Darshan
records them). Suspect jobs (silver/job_features.suspect) are left out: their counters cannot be
true. A whole job lands on its start day (no split over the days it ran). `month` (the day's
YYYY-MM) is the partition column; the fleet stage replaces the months new logs touch.
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="fleet_fs_day",
    layer="gold",
    struct=T.StructType(
        [
            F("day", T.DateType(), False),
            F("mount_point", T.StringType(), False),
            F("fs_type", T.StringType(), True),
            F("jobs", T.LongType(), False),
            F("bytes_read", T.LongType(), False),
            F("bytes_written", T.LongType(), False),
            F("reads", T.LongType(), False),
            F("writes", T.LongType(), False),
            F("opens", T.LongType(), False),
            F("meta_time_s", T.DoubleType(), False),
            F("io_time_s", T.DoubleType(), False),
            F("updated_at", T.TimestampType(), False),
            F("month", T.StringType(), False),
        ]
    ),
    keys=("day", "mount_point"),
    partition_by=("month",),
    merge_on=("month", "day", "mount_point"),
    zorder_by=("day", "mount_point"),
    expectations=(
        Expectation("not_null", "day"),
        Expectation("not_null", "mount_point"),
        Expectation("compound_unique", ("day", "mount_point")),
        Expectation("between", "jobs", {"min": 1}),
        Expectation("between", "bytes_read", {"min": 0}),
        Expectation("between", "bytes_written", {"min": 0}),
        Expectation("between", "reads", {"min": 0}),
        Expectation("between", "writes", {"min": 0}),
        Expectation("between", "opens", {"min": 0}),
        Expectation("between", "meta_time_s", {"min": 0}),
        Expectation("between", "io_time_s", {"min": 0}),
        Expectation("not_null", "month"),
        Expectation("not_null", "updated_at"),
    ),
    doc=__doc__,
)
