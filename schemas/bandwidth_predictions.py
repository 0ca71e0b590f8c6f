"""gold/bandwidth_predictions — one row per (file, model version): predicted bandwidth on the file's
tier and on every tier the model knows, and the speed-up of moving the file to the best one.

Written by `jobs/score.py` beside the measured `bandwidth_mib_s`; `model_name` and
`model_version` say which registered model made the row. `predicted_bandwidth_mib_s` and
`speedup` are null when the file's tier is one the model was never trained on (a file system
the benchmark did not measure): `bandwidth_by_tier` and `best_tier` still say what each known
tier would give. Rows of model versions from before per-tier predictions leave the new columns null.
`model_alias`, `trained_on` and `training_origin` say where the model came from
(`models/provenance.py`: `lake`, `benchmark`, `shipped_benchmark`, `unknown`; null on rows
scored before they were recorded).
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, PROVENANCE, TRAINING_ORIGINS, Expectation, TableSpec

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
            F("predicted_bandwidth_mib_s", T.DoubleType(), True),  # on the file's own tier
            F(
                "bandwidth_by_tier", T.MapType(T.StringType(), T.DoubleType()), True
            ),  # {tier: MiB/s}
            F("best_tier", T.StringType(), True),
            F("best_bandwidth_mib_s", T.DoubleType(), True),
            F("speedup", T.DoubleType(), True),  # best / predicted on the file's tier
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
        Expectation("between", "predicted_bandwidth_mib_s", {"min": 0}),
        Expectation("between", "speedup", {"min": 1}),
        Expectation("in_set", "training_origin", {"values": list(TRAINING_ORIGINS)}),
    ),
    doc=__doc__,
)
