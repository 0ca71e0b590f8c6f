"""gold/fleet_tag_cost — one row per (month, tag, application, user): the cost ledger of each
bottleneck tag (`jobs/fleet.py`, `features/fleet.py`; definitions in docs/fleet.md).

`tag` and its `code` come from silver/bottleneck_tags and `schemas.bottleneck_tags.CATALOG`
(`no_issue` left out); `app` is the watch's key (as in gold/fleet_app_month), `uid` the job's
user (null when unknown), `month` the job's `job_month`. `jobs` counts the jobs the tag fired on
(suspect ones included); `io_core_hours` is the sum of those jobs' I/O core-hours and
`core_hours` of their core-hours (suspect jobs add no I/O core-hours). A job counts in every tag
that fired on it, so tags' sums overlap: never add them across tags.
`recoverable_io_core_hours` is an ESTIMATE: the sum over those jobs of io_core_hours * (1 - 1/s),
s the largest predicted_speedup >= 1 of the job's `what_if` rows in gold/tuning_advice (a
model's prediction, not a measurement) or, for a job without one, the largest precedent_speedup
>= 1 of its advice rows (what other runs of the same application measured with the advised
setting, `features/precedents.py`); null when none of the jobs has either, and then
`recoverable_source` is null too; else it says which: `what_if`, `precedent`, or
`what_if+precedent` when the row's jobs used both.
Partitioned by `month`; the fleet stage replaces the months new logs touch.
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
RECOVERABLE_SOURCES = ("what_if", "precedent", "what_if+precedent")
SPEC = TableSpec(
    name="fleet_tag_cost",
    layer="gold",
    struct=T.StructType(
        [
            F("month", T.StringType(), False),
            F("tag", T.StringType(), False),
            F("code", T.StringType(), True),
            F("app", T.StringType(), False),
            F("uid", T.LongType(), True),
            F("jobs", T.LongType(), False),
            F("io_core_hours", T.DoubleType(), False),
            F("core_hours", T.DoubleType(), True),
            F("recoverable_io_core_hours", T.DoubleType(), True),
            F("recoverable_source", T.StringType(), True),
            F("updated_at", T.TimestampType(), False),
        ]
    ),
    keys=("month", "tag", "app", "uid"),
    partition_by=("month",),
    merge_on=("month", "tag", "app", "uid"),
    zorder_by=("tag", "app"),
    expectations=(
        Expectation("not_null", "month"),
        Expectation("not_null", "tag"),
        Expectation("not_null", "app"),
        Expectation("compound_unique", ("month", "tag", "app", "uid")),
        Expectation("between", "jobs", {"min": 1}),
        Expectation("between", "io_core_hours", {"min": 0}),
        Expectation("between", "core_hours", {"min": 0}),
        Expectation("between", "recoverable_io_core_hours", {"min": 0}),
        Expectation("in_set", "recoverable_source", {"values": list(RECOVERABLE_SOURCES)}),
        Expectation("not_null", "updated_at"),
    ),
    doc=__doc__,
)
