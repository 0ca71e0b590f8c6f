"""gold/bandwidth_predictions — one row per (file, model version): predicted bandwidth on the file's tier.

Written by `jobs/score.py` beside the measured `bandwidth_mib_s`; `model_name` and
`model_version` say which registered model made the row.
"""
from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="bandwidth_predictions",
    layer="gold",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("record_id", T.LongType(), False),
            F("file_name", T.StringType(), True),
            F("tier", T.StringType(), True),
            F("bandwidth_mib_s", T.DoubleType(), True),  # measured
            F("predicted_bandwidth_mib_s", T.DoubleType(), False),
            F("model_name", T.StringType(), False),
            F("model_version", T.StringType(), False),
            F("scored_at", T.TimestampType(), False),
        ]
    ),
    keys=("log_id", "record_id", "model_name", "model_version"),
    merge_on=("job_month", "log_id", "record_id", "model_name", "model_version"),
    expectations=(
        Expectation("compound_unique", ("log_id", "record_id", "model_name", "model_version")),
        Expectation("between", "predicted_bandwidth_mib_s", {"min": 0}),
    ),
    doc=__doc__,
)
