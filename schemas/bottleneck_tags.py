"""silver/bottleneck_tags — one row per (log, tag): an I/O bottleneck a job shows, with its evidence.

Each row says which rule fired: `metric` (what was measured) and its `value`, the named
setting it crossed (`threshold_name`, a key of conf's `tags:` section, and its `threshold`),
`evidence` (the files and/or ranks that caused it, most significant first, at most
`tags.evidence_max`; a file is its path, a rank reads `rank <n>`) and a readable `message`.
`features/bottleneck_tags.py` documents each tag's rule and where it comes from (Drishti's
triggers, the keynote's common causes of poor I/O performance).

A job no rule fires on gets one `no_issue` row (severity `info`, metric `tags_fired` = 0,
no threshold): every tagged log has at least one row, so the stage's incremental check is a
plain "log_id not in bottleneck_tags yet".
"""
from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

TAGS = (
    "small_reads",
    "small_writes",
    "misaligned_file",
    "misaligned_memory",
    "random_reads",
    "random_writes",
    "shared_file_imbalance",
    "rank_size_imbalance",
    "stragglers",
    "rank0_heavy",
    "no_collective_shared",
    "metadata_heavy",
    "stdio_heavy",
    "single_stripe_shared",
    "few_osts",
    "many_io_phases",
    "read_after_write",
    "redundant_reads",
    "no_issue",
)
SEVERITIES = ("info", "warn", "high")

F = T.StructField
SPEC = TableSpec(
    name="bottleneck_tags",
    layer="silver",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("tag", T.StringType(), False),
            F("severity", T.StringType(), False),
            F("metric", T.StringType(), False),  # e.g. small_read_share
            F("value", T.DoubleType(), True),
            F("threshold_name", T.StringType(), True),  # e.g. tags.small_requests; null for no_issue
            F("threshold", T.DoubleType(), True),
            F("evidence", T.ArrayType(T.StringType()), False),
            F("message", T.StringType(), False),
        ]
    ),
    keys=("log_id", "tag"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("not_null", "job_month"),
        Expectation("not_null", "tag"),
        Expectation("not_null", "metric"),
        Expectation("not_null", "message"),
        Expectation("compound_unique", ("log_id", "tag")),
        Expectation("in_set", "tag", {"values": list(TAGS)}),
        Expectation("in_set", "severity", {"values": list(SEVERITIES)}),
    ),
    doc=__doc__,
)
