"""gold/placement_predictions — one row per (file, model version): the tier the placement model picks.

Written by `jobs/score.py` for every data file of silver/file_features not yet scored by that
model version; `model_name` and `model_version` say which registered model made the row.
`model_alias`, `trained_on` and `training_origin` say where the model came from
(`models/provenance.py`: `lake`, `benchmark`, `shipped_benchmark`, `unknown`; null on rows
scored before they were recorded).
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, PROVENANCE, TRAINING_ORIGINS, Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="placement_predictions",
    layer="gold",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("record_id", T.LongType(), False),
            F("file_name", T.StringType(), True),
            F("tier", T.StringType(), True),  # where the file was
            F("predicted_tier", T.StringType(), False),
            F("probability", T.DoubleType(), True),  # of the predicted tier
            F("model_name", T.StringType(), False),
            F("model_version", T.StringType(), False),
            *PROVENANCE,
            F("scored_at", T.TimestampType(), False),
        ]
    ),
    keys=("log_id", "record_id", "model_name", "model_version"),
    merge_on=("job_month", "log_id", "record_id", "model_name", "model_version"),
    expectations=(
        Expectation("compound_unique", ("log_id", "record_id", "model_name", "model_version")),
        Expectation("not_null", "model_version"),
        Expectation("in_set", "training_origin", {"values": list(TRAINING_ORIGINS)}),
    ),
    doc=__doc__,
)
