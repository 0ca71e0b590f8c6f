"""The fleet marts (issue 40): what the whole lake says, one pure Spark transform per gold table.

No I/O and no configuration read: the stage (`jobs/fleet.py`) reads the tables, restricts them to
the months a nightly drop touched and passes them in. Every transform ends with a `select` of its
table's schema (`schemas/fleet_*.py`). The definitions below are the ones docs/fleet.md gives,
with their limits.

- core-hours of a job = nprocs * run_time_s / 3600 (process-hours; one process per core).
- I/O core-hours of a job = min(read_time_s + write_time_s + meta_time_s, nprocs * run_time_s)
  / 3600 of
  silver/job_features: Darshan's per-record cumulative F_*_TIME counters (POSIX, STDIO where
  POSIX is absent), summed over ranks (darshan-util sums a shared record's times over its
  ranks: darshan-runtime's reduction of POSIX_F_READ_TIME etc., "cumulative time spent"), so
  process-hours inside I/O calls. MPI-IO time is not added: its calls end in POSIX (no double
  count), and a collective's wait outside POSIX is left out (a lower bound for MPI-IO jobs).
  Cut at the job's core-hours: concurrent calls of one process's threads on different files
  add up past its wall time (`io_core_hours_col`, decision 0032).
- a suspect job (silver/job_features.suspect) counts in runs and core-hours, never in throughput
  percentiles, I/O core-hours or bytes.
"""

from __future__ import annotations

import pyspark.sql.functions as F
from pyspark.sql import DataFrame

from schemas import GOLD
from schemas.bottleneck_tags import NO_ISSUE

NO_MOUNT = "(none)"
LAG_TABLES = (
    "silver/job_features",
    "silver/covering_sets",
    "silver/bottleneck_tags",
    "gold/app_runs",
)


def _ts(updated_at):
    return F.lit(updated_at).cast("timestamp")


def core_hours_col() -> F.Column:
    """nprocs * run_time_s / 3600: the job's process-hours (null when either is unknown)."""
    return F.col("nprocs") * F.col("run_time_s") / F.lit(3600.0)


def io_core_hours_col() -> F.Column:
    """min(read_time_s + write_time_s + meta_time_s, nprocs * run_time_s) / 3600, a missing time
    counting 0; null for a suspect job (its counters cannot be true).

    The clamp (decision 0032): Darshan keeps one record's calls from overlapping
    (DARSHAN_TIMER_INC_NO_OVERLAP, darshan-runtime/lib/darshan-common.h) but not calls on
    different records, and darshan-util sums a rank's records' times as they are
    (`rank_cumul_io_total_time`, darshan-util/darshan-logutils-accumulator.c). Threads of one
    process blocked at once on several files (pydarshan's dxt.darshan: one process, 8 threads
    each in open() of a named pipe for up to 1,462 s of a 1,469 s run) thus sum to more than
    the process lived. A job's processes cannot spend more process-seconds inside I/O calls
    than nprocs * run_time_s, so the excess is double counting, not I/O: it is cut. The
    sum stands when the run time is unknown or 0 (no bound to cut at)."""
    secs = sum(
        F.coalesce(F.col(c), F.lit(0.0)) for c in ("read_time_s", "write_time_s", "meta_time_s")
    )
    wall = F.col("nprocs") * F.col("run_time_s")
    bounded = F.when(wall > 0, F.least(secs, wall)).otherwise(secs)
    return F.when(~F.col("suspect"), bounded / F.lit(3600.0))


def fleet_jobs(job_features: DataFrame, app_keys: DataFrame) -> DataFrame:
    """One row per job with an application key: log_id, month, app, exe_name, uid, suspect,
    core_hours, io_core_hours (null when suspect), bytes_read / bytes_written / throughput_mib_s
    (null when suspect).

    `app_keys`: (log_id, app) — gold/app_runs' key, plus the same key computed for suspect jobs
    (which have no app_runs row). Jobs without a key (no start time) are left out."""
    ok = ~F.col("suspect")
    jf = job_features.withColumn("suspect", F.coalesce(F.col("suspect"), F.lit(False)))
    return jf.join(app_keys.select("log_id", "app"), "log_id", "inner").select(
        "log_id",
        F.col("job_month").alias("month"),
        "app",
        F.col("program").alias("exe_name"),
        "uid",
        "suspect",
        core_hours_col().alias("core_hours"),
        io_core_hours_col().alias("io_core_hours"),
        F.when(ok, F.col("bytes_read")).alias("bytes_read"),
        F.when(ok, F.col("bytes_written")).alias("bytes_written"),
        F.when(ok, F.col("throughput_mib_s")).alias("throughput_mib_s"),
    )


def fired_tags(bottleneck_tags: DataFrame) -> DataFrame:
    """(log_id, tag) of the tags that fired: one row per pair, `no_issue` left out."""
    return bottleneck_tags.where(F.col("tag") != F.lit(NO_ISSUE)).select("log_id", "tag").distinct()


def job_efficiency(job_predictions: DataFrame) -> DataFrame:
    """(log_id, efficiency): each job's gold/job_bandwidth_predictions.efficiency (measured /
    the per-job model's prediction for its pattern on its file system) from the model in use for
    it: its newest scored row (latest scored_at, then the highest numeric version). Null when that
    model was not trained on this lake (the score stage leaves it null then)."""
    version = F.col("model_version").cast("long")
    if "efficiency" not in job_predictions.columns:  # a table scored before the column existed
        job_predictions = job_predictions.withColumn("efficiency", F.lit(None).cast("double"))
    return job_predictions.groupBy("log_id").agg(
        F.max_by("efficiency", F.struct("scored_at", version.alias("v"))).alias("efficiency")
    )


def app_month(
    jobs: DataFrame,
    bottleneck_tags: DataFrame,
    regressions: DataFrame,
    has_user: bool,
    updated_at,
    efficiency: DataFrame | None = None,
) -> DataFrame:
    """gold/fleet_app_month from `fleet_jobs` rows, silver/bottleneck_tags and gold/regressions.

    Per (app, month): runs = count of jobs; suspect_runs = count of suspect jobs; core_hours =
    sum nprocs*run_time_s/3600; io_core_hours = sum of the non-suspect jobs' I/O core-hours (0
    when none); io_share = io_core_hours / core_hours; bytes = sums over non-suspect jobs;
    throughput p10/p50/p90 = exact percentiles (linear interpolation between closest ranks, as
    numpy's default) of the non-suspect jobs' throughput_mib_s; tag_runs = {tag: jobs it fired
    on}; regressions = gold/regressions rows of the app whose start falls in the month (UTC).
    `has_user`: whether the key includes the user (conf `watch.key_parts`); uid is null if not.
    `efficiency` (`job_efficiency`: log_id, efficiency): efficiency_p50 = exact median of the
    non-suspect jobs' non-null efficiency, efficiency_runs = how many (null and 0 without it, or
    when the model in use was not trained on this lake).
    """
    agg = jobs.groupBy("app", "month").agg(
        F.count(F.lit(1)).alias("runs"),
        F.sum(F.col("suspect").cast("long")).alias("suspect_runs"),
        F.sum("core_hours").alias("core_hours"),
        F.coalesce(F.sum("io_core_hours"), F.lit(0.0)).alias("io_core_hours"),
        F.coalesce(F.sum("bytes_read"), F.lit(0)).cast("long").alias("bytes_read"),
        F.coalesce(F.sum("bytes_written"), F.lit(0)).cast("long").alias("bytes_written"),
        F.expr("percentile(throughput_mib_s, 0.1)").alias("throughput_p10_mib_s"),
        F.expr("percentile(throughput_mib_s, 0.5)").alias("throughput_p50_mib_s"),
        F.expr("percentile(throughput_mib_s, 0.9)").alias("throughput_p90_mib_s"),
        F.min("exe_name").alias("exe_name"),
        F.min("uid").alias("uid"),
    )
    tag_runs = (
        jobs.select("log_id", "app", "month")
        .join(fired_tags(bottleneck_tags), "log_id", "inner")
        .groupBy("app", "month", "tag")
        .agg(F.count(F.lit(1)).alias("n"))
        .groupBy("app", "month")
        .agg(F.map_from_entries(F.collect_list(F.struct("tag", "n"))).alias("tag_runs"))
    )
    regs = (
        regressions.select("app", F.date_format("start", "yyyy-MM").alias("month"))
        .groupBy("app", "month")
        .agg(F.count(F.lit(1)).alias("regressions"))
    )
    empty_map = F.create_map().cast("map<string,bigint>")
    eff_schema = "app string, month string, efficiency_p50 double, efficiency_runs long"
    eff = (
        jobs.where(~F.col("suspect"))
        .select("log_id", "app", "month")
        .join(efficiency.where(F.col("efficiency").isNotNull()), "log_id", "inner")
        .groupBy("app", "month")
        .agg(
            F.expr("percentile(efficiency, 0.5)").alias("efficiency_p50"),
            F.count(F.lit(1)).alias("efficiency_runs"),
        )
        if efficiency is not None
        else jobs.sparkSession.createDataFrame([], eff_schema)
    )
    out = (
        agg.join(tag_runs, ["app", "month"], "left")
        .join(regs, ["app", "month"], "left")
        .join(eff, ["app", "month"], "left")
        .select(
            "app",
            "month",
            "exe_name",
            (F.col("uid") if has_user else F.lit(None)).cast("long").alias("uid"),
            "runs",
            F.col("suspect_runs").cast("long").alias("suspect_runs"),
            "core_hours",
            "io_core_hours",
            F.when(F.col("core_hours") > 0, F.col("io_core_hours") / F.col("core_hours")).alias(
                "io_share"
            ),
            "bytes_read",
            "bytes_written",
            "throughput_p10_mib_s",
            "throughput_p50_mib_s",
            "throughput_p90_mib_s",
            F.coalesce(F.col("tag_runs"), empty_map).alias("tag_runs"),
            F.coalesce(F.col("regressions"), F.lit(0)).cast("long").alias("regressions"),
            F.col("efficiency_p50").cast("double").alias("efficiency_p50"),
            F.coalesce(F.col("efficiency_runs"), F.lit(0)).cast("long").alias("efficiency_runs"),
            _ts(updated_at).alias("updated_at"),
        )
    )
    return out.select(*GOLD["fleet_app_month"].columns)


def job_speedups(tuning_advice: DataFrame) -> DataFrame:
    """(log_id, speedup, source): per job, the largest predicted_speedup >= 1 of its `what_if` advice
    rows (over every model version that advised it), source `what_if` (a model's prediction); for a
    job without one, the largest precedent_speedup >= 1 of its advice rows (`features/precedents.py`:
    what other runs of the same application measured with the advised setting), source `precedent`.
    A table advised before the precedent columns existed gives `what_if` rows only."""
    s = F.col("predicted_speedup")
    model = (
        tuning_advice.where((F.col("kind") == "what_if") & s.isNotNull() & (s >= 1))
        .groupBy("log_id")
        .agg(F.max(s).alias("speedup"))
        .withColumn("source", F.lit("what_if"))
    )
    if "precedent_speedup" not in tuning_advice.columns:
        return model
    p = F.col("precedent_speedup")
    measured = (
        tuning_advice.where(p.isNotNull() & (p >= 1))
        .groupBy("log_id")
        .agg(F.max(p).alias("speedup"))
        .join(model.select("log_id"), "log_id", "left_anti")
        .withColumn("source", F.lit("precedent"))
    )
    return model.unionByName(measured)


def tag_cost(
    jobs: DataFrame,
    bottleneck_tags: DataFrame,
    tuning_advice: DataFrame,
    codes: dict[str, str],
    updated_at,
) -> DataFrame:
    """gold/fleet_tag_cost: per (month, tag, app, uid) the jobs a tag fired on and their cost.

    jobs = count of those jobs; io_core_hours = sum of their I/O core-hours (suspect jobs add 0);
    core_hours = sum of their core-hours; recoverable_io_core_hours = sum over those jobs with a
    speed-up s (`job_speedups`: a what-if's, else a precedent's) of io_core_hours * (1 - 1/s), null
    when none has one; `recoverable_source` the sources of the jobs that added to it (`what_if`,
    `precedent`, or `what_if+precedent` for both), null with it. A job counts in every tag that
    fired on it: tags' sums overlap. `codes`: tag -> catalog code (schemas.bottleneck_tags.CATALOG).
    """
    code_rows = [(t, c) for t, c in codes.items()]
    spark = jobs.sparkSession
    code_df = spark.createDataFrame(code_rows, "tag string, code string")
    recover = F.col("io_core_hours") * (F.lit(1.0) - F.lit(1.0) / F.col("speedup"))
    per_job = (
        jobs.join(fired_tags(bottleneck_tags), "log_id", "inner")
        .join(job_speedups(tuning_advice), "log_id", "left")
        .withColumn("recoverable", F.when(F.col("io_core_hours").isNotNull(), recover))
    )
    agg = per_job.groupBy("month", "tag", "app", "uid").agg(
        F.count(F.lit(1)).alias("jobs"),
        F.coalesce(F.sum("io_core_hours"), F.lit(0.0)).alias("io_core_hours"),
        F.sum("core_hours").alias("core_hours"),
        F.sum("recoverable").alias("recoverable_io_core_hours"),
        F.sort_array(  # descending: "what_if+precedent"
            F.collect_set(F.when(F.col("recoverable").isNotNull(), F.col("source"))), asc=False
        ).alias("sources"),
    )
    out = agg.join(F.broadcast(code_df), "tag", "left").select(
        "month",
        "tag",
        "code",
        "app",
        F.col("uid").cast("long").alias("uid"),
        "jobs",
        "io_core_hours",
        "core_hours",
        "recoverable_io_core_hours",
        F.when(F.size("sources") > 0, F.array_join("sources", "+")).alias("recoverable_source"),
        _ts(updated_at).alias("updated_at"),
    )
    return out.select(*GOLD["fleet_tag_cost"].columns)


def fs_day(job_features: DataFrame, file_features: DataFrame, updated_at) -> DataFrame:
    """gold/fleet_fs_day: per (start day, mount point) the jobs and their files' I/O.

    day = to_date(start_time) (UTC session); mount_point null -> '(none)'; fs_type = max of the
    files' fs_type; jobs = distinct logs; bytes_read, bytes_written, reads, writes, opens,
    meta_time_s summed over the files; io_time_s = sum of read + write + meta seconds of the files
    (a missing part counting 0). Jobs without a start time and suspect jobs are left out.
    """
    days = job_features.where(
        F.col("start_time").isNotNull() & ~F.coalesce(F.col("suspect"), F.lit(False))
    ).select("log_id", F.to_date("start_time").alias("day"))
    secs = sum(
        F.coalesce(F.col(c), F.lit(0.0)) for c in ("read_time_s", "write_time_s", "meta_time_s")
    )
    files = file_features.join(days, "log_id", "inner").select(
        "log_id",
        "day",
        F.coalesce(F.col("mount_point"), F.lit(NO_MOUNT)).alias("mount_point"),
        "fs_type",
        "bytes_read",
        "bytes_written",
        "reads",
        "writes",
        "opens",
        F.coalesce(F.col("meta_time_s"), F.lit(0.0)).alias("meta_time_s"),
        secs.alias("io_time_s"),
    )
    out = files.groupBy("day", "mount_point").agg(
        F.max("fs_type").alias("fs_type"),
        F.countDistinct("log_id").alias("jobs"),
        *[
            F.sum(c).cast("long").alias(c)
            for c in ("bytes_read", "bytes_written", "reads", "writes", "opens")
        ],
        F.sum("meta_time_s").alias("meta_time_s"),
        F.sum("io_time_s").alias("io_time_s"),
    )
    out = out.withColumn("updated_at", _ts(updated_at)).withColumn(
        "month", F.date_format("day", "yyyy-MM")
    )
    return out.select(*GOLD["fleet_fs_day"].columns)


def reason_clause(col: F.Column) -> F.Column:
    """A quarantine reason's first clause: the text before the first ':', ';' or '(', trimmed."""
    return F.trim(F.regexp_extract(F.coalesce(col, F.lit("(no reason)")), r"^([^:;(]*)", 1))


def health(
    logs: DataFrame,
    job_features: DataFrame,
    runs: DataFrame,
    held: dict[str, DataFrame],
    updated_at,
) -> DataFrame:
    """gold/fleet_health: one row per night (UTC date of bronze/logs.ingested_at) of `logs`.

    logs/ok/partial/quarantined: ledger rows by status; suspect: the night's logs flagged in
    silver/job_features; quarantine_reasons: {first clause of reason: count} of quarantined logs;
    runs/failed_runs/run_seconds: ops/runs started that date (status != 'succeeded' failed; sum
    of duration_s); lag: {table: the night's decoded (ok or partial) logs whose log_id `held`
    [table] (a frame of log_id) lacks}.
    """
    night = F.to_date("ingested_at")
    ledger = logs.select("log_id", "status", "reason", night.alias("night"))
    base = ledger.groupBy("night").agg(
        F.count(F.lit(1)).alias("logs"),
        *[
            F.sum((F.col("status") == s).cast("long")).alias(s)
            for s in ("ok", "partial", "quarantined")
        ],
    )
    suspect = (
        ledger.join(job_features.where(F.col("suspect")).select("log_id"), "log_id", "left_semi")
        .groupBy("night")
        .agg(F.count(F.lit(1)).alias("suspect"))
    )
    reasons = (
        ledger.where(F.col("status") == "quarantined")
        .groupBy("night", reason_clause(F.col("reason")).alias("clause"))
        .agg(F.count(F.lit(1)).alias("n"))
        .groupBy("night")
        .agg(
            F.map_from_entries(F.collect_list(F.struct("clause", "n"))).alias("quarantine_reasons")
        )
    )
    run_rows = (
        runs.select(F.to_date("started").alias("night"), "status", "duration_s")
        .groupBy("night")
        .agg(
            F.count(F.lit(1)).alias("runs"),
            F.sum((F.col("status") != "succeeded").cast("long")).alias("failed_runs"),
            F.sum("duration_s").alias("run_seconds"),
        )
    )
    decoded = ledger.where(F.col("status").isin("ok", "partial")).select("log_id", "night")
    out = (
        base.join(suspect, "night", "left")
        .join(reasons, "night", "left")
        .join(run_rows, "night", "left")
        .join(_lag(decoded, held), "night", "left")
    )
    empty_map = F.create_map().cast("map<string,bigint>")
    out = out.select(
        "night",
        "logs",
        *[
            F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c)
            for c in ("ok", "partial", "quarantined", "suspect")
        ],
        F.coalesce(F.col("quarantine_reasons"), empty_map).alias("quarantine_reasons"),
        F.coalesce(F.col("runs"), F.lit(0)).cast("long").alias("runs"),
        F.coalesce(F.col("failed_runs"), F.lit(0)).cast("long").alias("failed_runs"),
        "run_seconds",
        F.coalesce(F.col("lag"), empty_map).alias("lag"),
        _ts(updated_at).alias("updated_at"),
        F.date_format("night", "yyyy-MM").alias("month"),
    )
    return out.select(*GOLD["fleet_health"].columns)


def _lag(decoded: DataFrame, held: dict[str, DataFrame]) -> DataFrame:
    """(night, lag): per night, {table: decoded logs of the night that `held[table]` lacks}."""
    parts = []
    for table, ids in held.items():
        missing = F.when(F.col("held").isNull(), F.lit(1)).otherwise(F.lit(0))
        part = (
            decoded.join(
                ids.select("log_id").distinct().withColumn("held", F.lit(True)), "log_id", "left"
            )
            .groupBy("night")
            .agg(F.sum(missing).cast("long").alias("n"))
            .withColumn("table", F.lit(table))
        )
        parts.append(part)
    if not parts:
        return (
            decoded.select("night")
            .distinct()
            .withColumn("lag", F.create_map().cast("map<string,bigint>"))
        )
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    return rows.groupBy("night").agg(
        F.map_from_entries(F.collect_list(F.struct("table", "n"))).alias("lag")
    )


def drift(job_predictions: DataFrame, file_predictions: DataFrame, updated_at) -> DataFrame:
    """gold/fleet_drift: per (model_name, model_version, month = the row's job_month), over the
    prediction rows with measured and predicted both > 0 and ratio = predicted / measured:
    n, median_ratio, median_abs_log10_error = median |log10(ratio)|, within_2x_share = share
    of rows with 0.5 <= ratio <= 2 (exact medians)."""
    cols = ["model_name", "model_version", "job_month"]
    pairs = job_predictions.select(
        *cols,
        F.col("throughput_mib_s").alias("measured"),
        F.col("predicted_throughput_mib_s").alias("predicted"),
    ).unionByName(
        file_predictions.select(
            *cols,
            F.col("bandwidth_mib_s").alias("measured"),
            F.col("predicted_bandwidth_mib_s").alias("predicted"),
        )
    )
    ratio = (
        pairs.where((F.col("measured") > 0) & (F.col("predicted") > 0))
        .withColumn("ratio", F.col("predicted") / F.col("measured"))
        .withColumn("abs_log10", F.abs(F.log10("ratio")))
        .withColumn("within", F.col("ratio").between(0.5, 2.0).cast("double"))
    )
    out = (
        ratio.groupBy(*cols)
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.expr("percentile(ratio, 0.5)").alias("median_ratio"),
            F.expr("percentile(abs_log10, 0.5)").alias("median_abs_log10_error"),
            F.avg("within").alias("within_2x_share"),
        )
        .withColumnRenamed("job_month", "month")
        .withColumn("updated_at", _ts(updated_at))
    )
    return out.select(*GOLD["fleet_drift"].columns)
