"""gold/job_bandwidth_predictions — one row per (job log, model version): the job's predicted I/O
throughput on its tier and on every tier the per-job model knows, and the speed-up of the best.

Written by `jobs/score.py` from silver/job_features with `models:/iolake-job-bandwidth@ALIAS`,
beside the measured `throughput_mib_s` (total bytes / slowest process's I/O time). `tier` is the
job's single tier (`mixed` when its files span several, `unknown` when none has one); a job on a
tier the model never saw has a null `predicted_throughput_mib_s` and `speedup` and still gets
`throughput_by_tier`.
`model_alias`, `trained_on` and `training_origin` say where the model came from
(`models/provenance.py`: `lake`, `benchmark`, `shipped_benchmark`, `unknown`; null on rows
scored before they were recorded).
`efficiency` = throughput_mib_s / predicted_throughput_mib_s: what the job got of what the model
expects for its pattern on its file system (issue 40; docs/fleet.md). Only from a model trained
on this lake (`training_origin` = `lake`): against another machine's benchmark the ratio means
nothing, and it is null; null too when either side is missing or not positive.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, PROVENANCE, TRAINING_ORIGINS, Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="job_bandwidth_predictions",
    layer="gold",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("program", T.StringType(), True),
            F("tier", T.StringType(), True),
            F("throughput_mib_s", T.DoubleType(), True),  # measured
            F("predicted_throughput_mib_s", T.DoubleType(), True),
            F("throughput_by_tier", T.MapType(T.StringType(), T.DoubleType()), True),
            F("best_tier", T.StringType(), True),
            F("best_throughput_mib_s", T.DoubleType(), True),
            F("speedup", T.DoubleType(), True),
            F("efficiency", T.DoubleType(), True),  # measured / predicted, lake-trained models only
            F("model_name", T.StringType(), False),
            F("model_version", T.StringType(), False),
            *PROVENANCE,
            F("scored_at", T.TimestampType(), False),
        ]
    ),
    keys=("log_id", "model_name", "model_version"),
    merge_on=("job_month", "log_id", "model_name", "model_version"),
    expectations=(
        Expectation("compound_unique", ("log_id", "model_name", "model_version")),
        Expectation("between", "predicted_throughput_mib_s", {"min": 0}),
        Expectation("between", "speedup", {"min": 1}),
        Expectation("between", "efficiency", {"min": 0}),
        Expectation("in_set", "training_origin", {"values": list(TRAINING_ORIGINS)}),
    ),
    doc=__doc__,
)
