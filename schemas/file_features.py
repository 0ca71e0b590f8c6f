"""silver/file_features — one row per (log, file): the file's I/O characteristics (PrismIO Table I).

Derived from the bronze module tables (and `io_ops` when the log has DXT or Recorder
operations); `features/file_features.py` documents each rule. Booleans that do not apply to
the file's interface are false (e.g. `collective` for POSIX), as in PrismIO's data set.
`tier` comes from the `features.tier_rules` of conf (path prefix or fs type).
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec, key_statistics

INTERFACES = ("HDF5", "MPI-IO", "POSIX", "STDIO")
IO_TYPES = ("RO", "WO", "RAR", "RAW", "WAR", "WAW", "none")

F = T.StructField
SPEC = TableSpec(
    name="file_features",
    layer="silver",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("record_id", T.LongType(), False),
            F("file_name", T.StringType(), True),
            F("unique_dir_name", T.StringType(), True),  # the file's parent directory
            F("mount_point", T.StringType(), True),
            F("fs_type", T.StringType(), True),
            F("tier", T.StringType(), False),
            F("interface", T.StringType(), False),
            F("nprocs", T.LongType(), True),
            F("n_ranks", T.LongType(), False),  # ranks that touched the file
            F("file_per_process", T.BooleanType(), False),
            F("unique_dir", T.BooleanType(), False),
            F("collective", T.BooleanType(), False),
            F("file_view", T.BooleanType(), False),
            F("fsync", T.BooleanType(), False),
            F("fsync_per_write", T.BooleanType(), False),
            F("preallocate", T.BooleanType(), False),
            F("transfer_size", T.LongType(), True),  # dominant access size at the interface, bytes
            F("opens", T.LongType(), False),
            F("reads", T.LongType(), False),
            F("writes", T.LongType(), False),
            F("rw_per_open", T.DoubleType(), True),  # reads+writes per open-to-close, per rank
            F("io_type", T.StringType(), False),
            F("io_type_source", T.StringType(), False),  # ops (DXT/Recorder order) | counters
            F("consecutive_ops", T.LongType(), True),
            F("sequential_ops", T.LongType(), True),  # sequential but not consecutive
            F("random_ops", T.LongType(), True),
            F("random_access", T.BooleanType(), False),
            F("bytes_read", T.LongType(), False),
            F("bytes_written", T.LongType(), False),
            F("read_time_s", T.DoubleType(), True),
            F("write_time_s", T.DoubleType(), True),
            F("meta_time_s", T.DoubleType(), True),
            F("io_time_s", T.DoubleType(), True),  # slowest rank's time for shared files
            F("bandwidth_mib_s", T.DoubleType(), True),
        ]
    ),
    keys=("log_id", "record_id"),
    properties=key_statistics("log_id", "record_id"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("compound_unique", ("log_id", "record_id")),
        Expectation("in_set", "interface", {"values": list(INTERFACES)}),
        Expectation("in_set", "io_type", {"values": list(IO_TYPES)}),
        Expectation("between", "bytes_read", {"min": 0}),
        Expectation("between", "bytes_written", {"min": 0}),
        Expectation("between", "n_ranks", {"min": 1}),
    ),
    doc=__doc__,
)
