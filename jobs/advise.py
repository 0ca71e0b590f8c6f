"""advise: what to change in each job, by how much it should help, and the evidence -> gold/tuning_advice.

Reads:  silver/file_features, silver/job_features (whole: DCA-IO's run history, summed up in
        Spark before the jobs' earliest start, the measured per-tier bandwidths, the precedents'
        settings; the jobs to advise and the months they are in: their files, tags and jobs),
        silver/bottleneck_tags (those months), gold/tuning_advice (what was advised already),
        gold/app_runs (whole, then only the runs of the advised jobs' applications: their
        precedents, features/precedents.py); `models:/iolake-bandwidth@ALIAS` and
        `models:/iolake-placement@ALIAS` (ALIAS: `models.alias`).
Writes: gold/tuning_advice, insert-only: every job not yet advised with the bandwidth champion's
        current version gets its rows once (anti-join on (log_id, advised_with)); a re-run adds
        nothing; a newly promoted version advises again the jobs of the lake's newest
        `advise.readvise_months` months (every job with 0), and older jobs keep their last advice.
        Which jobs those are is looked for in the months committed since the last run only (its
        mark, the table property `iolake.newLogs.advise`: `months_to_look_in`).
Suspect logs (silver/job_features.suspect): still advised (tags, what-if), but their throughput
        is left out of the run history stripe advice reads and of the measured per-tier bandwidths.
Logic:  features/advice.py (assembly), features/what_if.py (the model-based what-if, run on the
        executors), features/stripe_advice.py (DCA-IO), features/precedents.py (what other runs of
        the same application measured with the advised setting), features/site.py (the commands, from the site
        profile, conf `site:`); rows name their model's provenance (models/provenance.py). Settings:
        conf `advise:`. Without a champion the what-if and the gains are skipped; stripe and tag
        advice still come.
"""

from __future__ import annotations

import sys
import time

from iolake.cli import entry_points

FF, JF, TAGS, OUT, RUNS = (
    "silver/file_features",
    "silver/job_features",
    "silver/bottleneck_tags",
    "gold/tuning_advice",
    "gold/app_runs",
)
SUMMARY = ("jobs", "what_if", "stripe", "tag", "suspect")


def champions(conf, echo=print):
    """(bandwidth ModelVersion or None, placement ModelVersion or None), echoing what is missing."""
    from models import tracking
    from models.registry import ModelAliasMissing, version_by_alias

    tracking.configure(conf)
    out = []
    for name in (conf.models.bandwidth_model, conf.models.placement_model):
        try:
            out.append(version_by_alias(name, conf.models.alias))
        except ModelAliasMissing as e:
            echo(f"[advise] {e}: no what-if from it")
            out.append(None)
    return out


def say_provenance(conf, versions, echo=print) -> None:
    """One line per champion: what it was trained on (`models/provenance.py`), and the site profile."""
    from models import provenance

    for mv in versions:
        if mv is not None:
            p = provenance.of_version(mv, conf.models.alias)
            echo(f"[advise] {p.label()}: {p.note()}")
    echo(f"[advise] commands from the site profile {conf.site.name!r} (conf site.tiers)")


def todo_jobs(
    jobs, advice, advised_with: str, readvise_months: int, echo=print, newest: list | None = None
):
    """The jobs (log_id, job_month) of `jobs` (silver/job_features) to advise with the bandwidth
    champion `advised_with`: those with no rows of it in `advice` (gold/tuning_advice). A job an
    earlier champion advised is among them only in the lake's newest `readvise_months` months
    (0: in every month): a promotion re-advises the jobs people still look at, not the lake, and
    an older job keeps its newest pass (what `iolake report` shows). A job never advised is always
    among them. `newest`: the lake's months, when `jobs` and `advice` are some months' rows only
    (`months_to_look_in`); by default the months of `jobs`."""
    import pyspark.sql.functions as F

    this = F.col("advised_with") == advised_with
    jobs = jobs.select("log_id", "job_month")
    if readvise_months <= 0:
        return jobs.join(advice.where(this).select("log_id").distinct(), "log_id", "left_anti")
    if newest is not None:
        months = [m for m in newest if m is not None][-readvise_months:]
    else:
        months = [
            r.job_month
            for r in jobs.select("job_month")
            .distinct()
            .orderBy(F.col("job_month").desc())
            .limit(readvise_months)
            .collect()
        ]
    if not months:
        return jobs.join(advice.where(this).select("log_id").distinct(), "log_id", "left_anti")
    cutoff = min(months)
    kept = (F.col("job_month") < cutoff) & (F.col("advised_with") != advised_with)
    if advice.where(kept).limit(1).count():
        echo(
            f"[advise] jobs before {cutoff} keep an earlier champion's advice "
            f"(advise.readvise_months {readvise_months}): only newer months are advised again"
        )
    # one scan of the advice: a job is done when this champion advised it, or when it is older
    # than the newest months and an earlier champion did
    done = advice.where(this | kept).select("log_id").distinct()
    return jobs.join(done, "log_id", "left_anti")


def months_to_look_in(ctx, advised_with: str, readvise: int) -> tuple[list | None, dict, list]:
    """(months, mark, lake's months): where jobs to advise can be (None: every month), the mark to
    set once they are advised, and silver/job_features' months (its Delta log's partition values).

    As an incremental stage finds its new logs (`iolake.lake.changes`, decision 0050): the mark on
    gold/tuning_advice (`iolake.newLogs.advise`) holds the versions of silver/job_features and
    gold/tuning_advice the last successful run started from and the champion it advised with; a
    job can need advice only in a month of a job committed since, or of advice rows removed since.
    A new champion also re-advises the lake's newest `advise.readvise_months` months (every month
    with 0). See docs/decisions/0051-advise-reads-a-night-as-a-night.md."""
    from iolake.lake import changes
    from iolake.lake.delta import partition_months
    from iolake.runner import PRUNE_MONTHS_MAX
    from schemas import OPS

    spark, root = ctx.spark, ctx.conf.lake.root
    jf, out = ctx.spec(JF, "input"), ctx.spec(OUT, "input")
    old = changes.read_mark(spark, out, root, "advise")
    months, mark = changes.months_to_check(
        spark, jf, out, OPS["empty_logs"], root, "advise", PRUNE_MONTHS_MAX, old=old
    )
    mark["advised_with"] = advised_with
    lake_months = partition_months(spark, jf, root)
    if months is not None and (old or {}).get("advised_with") != advised_with:
        newest = [m for m in lake_months if m is not None][-readvise:]
        months = None if readvise <= 0 else sorted(set(months) | set(newest))
    return months, mark, lake_months


def execute(ctx) -> dict:
    from features import advice, suspect
    from iolake.lake.delta import month_filter, months_text
    from iolake.runner import set_mark

    conf, spark = ctx.conf, ctx.spark
    none = {"jobs": 0, "what_if": 0, "stripe": 0, "tag": 0, "suspect": 0}
    if not ctx.exists(JF):
        ctx.echo("[advise] no silver/job_features yet")
        return none
    bw_mv, pl_mv = champions(conf, ctx.echo)
    say_provenance(conf, [bw_mv, pl_mv], ctx.echo)
    advised_with = str(bw_mv.version) if bw_mv else "none"
    readvise = conf.advise.readvise_months
    months, mark, lake_months = months_to_look_in(ctx, advised_with, readvise)
    if months == []:  # nothing committed since the mark, the same champion: it still holds
        ctx.echo(f"[advise] every job already advised (advised_with {advised_with})")
        return none
    jobs, advised = ctx.read(JF), ctx.read(OUT)
    if months is not None:
        ctx.echo(
            f"[advise] jobs to advise looked for in {months_text(months)}: the months committed "
            "since its last run"
        )
        jobs, advised = jobs.where(month_filter(months)), advised.where(month_filter(months))
    started = time.perf_counter()
    todo = todo_jobs(jobs, advised, advised_with, readvise, ctx.echo, lake_months).cache()
    n = todo.count()
    if not n:
        todo.unpersist()
        set_mark(spark, conf, "advise", ctx.spec(OUT, "output"), mark)
        ctx.echo(f"[advise] every job already advised (advised_with {advised_with})")
        return none
    ctx.echo(f"[advise] {n:,} jobs to advise, found in {time.perf_counter() - started:.1f} s")
    # from here the jobs to advise are the stage's work, as an incremental stage's new logs are:
    # the night's files, tags and jobs are read as a night; the history reads say `whole`
    ctx.narrow(todo, n)
    # a suspect log's throughput (silver/job_features.suspect) is no evidence: not in DCA-IO's run
    # history, nor in the lake's measured per-tier bandwidths
    history = ctx.read(JF, whole=True)
    bad = suspect.suspect_ids(history).cache()
    n_bad = bad.count()
    rows = advice.assemble(
        spark,
        conf,
        todo,
        ctx.read(FF),
        ctx.read(TAGS),
        suspect.plausible(history),
        ctx.read(FF, whole=True).join(bad, "log_id", "left_anti"),
        bw_mv,
        pl_mv,
        ctx.read(RUNS, whole=True),  # empty before the watch ran: no precedents
        jobs_now=suspect.plausible(ctx.read(JF)),
        ff_now=ctx.read(FF).join(bad, "log_id", "left_anti"),
    )
    started = time.perf_counter()
    out = advice.finish(rows, advised_with).cache()
    counts = {r.kind: r["count"] for r in out.groupBy("kind").count().collect()}
    n_rows = sum(counts.values())
    ctx.echo(f"[advise] {n_rows:,} advice rows computed in {time.perf_counter() - started:.1f} s")
    if n_rows:
        ctx.write(OUT, out)
    out.unpersist()
    todo.unpersist()
    bad.unpersist()
    set_mark(spark, conf, "advise", ctx.spec(OUT, "output"), mark)
    ctx.echo(
        f"[advise] {n:,} jobs advised with bandwidth model v{advised_with}: "
        + ", ".join(f"{counts.get(k, 0):,} {k}" for k in ("what_if", "stripe", "tag", "none"))
        + (f"; {n_bad:,} suspect logs' throughput left out of the history" if n_bad else "")
    )
    return {
        "jobs": n,
        "what_if": counts.get("what_if", 0),
        "stripe": counts.get("stripe", 0),
        "tag": counts.get("tag", 0),
        "suspect": n_bad,
    }


run, main = entry_points("advise")


if __name__ == "__main__":
    sys.exit(main())
