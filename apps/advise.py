"""`iolake advise LOG...`: what to change in jobs not (yet) in the lake — the advise stage's rows.

Each Darshan log is decoded into bronze-shaped frames on a local Spark session
(`apps.predict.bronze_frames`), featured and tagged by the same transforms as the pipeline's
stages, and advised by `features.advice.assemble` as the advise stage does: the what-if per data
file with the registry's champions (`models.alias`), DCA-IO's stripe setting against the lake's
run history (silver/job_features of --lake, when it has one; else the given logs alone), the
tags' recommendations, and each piece of advice's precedents: the runs of the log's application
in the lake (gold/app_runs, the log's own key computed as the watch computes it) that differ in
the advised dimension, with their measured speed-up (`features/precedents.py`). Prints one block
per log; `--out CSV` writes every row.
"""

from __future__ import annotations

import sys
from functools import reduce


def advise(spark, conf, paths) -> object:
    """gold/tuning_advice-shaped pandas rows for the given logs (advised_with = the champion's version)."""
    import pyspark.sql.functions as F

    from apps.predict import bronze_frames
    from features import advice, bottleneck_tags, file_features, job_features, regressions, suspect
    from iolake.lake import read_or_empty, table_exists
    from jobs.advise import champions, say_provenance
    from schemas import GOLD, SILVER

    ffs, jfs, tags = [], [], []
    for p in paths:
        tables = bronze_frames(spark, p, conf.ingest.decoder)
        # each step checkpointed: one plan from decoding to advice is too large for Catalyst to plan
        ff = file_features.transform(tables, conf.features).localCheckpoint()
        jf = job_features.transform(tables, ff, conf.suspect).localCheckpoint()
        tags.append(bottleneck_tags.transform(tables, ff, jf, conf.tags).localCheckpoint())
        ffs.append(ff.withColumn("job_month", F.lit("advise")))
        jfs.append(jf.withColumn("job_month", F.lit("advise")))
    union = lambda dfs: reduce(lambda a, b: a.unionByName(b), dfs)  # noqa: E731
    ff, jf = union(ffs).localCheckpoint(), union(jfs).localCheckpoint()
    tag = union(tags).withColumn("job_month", F.lit("advise")).localCheckpoint()
    hist_jobs, hist_ff = jf, ff
    root = conf.lake.root
    if table_exists(
        spark, SILVER["job_features"], root
    ):  # the lake's history, less these logs if it holds them
        lake_jf = read_or_empty(spark, SILVER["job_features"], root).join(
            jf.select("log_id"), "log_id", "left_anti"
        )
        lake_ff = read_or_empty(spark, SILVER["file_features"], root).join(
            jf.select("log_id"), "log_id", "left_anti"
        )
        hist_jobs, hist_ff = lake_jf.unionByName(jf), lake_ff.unionByName(ff)
    # a suspect log's throughput is no history (features/suspect.py)
    hist_ff = hist_ff.join(suspect.suspect_ids(hist_jobs), "log_id", "left_anti")
    hist_jobs = suspect.plausible(hist_jobs)
    # the applications' runs: the lake's (less these logs) and these logs' own, keyed as the watch
    # keys them, so a log's precedents are the lake's runs of its application
    runs = regressions.app_runs(jf, ff, conf.watch)
    if table_exists(spark, GOLD["app_runs"], root):
        lake_runs = read_or_empty(spark, GOLD["app_runs"], root)
        runs = lake_runs.join(jf.select("log_id"), "log_id", "left_anti").unionByName(
            runs.select(*lake_runs.columns)
        )
    bw_mv, pl_mv = champions(conf, print)
    say_provenance(conf, [bw_mv, pl_mv], print)
    todo = jf.select("log_id", "job_month")
    rows = advice.assemble(spark, conf, todo, ff, tag, hist_jobs, hist_ff, bw_mv, pl_mv, runs)
    out = advice.finish(rows, str(bw_mv.version) if bw_mv else "none").toPandas()
    out["record_id"] = out["record_id"].astype("Int64")
    names = jf.select("log_id").toPandas().log_id.tolist()
    trace = dict(zip(names, [str(p) for p in paths]))
    return out.assign(trace=out.log_id.map(trace))


def main(conf, traces, out: str | None = None) -> int:
    from iolake.spark import build_session

    spark = build_session(
        "iolake-advise",
        "local[1]",
        {**conf.spark.properties, "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    rows = advise(spark, conf, traces)
    order = {"what_if": 0, "stripe": 1, "tag": 2, "none": 3}
    rows = (
        rows.assign(_o=rows.kind.map(order))
        .sort_values(["trace", "_o", "predicted_speedup"], ascending=[True, True, False])
        .drop(columns="_o")
    )
    for trace, g in rows.groupby("trace", sort=False):
        print(f"{trace} ({len(g)} piece(s) of advice):")
        for r in g.itertuples():
            gain = (
                f" [predicted {r.predicted_speedup:.2f}x]"
                if r.predicted_speedup == r.predicted_speedup
                and r.predicted_speedup is not None
                and r.kind != "what_if"
                else ""
            )
            print(f"  {r.kind:<8} {r.message}{gain}")
    if out:
        rows.drop(columns=["advised_at"]).to_csv(out, index=False)
        print(f"iolake advise: wrote {len(rows)} rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(__import__("iolake.config").config.load_config(), sys.argv[1:]))
