"""bronze/jobs — one row per decoded log: the Darshan job header, executable and mount table."""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

MOUNT = T.StructType(
    [
        T.StructField("mount_point", T.StringType(), True),
        T.StructField("fs_type", T.StringType(), True),
    ]
)

SPEC = TableSpec(
    name="jobs",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            T.StructField("jobid", T.LongType(), True),
            T.StructField("uid", T.LongType(), True),
            T.StructField("nprocs", T.LongType(), True),
            T.StructField("start_time_sec", T.LongType(), True),
            T.StructField("start_time_nsec", T.LongType(), True),
            T.StructField("end_time_sec", T.LongType(), True),
            T.StructField("end_time_nsec", T.LongType(), True),
            T.StructField("run_time_s", T.DoubleType(), True),
            T.StructField("exe", T.StringType(), True),
            T.StructField("metadata", T.MapType(T.StringType(), T.StringType()), True),
            T.StructField("log_ver", T.StringType(), True),
            T.StructField("mounts", T.ArrayType(MOUNT), True),
        ]
    ),
    keys=("log_id",),
    zorder_by=("log_id", "jobid", "exe"),  # what analysts filter jobs by
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("unique", "log_id"),
        Expectation("between", "nprocs", {"min": 1}),
        Expectation("between", "run_time_s", {"min": 0}),
    ),
    doc=__doc__,
)
