"""silver/covering_sets — one row per (log, member) of the job's minimum I/O covering set.

A member is a (rank, file) pair; its intervals are its traced read/write ops' [start, end]
(DXT or Recorder) or, in a log without traced ops, one span from Darshan's READ/WRITE
START/END counters. The covering set is the fewest members whose intervals together equal the
union of all the job's intervals (sweep-line analysis: the SNTA'22 keynote, after Wang et al.'s
IOMiner; computed minimum rather than IOMiner's longest-interval greedy).
`features/covering_sets.py` documents how intervals are built and the cover chosen.

- `start_s`, `end_s`: the member's first start and last end (its ops may leave gaps between).
- `share_s`: the part of the union this member covers and no member before it (by start_s,
  end_s, rank, record_id) does; a log's shares sum to `pure_io_time_s`.
- `interval_source`: the job's, on each of its rows: `dxt` | `recorder` (traced read/write
  operations) or `counters` (Darshan's file-level READ/WRITE START/END timestamps).
- `n_intervals`: the job's members (candidates); `pure_io_time_s`: the measure of the union
  of their intervals; `cover_size`: members in the job's covering set (the same on each row).
- `cover_proven_minimum`: true when the search proved no smaller cover exists (always with one
  interval per member); false when a job too large for the exact search kept a greedy part.
- `n_untraced_items`: in a log with traced ops, the (rank, file) counter items whose file has
  no traced op (e.g. STDIO's `ior.json`: DXT does not trace STDIO), left out of the cover; 0
  otherwise. The last two columns are nullable only so older tables evolve (their rows read
  null); the gates require them on every new row.
A job with no interval (no read or write with a timestamp) has no row.
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
            F("cover_proven_minimum", T.BooleanType(), True),
            F("n_untraced_items", T.LongType(), True),
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
        Expectation("not_null", "cover_proven_minimum"),
        Expectation("not_null", "n_untraced_items"),
        Expectation("between", "n_untraced_items", {"min": 0}),
    ),
    doc=__doc__,
)
