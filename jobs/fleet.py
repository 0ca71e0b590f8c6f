"""fleet: the lake's fleet marts (issue 40) -> gold/fleet_app_month, fleet_tag_cost, fleet_fs_day,
fleet_health, fleet_drift, read by `iolake fleet` without Spark.

Reads:  silver/job_features (the new logs, then whole months), silver/file_features,
        silver/bottleneck_tags, gold/app_runs, gold/regressions, gold/tuning_advice,
        gold/job_bandwidth_predictions, gold/bandwidth_predictions (the touched months), and for
        the lake's health bronze/logs, ops/runs, silver/covering_sets, ops/empty_logs and
        gold/fleet_health (which nights it holds).
Writes: the five marts, each with mode `replace`: the partitions (months) the new logs touch are
        rewritten whole from the inputs' rows of those months, in one commit each (Delta
        `replaceWhere`); every other month stays as it is. Then ops/fleet_done, insert-only: the
        new logs, counted.
Logic:  `features/fleet.py` (definitions, formulas and limits: docs/fleet.md).
Incremental: the logs of silver/job_features that ops/fleet_done lacks (`new_logs`); none ->
        nothing is written. Touched months: the new logs' job_months (fleet_app_month,
        fleet_tag_cost, fleet_drift; fleet_fs_day by the start day's month). fleet_health is
        replaced per night, not per month: the new logs' ingest nights and every night of the
        ledger from the newest night it holds on (a night of quarantined logs only). A month's
        rows depend on its own
        jobs (and on gold/regressions, tuning_advice and predictions as they stand when the month
        is recomputed: a later change to those for an untouched month shows after that month is
        touched again, or after ops/fleet_done is deleted).
"""

from __future__ import annotations

import datetime as dt
import sys
import time

import pyspark.sql.functions as F

from features import fleet, regressions
from iolake.cli import entry_points
from schemas.bottleneck_tags import CATALOG

JF, FF, TAGS, RUNS_APP, REGS, ADVICE = (
    "silver/job_features",
    "silver/file_features",
    "silver/bottleneck_tags",
    "gold/app_runs",
    "gold/regressions",
    "gold/tuning_advice",
)
JOB_PRED, FILE_PRED = "gold/job_bandwidth_predictions", "gold/bandwidth_predictions"
LOGS, OPS_RUNS, COVERING, EMPTY = (
    "bronze/logs",
    "ops/runs",
    "silver/covering_sets",
    "ops/empty_logs",
)
APP_MONTH, TAG_COST, FS_DAY, HEALTH, DRIFT, DONE = (
    "gold/fleet_app_month",
    "gold/fleet_tag_cost",
    "gold/fleet_fs_day",
    "gold/fleet_health",
    "gold/fleet_drift",
    "ops/fleet_done",
)
SUMMARY = ("months", "nights", "apps", "tag_rows", "fs_days", "drift_rows")
# the stage that writes each table of the health's lag map (ops/empty_logs names them)
LAG_STAGES = {
    "silver/job_features": "features",
    "silver/covering_sets": "covering",
    "silver/bottleneck_tags": "tags",
    "gold/app_runs": "watch",
}


def _in_months(df, months: list[str], column: str = "job_month"):
    return df.where(F.col(column).isin(months))


def execute(ctx) -> dict:
    conf, echo = ctx.conf, ctx.echo
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    new = ctx.read(JF).select("log_id", "job_month").cache()
    months = sorted(r[0] for r in new.select("job_month").distinct().collect())
    echo(f"[fleet] {ctx.n_todo:,} new logs touch {len(months):,} months: {_span(months)}")

    jf = _in_months(ctx.read(JF, whole=True), months).cache()
    ff = _in_months(ctx.read(FF, whole=True), months)
    keys = _app_keys(ctx, jf, ff, months)
    jobs = fleet.fleet_jobs(jf, keys).cache()
    tags = _in_months(ctx.read(TAGS, whole=True), months)
    regs = ctx.read(REGS, whole=True)
    has_user = "uid" in conf.watch.key_parts

    counts = {}
    job_pred = _in_months(ctx.read(JOB_PRED, whole=True), months)  # efficiency and drift
    efficiency = fleet.job_efficiency(job_pred)
    app_month = fleet.app_month(jobs, tags, regs, has_user, now, efficiency)
    counts["apps"] = _replace(ctx, APP_MONTH, app_month, months)
    advice = _in_months(ctx.read(ADVICE, whole=True), months)
    codes = {tag: t.code for tag, t in CATALOG.items()}
    counts["tag_rows"] = _replace(
        ctx, TAG_COST, fleet.tag_cost(jobs, tags, advice, codes, now), months
    )
    counts["fs_days"] = _replace(ctx, FS_DAY, fleet.fs_day(jf, ff, now), months)
    drift = fleet.drift(job_pred, _in_months(ctx.read(FILE_PRED, whole=True), months), now)
    counts["drift_rows"] = _replace(ctx, DRIFT, drift, months)
    echo(
        f"[fleet] {counts['apps']:,} application-months, {counts['tag_rows']:,} tag-cost rows, "
        f"{counts['fs_days']:,} file-system days, {counts['drift_rows']:,} drift rows"
    )

    _, n_nights = _health(ctx, new, now)
    ctx.write(DONE, new.withColumn("done_at", F.lit(now).cast("timestamp")))
    for df in (new, jf, jobs):
        df.unpersist()
    return {
        "logs": ctx.n_todo,
        "months": len(months),
        "nights": n_nights,
        **counts,
    }


def _span(months: list[str]) -> str:
    if not months:
        return "none"
    return months[0] if len(months) == 1 else f"{months[0]} .. {months[-1]}"


def _app_keys(ctx, jf, ff, months):
    """(log_id, app): gold/app_runs' key; for suspect jobs (no app_runs row) the watch's key
    computed by the same function (`features.regressions.app_runs`) as it would have been."""
    runs = _in_months(ctx.read(RUNS_APP, whole=True), months).select("log_id", "app")
    sus = jf.where(F.coalesce(F.col("suspect"), F.lit(False)))
    sus_keys = regressions.app_runs(
        sus, ff.join(sus.select("log_id"), "log_id", "left_semi"), ctx.conf.watch
    ).select("log_id", "app")
    return runs.unionByName(sus_keys.join(runs, "log_id", "left_anti"))


def _replace(ctx, table: str, df, months: list[str], only: dict | None = None) -> int:
    """Rewrite `months`' partitions of `table` (their rows `only` names, when given) with `df`;
    the count. Echoes how long computing the rows took (the commit echoes its own times)."""
    t0 = time.monotonic()
    df = df.cache()
    n = df.count()
    ctx.echo(f"[fleet] {table}: {n:,} rows computed in {time.monotonic() - t0:.1f} s")
    ctx.write(table, df, mode="replace", months=months, only=only)
    df.unpersist()
    return n


def _health(ctx, new, now) -> tuple[list, int]:
    """fleet_health for the nights (ingest dates) of the new logs, and for every night of the
    ledger from the newest night the table holds on (nights of quarantined logs only have no new
    log in silver/job_features); returns those nights and the rows written. Only those nights'
    rows are replaced, and the tables that say whether a night's logs are held are read in the
    job_months of that night's logs only: a drop costs its nights, not its months."""
    logs = ctx.read(LOGS, whole=True)
    night = F.to_date("ingested_at")
    touched = logs.join(new.select("log_id"), "log_id", "left_semi").select(night.alias("night"))
    newest = ctx.read(HEALTH, whole=True).agg(F.max("night")).first()[0]
    since = logs if newest is None else logs.where(night >= F.lit(newest))
    touched = touched.unionByName(since.select(night.alias("night")))
    nights = sorted(r[0] for r in touched.distinct().collect())
    if not nights:
        return nights, 0
    logs_n = logs.where(night.isin(nights)).cache()
    job_months = sorted(
        r[0] for r in logs_n.select("job_month").distinct().collect() if r[0] is not None
    )
    ids = logs_n.select("log_id")
    jf = (
        _in_months(ctx.read(JF, whole=True), job_months)
        .join(ids, "log_id", "left_semi")
        .select("log_id", "suspect")
    )
    runs = ctx.read(OPS_RUNS, whole=True).where(F.to_date("started").isin(nights))
    empty = ctx.read(EMPTY, whole=True) if ctx.exists(EMPTY) else None
    held = {}
    for table, stage in LAG_STAGES.items():
        df = (
            jf.select("log_id")
            if table == JF
            else _in_months(ctx.read(table, whole=True), job_months).select("log_id")
        )
        if empty is not None:
            skipped = empty.where((F.col("stage") == stage) & (F.col("done_table") == table))
            df = df.unionByName(skipped.select("log_id"))
        held[table] = df.join(ids, "log_id", "left_semi")
    months = sorted({f"{d:%Y-%m}" for d in nights})
    rows = fleet.health(logs_n, jf, runs, held, now)
    n = _replace(ctx, HEALTH, rows, months, only={"night": [d.isoformat() for d in nights]})
    logs_n.unpersist()
    ctx.echo(f"[fleet] lake health: {n:,} nights rewritten ({_span([str(d) for d in nights])})")
    return nights, n


run, main = entry_points("fleet")


if __name__ == "__main__":
    sys.exit(main())
