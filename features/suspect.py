"""Implausible counters: which logs' POSIX and STDIO counters cannot be true, and why.

A log is `suspect` when one of these holds (thresholds: conf `suspect:`, `SuspectConf`):

- rate: a rank moved more bytes per second of the job's run time than one process can
  (`max_bytes_per_s_per_process`). A rank's bytes are POSIX's and STDIO's BYTES_READ +
  BYTES_WRITTEN of the records it alone owns plus its 1/nprocs share of the shared records
  (rank -1, whose counters sum every rank's): a lower bound of the busiest rank's bytes. The
  time is the run time plus `time_slack_s`, an upper bound of the wall time the process had.
  The rate is therefore a lower bound of the true one, so a flag does not depend on how the
  bytes were spread. The run time is the denominator, not the process's I/O time: I/O time
  counters are sums of call durations that a buffered STDIO write (a memory copy), threads and
  the timer make short or long, so a rate over them flags honest jobs;
- negative: a byte or operation count (BYTES_READ, BYTES_WRITTEN, READS, WRITES, OPENS) below
  -1, or a time counter (F_READ_TIME, F_WRITE_TIME, F_META_TIME) below -`time_slack_s`.
  darshan-parser's documentation (darshan-util.rst, "darshan-parser output") says a counter
  of -1 means Darshan could not collect it and is to be ignored, so -1 is not flagged;
  POSIX_MMAPS is not checked at all: darshan-runtime sets it to -1 when mmap is not wrapped
  (darshan-posix.c, `posix_track_new_file_record`) and runtimes before 3.2 summed those -1s
  over the ranks of a shared record (-4 in the 3.1 test logs). A time a hair below zero
  (-2.1e-304 in Darshan's ppc64 test logs) is noise, not a time, and `job_features` counts it 0;
- overflowed: one of those counts at or above `max_counter` (2^62 by default: a counter that
  wrapped past 2^63, or garbage bits read as one);
- late: an I/O timestamp (F_*_START/END_TIMESTAMP, seconds since the job started) later than
  the run time plus `time_slack_s`. I/O time sums longer than the run are not flagged: threads
  of one process add up their concurrent calls' durations.

Each reason names the counter (or the rate's parts), the value and the limit; a log's reasons
are joined with "; ". The counters `features/job_features.py` sums are these modules' (MPI-IO
bytes reach POSIX), so the check covers every byte of a job's throughput.
"""

from __future__ import annotations

import pyspark.sql.functions as F
from pyspark.sql import DataFrame

COUNTS = ("BYTES_READ", "BYTES_WRITTEN", "READS", "WRITES", "OPENS")
TIMES = ("F_READ_TIME", "F_WRITE_TIME", "F_META_TIME")
STAMPS = tuple(
    f"F_{op}_{edge}_TIMESTAMP"
    for op in ("OPEN", "READ", "WRITE", "CLOSE")
    for edge in ("START", "END")
)
MODULES = ("POSIX", "STDIO")


def sane(col, max_counter: int):
    """A count counter as the job's sums take it: a negative (unrecorded or wrong) or overflowed
    value counts 0."""
    c = F.coalesce(col, F.lit(0))
    return F.when((c >= 0) & (c < F.lit(max_counter)), c).otherwise(F.lit(0))


def _counter_checks(df: DataFrame, m: str, s) -> DataFrame:
    """Per log of module table `df` (module `m`): the reasons its counters give, as an array."""
    aggs, reasons = [], []
    for c in (f"{m}_{n}" for n in COUNTS):
        aggs += [F.min(c).alias(f"min_{c}"), F.max(c).alias(f"max_{c}")]
        reasons.append(
            F.when(
                F.col(f"min_{c}") < -1,
                F.format_string(
                    f"{c} = %d is negative (a count cannot be, and -1 alone means not recorded)",
                    F.col(f"min_{c}"),
                ),
            )
        )
        reasons.append(
            F.when(
                F.col(f"max_{c}") >= F.lit(s.max_counter),
                F.format_string(
                    f"{c} = %d is at or above suspect.max_counter = {s.max_counter} (overflowed)",
                    F.col(f"max_{c}"),
                ),
            )
        )
    for c in (f"{m}_{n}" for n in TIMES):
        aggs.append(F.min(c).alias(f"min_{c}"))
        reasons.append(
            F.when(
                F.col(f"min_{c}") < -s.time_slack_s,
                F.format_string(
                    f"{c} = %.6g s is negative (below -suspect.time_slack_s = -{s.time_slack_s:g} s)",
                    F.col(f"min_{c}"),
                ),
            )
        )
    stamps = [f"{m}_{n}" for n in STAMPS if f"{m}_{n}" in df.columns]
    aggs.append(F.max(F.greatest(*[F.col(c) for c in stamps])).alias("last"))
    late_name = F.coalesce(*[F.when(F.col(f"max_{c}") == F.col("last"), F.lit(c)) for c in stamps])
    aggs += [F.max(c).alias(f"max_{c}") for c in stamps]
    g = df.groupBy("log_id").agg(*aggs)
    reasons_col = F.filter(F.array(*reasons), lambda x: x.isNotNull())
    return g.select(
        "log_id", reasons_col.alias("reasons"), F.col("last"), late_name.alias("late_name")
    )


def _rank_bytes(tables: dict[str, DataFrame], s) -> DataFrame:
    """Per log: the busiest rank's bytes (own records + 1/nprocs of the shared ones' bytes) and that rank."""
    parts = [
        tables[m.lower()].select(
            "log_id",
            "rank",
            (
                sane(F.col(f"{m}_BYTES_READ"), s.max_counter)
                + sane(F.col(f"{m}_BYTES_WRITTEN"), s.max_counter)
            )
            .cast("double")
            .alias("b"),
        )
        for m in MODULES
    ]
    both = parts[0].unionByName(parts[1])
    own = (
        both.where("rank >= 0")
        .groupBy("log_id", "rank")
        .agg(F.sum("b").alias("b"))
        .groupBy("log_id")
        .agg(  # of ranks moving as many bytes, the lowest (not whichever row came first)
            F.max_by("rank", F.struct("b", (-F.col("rank")).alias("r"))).alias("busiest_rank"),
            F.max("b").alias("own_bytes"),
        )
    )
    shared = both.where("rank < 0").groupBy("log_id").agg(F.sum("b").alias("shared_bytes"))
    return own.join(shared, "log_id", "full")


def flags(tables: dict[str, DataFrame], s) -> DataFrame:
    """log_id, suspect, suspect_reason for every log of `tables["jobs"]` (bronze jobs, posix, stdio);
    `s`: conf `suspect:`. `suspect_reason` is null when the log is not suspect."""
    jobs = tables["jobs"].select("log_id", "nprocs", "run_time_s")
    per_rank = F.coalesce(F.col("own_bytes"), F.lit(0.0)) + F.coalesce(
        F.col("shared_bytes"), F.lit(0.0)
    ) / F.greatest(F.col("nprocs"), F.lit(1))
    wall = F.greatest(F.coalesce(F.col("run_time_s"), F.lit(0.0)), F.lit(0.0)) + F.lit(
        s.time_slack_s
    )
    rate = F.when(wall > 0, per_rank / wall)
    df = jobs.join(_rank_bytes(tables, s), "log_id", "left")
    reasons = [
        F.when(
            rate > F.lit(float(s.max_bytes_per_s_per_process)),
            F.format_string(
                "rate: rank %s moved %.4g bytes (POSIX + STDIO BYTES_READ + BYTES_WRITTEN, its own files "
                "and its 1/%d share of shared ones) in a run of %.6g s: %.4g B/s per process is above "
                f"suspect.max_bytes_per_s_per_process = {s.max_bytes_per_s_per_process}",
                F.coalesce(F.col("busiest_rank").cast("string"), F.lit("any")),
                per_rank,
                F.col("nprocs"),
                F.col("run_time_s"),
                rate,
            ),
        )
    ]
    for m in MODULES:
        checks = _counter_checks(tables[m.lower()], m, s).select(
            "log_id",
            F.col("reasons").alias(f"r_{m}"),
            F.col("last").alias(f"last_{m}"),
            F.col("late_name").alias(f"late_{m}"),
        )
        df = df.join(checks, "log_id", "left")
        reasons.append(
            F.when(
                F.col(f"last_{m}") > F.col("run_time_s") + F.lit(s.time_slack_s),
                F.format_string(
                    "%s = %.6g s is after the run's end (run time %.6g s + suspect.time_slack_s = "
                    f"{s.time_slack_s:g} s)",
                    F.col(f"late_{m}"),
                    F.col(f"last_{m}"),
                    F.col("run_time_s"),
                ),
            )
        )
    every = F.concat(
        F.filter(F.array(*reasons), lambda x: x.isNotNull()),
        *[F.coalesce(F.col(f"r_{m}"), F.array().cast("array<string>")) for m in MODULES],
    )
    text = F.array_join(every, "; ")
    return df.select(
        "log_id",
        (F.size(every) > 0).alias("suspect"),
        F.when(F.size(every) > 0, text).alias("suspect_reason"),
    )


def plausible(job_features: DataFrame) -> DataFrame:
    """The rows of silver/job_features (or a frame with its `suspect` column) not flagged suspect; rows
    written before the flag existed (null) count as plausible."""
    if "suspect" not in job_features.columns:
        return job_features
    return job_features.where(~F.coalesce(F.col("suspect"), F.lit(False)))


def suspect_ids(job_features: DataFrame) -> DataFrame:
    """log_id of the suspect rows of silver/job_features."""
    if "suspect" not in job_features.columns:
        return job_features.select("log_id").limit(0)
    return job_features.where(F.coalesce(F.col("suspect"), F.lit(False))).select("log_id")
