"""silver/covering_sets — one row per (log, member) of the job's minimum I/O covering set.

The items of a job are its (rank, file) I/O intervals; the covering set is the fewest items
whose union equals the union of all of them (Wang et al., CCGrid'19, sweep-line analysis,
here computed minimum rather than IOMiner's longest-interval greedy).
`features/covering_sets.py` documents how items are built and the cover chosen.

- `start_s`, `end_s`: the member's interval, seconds since job start.
- `share_s`: the pure I/O time this member adds when the cover is swept in time order
  (end - max(start, previous member's end)); a log's shares sum to `pure_io_time_s`.
- `interval_source`: `dxt` | `recorder` (from the file's traced read/write operations) or
  `counters` (Darshan's file-level READ/WRITE START/END timestamps).
- `n_intervals`: the job's items; `pure_io_time_s`: the measure of their union;
  `cover_size`: members in the job's covering set (the same on each of its rows).
A job with no item (no read or write with a timestamp) has no row.
"""
from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

INTERVAL_SOURCES = ("dxt", "recorder", "counters")

F = T.StructField
SPEC = TableSpec(
    name="covering_sets",
    layer="silver",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("rank", T.LongType(), False),  # -1: a record Darshan reduced over all ranks
            F("record_id", T.LongType(), False),
            F("start_s", T.DoubleType(), False),
            F("end_s", T.DoubleType(), False),
            F("share_s", T.DoubleType(), False),
            F("interval_source", T.StringType(), False),
            F("n_intervals", T.LongType(), False),
            F("pure_io_time_s", T.DoubleType(), False),
            F("cover_size", T.LongType(), False),
        ]
    ),
    keys=("log_id", "record_id", "rank"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("not_null", "job_month"),
        Expectation("not_null", "record_id"),
        Expectation("between", "rank", {"min": -1}),
        Expectation("compound_unique", ("log_id", "record_id", "rank")),
        Expectation("between", "start_s", {"min": 0}),
        Expectation("between", "end_s", {"min": 0}),
        Expectation("between", "share_s", {"min": 0}),
        Expectation("in_set", "interval_source", {"values": list(INTERVAL_SOURCES)}),
        Expectation("between", "n_intervals", {"min": 1}),
        Expectation("between", "pure_io_time_s", {"min": 0}),
        Expectation("between", "cover_size", {"min": 1}),
    ),
    doc=__doc__,
)
