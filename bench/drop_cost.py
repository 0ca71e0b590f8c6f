"""What a nightly drop costs an incremental stage on a big lake, with and without pruning the
stage's inputs to the new logs' `job_month` partitions (`iolake/runner.py` `month_filter`).

    python -m bench.drop_cost LAKE [--stages features covering tags] [--repeat 2]

LAKE: a lake whose ingest is ahead of the stages (e.g. the 100,000-log corpus lake with every
stage run, then a `python -m bench.make_corpus --month` drop ingested on top: the drop is the
stages' new work). For each pure stage, the runner's own input reads (`StageContext.read`: new-log
filter by broadcast semi join, with or without the month filter) feed the stage's transform; every
output is cached and counted; nothing is committed. Pruned and unpruned alternate (which goes
first too), `--repeat` rounds; the best seconds per variant, the ratio, and a checksum of every
output (row count and the sum of a 64-bit hash of each row) to show both read the same rows.
"""

from __future__ import annotations

import importlib
import sys
import time

from bench.common import alternate, parser, result


def checksum(df) -> tuple[int, int]:
    import pyspark.sql.functions as F

    r = df.select(F.count(F.lit(1)), F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)"))).first()
    return int(r[0]), int(r[1] or 0)


def run_once(spark, conf, stage, prune: bool) -> tuple[float, dict]:
    from iolake.lake import unprocessed_logs
    from iolake.pipeline import table_spec
    from iolake.runinfo import RunInfo
    from iolake.runner import StageContext, months_of

    mod = importlib.import_module(stage.module)
    ctx = StageContext(spark, conf, stage, RunInfo.new(conf), print)
    t0 = time.perf_counter()
    src, done = table_spec(stage.new_logs["from"]), table_spec(stage.new_logs["done"])
    todo = unprocessed_logs(spark, src, done, conf.lake.root).cache()
    ctx.todo, ctx.n_todo = todo.select("log_id"), todo.count()
    ctx.todo_months = months_of(todo) if prune else None
    outs = mod.transform({t: ctx.read(t) for t in stage.tables_in}, conf)
    cached = {t: df.cache() for t, df in outs.items()}
    for df in cached.values():
        df.count()
    seconds = time.perf_counter() - t0
    sums = {t: checksum(df) for t, df in cached.items()}
    for df in cached.values():
        df.unpersist()
    todo.unpersist()
    return seconds, {"logs": ctx.n_todo, "months": ctx.todo_months, "outputs": sums}


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("lake")
    ap.add_argument("--stages", nargs="+", default=["features", "covering", "tags"])
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args(argv)

    from iolake.config import load_config
    from iolake.runner import stage_by_name
    from iolake.spark import session_from_config

    conf = load_config("local", overrides={"lake": {"root": a.lake}})
    spark = session_from_config(conf)
    ratios, all_same = [], True
    for name in a.stages:
        stage = stage_by_name(name)
        print(f"{name}:", flush=True)
        best, facts = alternate(
            a.repeat,
            lambda way, stage=stage: run_once(spark, conf, stage, way == "pruned"),
            names=("unpruned", "pruned"),
        )
        same = facts["unpruned"]["outputs"] == facts["pruned"]["outputs"]
        all_same &= same
        ratios.append(f"{name} {best['pruned'] / best['unpruned']:.2f}")
        print(
            f"{name}: {facts['pruned']['logs']:,} new logs in month(s) {facts['pruned']['months']}; "
            f"unpruned {best['unpruned']:.1f} s, pruned {best['pruned']:.1f} s, "
            f"pruned/unpruned {best['pruned'] / best['unpruned']:.2f}; "
            f"outputs {'identical' if same else 'DIFFER'} {facts['pruned']['outputs']}",
            flush=True,
        )
    result(
        "drop_cost",
        f"pruned/unpruned: {', '.join(ratios)}; outputs {'identical' if all_same else 'DIFFER'}",
    )
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
