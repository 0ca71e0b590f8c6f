"""silver/job_features — one row per decoded log: DCA-IO Table I plus metadata share and rank skew.

I/O time is the slowest process's (DCA-IO): per rank, the summed read, write and metadata time
of the files it alone opened, plus the slowest rank's time on each shared file; throughput is
bytes moved over that time. Counts are over POSIX records (the layer all I/O reaches), with
STDIO added where POSIX is absent. `ost_count` is DCA-IO's StripeCount (Table I: the number of
OSTs the job used); `stripe_count` / `stripe_size` the layout of its largest Lustre file.
`suspect` is true when the log's counters cannot be true (a rank moving more bytes per second of
the run than `suspect.max_bytes_per_s_per_process`, negative or overflowed counters, timestamps
after the run); `suspect_reason` says which counter, its value and the limit (null when fine).
A suspect log's row is kept, and its throughput is left out of models, watch and advice.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec, key_statistics

F = T.StructField
SPEC = TableSpec(
    name="job_features",
    layer="silver",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("jobid", T.LongType(), True),
            F("uid", T.LongType(), True),
            F("program", T.StringType(), True),
            F("start_time", T.TimestampType(), True),
            F("run_time_s", T.DoubleType(), True),
            F("nprocs", T.LongType(), True),
            F("stripe_count", T.LongType(), True),  # of the job's largest Lustre file
            F("stripe_size", T.LongType(), True),
            F("file_count", T.LongType(), False),  # files with reads or writes
            F("shared_file_count", T.LongType(), False),
            F("seq_pct", T.DoubleType(), True),
            F("small_requests", T.LongType(), True),  # < 1 KiB
            F("medium_requests", T.LongType(), True),  # 1 KiB - 100 KiB
            F("read_requests", T.LongType(), False),
            F("write_requests", T.LongType(), False),
            F("bytes_read", T.LongType(), False),
            F("bytes_written", T.LongType(), False),
            F("read_time_s", T.DoubleType(), True),
            F("write_time_s", T.DoubleType(), True),
            F("meta_time_s", T.DoubleType(), True),
            F("meta_time_share", T.DoubleType(), True),
            F("io_time_s", T.DoubleType(), True),
            F("throughput_mib_s", T.DoubleType(), True),
            F("slowest_rank_time_s", T.DoubleType(), True),
            F("fastest_rank_time_s", T.DoubleType(), True),
            F("rank_time_ratio", T.DoubleType(), True),
            F("interfaces", T.ArrayType(T.StringType()), True),
            F("tiers", T.ArrayType(T.StringType()), True),
            F(
                "ost_count", T.LongType(), True
            ),  # DCA-IO's StripeCount: distinct OSTs of the job's Lustre files
            F(
                "suspect", T.BooleanType(), True
            ),  # counters that cannot be true (features/suspect.py)
            F(
                "suspect_reason", T.StringType(), True
            ),  # why, naming counter, value and limit; null when fine
        ]
    ),
    keys=("log_id",),
    properties=key_statistics("log_id"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("unique", "log_id"),
        Expectation("between", "nprocs", {"min": 1}),
        Expectation("between", "bytes_read", {"min": 0}),
        Expectation("between", "seq_pct", {"min": 0, "max": 100}),
        Expectation("not_null", "suspect"),
    ),
    doc=__doc__,
)
