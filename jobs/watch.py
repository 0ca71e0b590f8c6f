"""watch: silver/job_features -> gold/app_runs (incremental) -> gold/regressions (whole history).

Reads:  silver/job_features and silver/file_features (the new logs only), gold/app_runs (whole:
        every application's history), gold/regressions (whether it exists).
Writes: gold/app_runs, insert-only on (job_month, log_id): one row per job with its application
        key (conf `watch.key_parts`) and metrics; then gold/regressions, rewritten whole: the
        (job, metric) rows a rule flags over the whole history (alarms are causal — a job's flag
        depends on the runs up to it — but a row's weather can change as peers' runs arrive).
Logic:  `features/regressions.py` (the detectors, the same functions `iolake watch --history`
        runs on an external table). Thresholds: conf `watch:`; defaults measured on a year of
        Edison benchmark jobs by `python -m bench.watch_eval`.
Suspect logs (silver/job_features.suspect, features/suspect.py) get no app_runs row: their
        throughput cannot be true; the runner records them in ops/empty_logs, so they are not new
        work again.
Incremental: the logs of silver/job_features that gold/app_runs lacks; none -> nothing is
        written (a re-run adds no rows). The detectors run in the driver on the history
        (one row per job, a few numbers each: about 100 bytes a job).
"""

from __future__ import annotations

import sys

from features import regressions, suspect
from iolake.cli import entry_points

JF, FF, RUNS, OUT = (
    "silver/job_features",
    "silver/file_features",
    "gold/app_runs",
    "gold/regressions",
)
SUMMARY = ("runs", "apps", "regressions", "suspect")


def execute(ctx) -> dict:
    conf, echo = ctx.conf, ctx.echo
    jf = ctx.read(JF)
    n_suspect = suspect.suspect_ids(jf).count()  # their throughput is no run of the history
    new = regressions.app_runs(suspect.plausible(jf), ctx.read(FF), conf.watch).cache()
    n_new = new.count()
    left = f"; {n_suspect:,} suspect logs left out" if n_suspect else ""
    if n_new:
        ctx.write(RUNS, new)
    new.unpersist()
    if not n_new and ctx.exists(OUT):
        echo(f"[watch] no new job with a start time: regressions unchanged{left}")
        return {
            "logs": ctx.n_todo,
            "runs": 0,
            "apps": None,
            "regressions": None,
            "suspect": n_suspect,
        }
    history = ctx.read(RUNS, whole=True).select(*regressions.history_columns(conf.watch))
    pdf = history.toPandas()
    flagged = regressions.find_regressions_conf(pdf, conf.watch)
    out = regressions.regressions_frame(ctx.spark, flagged)
    ctx.write(OUT, out, mode="overwrite")
    apps = int(pdf["app"].nunique()) if len(pdf) else 0
    n_weather = int(flagged["weather"].fillna(False).astype(bool).sum()) if len(flagged) else 0
    echo(
        f"[watch] {n_new:,} new runs; {len(pdf):,} runs of {apps:,} applications; {len(flagged):,} regressions "
        f"({n_weather:,} with file-system weather){left}"
    )
    return {
        "logs": ctx.n_todo,
        "runs": n_new,
        "apps": apps,
        "regressions": len(flagged),
        "suspect": n_suspect,
    }


run, main = entry_points("watch")


if __name__ == "__main__":
    sys.exit(main())
