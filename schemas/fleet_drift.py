"""gold/fleet_drift — one row per (model, model version, month): do the bandwidth models still
hold (`jobs/fleet.py`, `features/fleet.py`; definitions in docs/fleet.md).

From gold/job_bandwidth_predictions (throughput_mib_s against predicted_throughput_mib_s) and
gold/bandwidth_predictions (bandwidth_mib_s against predicted_bandwidth_mib_s), the rows where
both are > 0, by the prediction's `job_month`. With ratio = predicted / measured: `n` rows,
`median_ratio` the median ratio, `median_abs_log10_error` the median |log10(ratio)|,
`within_2x_share` the share with 0.5 <= ratio <= 2 (exact medians, Spark `percentile`).
Partitioned by `month`; the fleet stage replaces the months new logs touch.
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="fleet_drift",
    layer="gold",
    struct=T.StructType(
        [
            F("model_name", T.StringType(), False),
            F("model_version", T.StringType(), False),
            F("month", T.StringType(), False),
            F("n", T.LongType(), False),
            F("median_ratio", T.DoubleType(), False),
            F("median_abs_log10_error", T.DoubleType(), False),
            F("within_2x_share", T.DoubleType(), False),
            F("updated_at", T.TimestampType(), False),
        ]
    ),
    keys=("model_name", "model_version", "month"),
    partition_by=("month",),
    merge_on=("month", "model_name", "model_version"),
    zorder_by=("model_name",),
    expectations=(
        Expectation("not_null", "model_name"),
        Expectation("not_null", "model_version"),
        Expectation("not_null", "month"),
        Expectation("compound_unique", ("model_name", "model_version", "month")),
        Expectation("between", "n", {"min": 1}),
        Expectation("between", "median_ratio", {"min": 0}),
        Expectation("between", "median_abs_log10_error", {"min": 0}),
        Expectation("between", "within_2x_share", {"min": 0, "max": 1}),
        Expectation("not_null", "updated_at"),
    ),
    doc=__doc__,
)
