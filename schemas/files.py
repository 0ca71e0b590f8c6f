"""bronze/files — Darshan name records: record id -> path, with the mount it lives on.

`record_id` is Darshan's 64-bit record hash stored as a signed int64 (same bits); every
module table and `io_ops` carries the same value, so joins are plain equality joins.
`mount_point`/`fs_type` come from the longest mount-table prefix of the path.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

SPEC = TableSpec(
    name="files",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            T.StructField("record_id", T.LongType(), False),
            T.StructField("name", T.StringType(), True),
            T.StructField("mount_point", T.StringType(), True),
            T.StructField("fs_type", T.StringType(), True),
        ]
    ),
    keys=("log_id", "record_id"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("not_null", "record_id"),
        Expectation("compound_unique", ("log_id", "record_id")),
    ),
    doc=__doc__,
)
