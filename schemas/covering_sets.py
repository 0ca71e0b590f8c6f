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
  otherwise.
- `time_source`: where the job's pure I/O time comes from: `dxt` | `recorder` (the traced ops:
  exact), `heatmap` (no traced ops, HEATMAP present: the members' counter spans cut to the union of
  the log's non-empty HEATMAP bins, an upper bound) or `counters` (neither: the counter spans
  whole, an upper bound).
- `exact`: true when `pure_io_time_s` is the measure of the traced ops (`dxt`, `recorder`);
  false when it is an upper bound (`heatmap`, `counters`).
- `pure_io_time_min_s`: a lower bound on the pure I/O time: the slowest process's read and write
  time from the POSIX, MPI-IO and STDIO counters (`slowest_process_s`, after darshan-util's
  per-rank I/O time), kept at most `pure_io_time_s`; equal to it when `exact`. A job's true pure I/O
  time lies in [`pure_io_time_min_s`, `pure_io_time_s`].
`cover_proven_minimum`, `n_untraced_items` and the last three columns are nullable only so older
tables evolve (their rows read null: covers computed before the column); the gates require them on
every new row.
A job with no interval (no read or write with a timestamp, or, with HEATMAP, none inside a
non-empty bin) has no row.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

INTERVAL_SOURCES = ("dxt", "recorder", "counters")
TIME_SOURCES = ("dxt", "recorder", "heatmap", "counters")

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
            F("time_source", T.StringType(), True),
            F("exact", T.BooleanType(), True),
            F("pure_io_time_min_s", T.DoubleType(), True),
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
        Expectation("not_null", "time_source"),
        Expectation("in_set", "time_source", {"values": list(TIME_SOURCES)}),
        Expectation("not_null", "exact"),
        Expectation("not_null", "pure_io_time_min_s"),
        Expectation("between", "pure_io_time_min_s", {"min": 0}),
    ),
    doc=__doc__,
)
