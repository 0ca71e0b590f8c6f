"""gold/regressions — one row per (job, metric) a regression-watch rule flagged (`jobs/watch.py`).

`value` is the job's metric, `baseline` the level the rule compared against (geometric mean or
median of the baseline runs), `change` = value / baseline - 1. `rule` (sma, robust_z, cusum, glr:
`features/regressions.py`) is the first rule of conf `watch.rules` that fired on the job,
`threshold_name` its setting (e.g. `watch.glr.h`), `threshold` its value and `score` the
rule's statistic (relative change, z-score, cumulative sum or GLR window statistic). `since` is
the start of the first run of the change. The baseline came from `baseline_runs` runs of the
same application started from `baseline_first` to `baseline_last`. Weather: `weather_peers`
other applications on the same file system ran within conf `watch.weather_window_h` hours,
`weather_dropped` of them dropped too; `weather` is true when enough did (the file system rather
than the application).

Rewritten whole by each run of the stage that has new jobs: alarms are a function of the whole
history (and of the settings), and a row's weather can change as peers' runs of the same
window arrive; a re-run without new jobs writes nothing.
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
SPEC = TableSpec(
    name="regressions",
    layer="gold",
    struct=T.StructType(
        [
            F("app", T.StringType(), False),
            F("start", T.TimestampType(), False),
            F("log_id", T.StringType(), True),
            F("metric", T.StringType(), False),
            F("value", T.DoubleType(), False),
            F("baseline", T.DoubleType(), False),
            F("change", T.DoubleType(), False),
            F("rule", T.StringType(), False),
            F("threshold_name", T.StringType(), False),
            F("threshold", T.DoubleType(), False),
            F("score", T.DoubleType(), True),
            F("since", T.TimestampType(), True),
            F("baseline_runs", T.LongType(), False),
            F("baseline_first", T.TimestampType(), False),
            F("baseline_last", T.TimestampType(), False),
            F("fs", T.StringType(), True),
            F("weather", T.BooleanType(), True),
            F("weather_peers", T.LongType(), True),
            F("weather_dropped", T.LongType(), True),
        ]
    ),
    keys=("app", "start", "log_id", "metric"),
    partition_by=(),
    merge_on=("app", "start", "log_id", "metric"),
    zorder_by=("app", "start"),
    expectations=(
        Expectation("compound_unique", ("app", "start", "log_id", "metric")),
        Expectation("in_set", "rule", {"values": ["sma", "robust_z", "cusum", "glr"]}),
        Expectation("between", "baseline_runs", {"min": 1}),
    ),
    doc=__doc__,
)
