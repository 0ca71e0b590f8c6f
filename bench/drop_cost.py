"""What a nightly drop costs an incremental stage on a big lake, with and without pruning the
stage's inputs to the new logs' `job_month` partitions (`iolake/runner.py` `month_filter`).

    python -m bench.drop_cost LAKE [--stages features covering tags] [--repeat 2]
    python -m bench.drop_cost LAKE --spread-nights [--before ISO]
    python -m bench.drop_cost LAKE --fleet SINCE [--repeat 2]
    python -m bench.drop_cost LAKE --find [--repeat 2]
    python -m bench.drop_cost - --find-synthetic LOGS [--months 24] [--files 300]

LAKE: a lake whose ingest is ahead of the stages (e.g. the 100,000-log corpus lake with every
stage run, then a `python -m bench.make_corpus --month` drop ingested on top: the drop is the
stages' new work). For each pure stage, the runner's own input reads (`StageContext.read`: new-log
filter by broadcast semi join, with or without the month filter) feed the stage's transform; every
output is cached and counted; nothing is committed. Pruned and unpruned alternate (which goes
first too), `--repeat` rounds; the best seconds per variant, the ratio, and a checksum of every
output (row count and the sum of a 64-bit hash of each row) to show both read the same rows.

`--spread-nights` prepares a corpus lake for drop benchmarks of the fleet stage instead, and
exits: a corpus is ingested in one go, so all its logs share one ingest night, while a centre's
lake was filled night by night, and `gold/fleet_health` is per ingest night. It sets
`bronze/logs.ingested_at` of every log ingested before `--before` (default: now) to 02:00 UTC of
the day after its job ended (`bronze/jobs.end_time_sec`; logs without a job row keep theirs),
in one MERGE, and deletes `ops/fleet_done` and `gold/fleet_health`, so the next fleet run
rebuilds every mart from the spread ledger. Only for benchmark lakes: the ledger no longer
says when the logs were really ingested.

`--fleet SINCE` times the fleet stage (`jobs/fleet.py`, in this process) on a lake whose marts
are built: "drop", the logs ingested at or after SINCE (an ISO time: the drop's night) taken out
of `ops/fleet_done` and counted again, against "rebuild", every log taken out (every month and
night recomputed), alternating. Both must leave the same marts (every column but `updated_at`,
and the health's run counts, which the in-process runs do not add to): each mart's rows
after each variant are compared cell by cell (floats to a relative 1e-9: the order Spark adds
doubles in differs), so the drop's incremental result is the rebuild's.

`--find` times how every incremental stage of pipeline.yaml finds its new logs
(`iolake.lake.unprocessed_logs`, cached and counted): "everywhere", the anti-join over the whole
`from` and `done` tables, against "marked", the months the commits since the stage's mark touched
(`iolake.lake.changes.months_to_check`, its own time included) and the anti-join over those only,
alternating. LAKE: a lake whose stages ran with marks (this code), then a night ingested on top.
Both must find the same logs (count and checksum).

`--find-synthetic LOGS` does the same for one stage's pair of tables made up in a scratch folder
(under TMPDIR, deleted after; LAKE is not read): `from` and `done` of LOGS logs, two columns
(log_id, job_month), spread over `--months` months in `--files` files per month each, every log
done and the mark set; then a night of 1% of LOGS (at least 1,000) appended to the newest month
in 20 commits, and the search timed both ways. Two columns stand for the real tables' many (a
search reads only log_id and job_month); the file count is what grows with a lake built night
after night.
"""

from __future__ import annotations

import importlib
import sys
import time

from bench.common import alternate, parser, result, scratch
from jobs import fleet


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


def find_once(spark, src, done, lake: str, stage: str, marked: bool) -> tuple[float, dict]:
    """Seconds to find a stage's new logs (`src` and `done` its TableSpecs), everywhere or in the
    marked months; what was found."""
    from iolake.lake import unprocessed_logs
    from iolake.lake.changes import months_to_check
    from iolake.runner import PRUNE_MONTHS_MAX
    from schemas import OPS

    t0 = time.perf_counter()
    months = None
    if marked:
        months, _ = months_to_check(
            spark, src, done, OPS["empty_logs"], lake, stage, PRUNE_MONTHS_MAX
        )
    todo = unprocessed_logs(spark, src, done, lake, stage, months).cache()
    n = todo.count()
    seconds = time.perf_counter() - t0
    found = checksum(todo.select("log_id"))
    todo.unpersist()
    return seconds, {"logs": n, "months": months, "found": found}


def spread_nights(spark, lake: str, before: str | None) -> int:
    """Backdate the ledger's ingest times to the nights after the jobs ran (see the docstring);
    returns how many logs moved."""
    import shutil
    from pathlib import Path

    import pyspark.sql.functions as F
    from delta.tables import DeltaTable

    cut = F.lit(before).cast("timestamp") if before else F.current_timestamp()
    jobs = spark.read.format("delta").load(f"{lake}/bronze/jobs")
    logs = spark.read.format("delta").load(f"{lake}/bronze/logs").where(F.col("ingested_at") < cut)
    night = F.date_add(F.to_date(F.timestamp_seconds("end_time_sec")), 1)
    moved = (
        logs.select("log_id")
        .join(jobs.select("log_id", "end_time_sec").dropDuplicates(["log_id"]), "log_id")
        .select(
            "log_id", F.to_timestamp(F.concat(night.cast("string"), F.lit(" 02:00:00"))).alias("t")
        )
        .cache()
    )
    n = moved.count()
    (
        DeltaTable.forPath(spark, f"{lake}/bronze/logs")
        .alias("l")
        .merge(moved.alias("m"), "l.log_id = m.log_id")
        .whenMatchedUpdate(set={"ingested_at": "m.t"})
        .execute()
    )
    for table in ("ops/fleet_done", "gold/fleet_health"):
        shutil.rmtree(Path(lake) / table, ignore_errors=True)
    return n


MARTS = tuple(  # the fleet stage's five marts, as jobs/fleet.py names them
    t.split("/")[1]
    for t in (fleet.APP_MONTH, fleet.TAG_COST, fleet.FS_DAY, fleet.HEALTH, fleet.DRIFT)
)
MOVING = {"updated_at", "runs", "failed_runs", "run_seconds"}  # see --fleet above


def fleet_round(spark, conf, since: str | None) -> tuple[float, dict]:
    """Take the drop's logs (since given) or every log out of ops/fleet_done, run the fleet stage;
    its seconds, and each mart's rows without the moving columns."""
    import pyspark.sql.functions as F
    from delta.tables import DeltaTable

    lake = conf.lake.root
    done = DeltaTable.forPath(spark, f"{lake}/ops/fleet_done")
    if since:
        drop = spark.read.format("delta").load(f"{lake}/bronze/logs")
        ids = [
            r.log_id for r in drop.where(F.col("ingested_at") >= since).select("log_id").collect()
        ]
        done.delete(F.col("log_id").isin(ids))
    else:
        done.delete()
    t0 = time.perf_counter()
    summary = fleet.run(spark, conf, echo=lambda line: print(line, flush=True))
    seconds = time.perf_counter() - t0
    rows = {}
    for m in MARTS:  # a few thousand rows each: compared cell by cell (`same_marts`)
        df = spark.read.format("delta").load(f"{lake}/gold/{m}")
        cols = sorted(c for c in df.columns if c not in MOVING)
        rows[m] = sorted(
            (tuple(r[c] for c in cols) for r in df.select(*cols).collect()),
            key=lambda row: repr(_normal(row)),
        )
    return seconds, {"logs": summary.get("logs"), "marts": rows}


def _normal(v):
    """A value as rows are ordered by: maps by their sorted entries, floats to 9 digits."""
    if isinstance(v, dict):
        return tuple(sorted((k, _normal(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_normal(x) for x in v)
    if isinstance(v, float):
        return float(f"{v:.9g}")
    return v


def same_marts(a: dict, b: dict) -> list[str]:
    """The marts whose rows differ between two `fleet_round`s (none: []): cell by cell, floats
    within a relative 1e-9 (sums of doubles depend on the order Spark adds them in), maps by
    their entries."""
    import math

    def same(x, y) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9)
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            return len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))
        return x == y

    return [m for m in MARTS if not same(a[m], b[m])]


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("lake")
    ap.add_argument("--stages", nargs="+", default=["features", "covering", "tags"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--spread-nights", action="store_true", help="prepare LAKE (see above), exit")
    ap.add_argument("--before", help="with --spread-nights: move logs ingested before this time")
    ap.add_argument("--fleet", metavar="SINCE", help="time the fleet stage (see above), exit")
    ap.add_argument("--find", action="store_true", help="time finding new logs (see above), exit")
    ap.add_argument("--find-synthetic", type=int, metavar="LOGS", help="the same on made-up tables")
    ap.add_argument("--months", type=int, default=24, help="with --find-synthetic")
    ap.add_argument("--files", type=int, default=300, help="with --find-synthetic: files per month")
    a = ap.parse_args(argv)

    from iolake.config import load_config
    from iolake.runner import stage_by_name
    from iolake.spark import session_from_config

    conf = load_config("local", overrides={"lake": {"root": a.lake}})
    spark = session_from_config(conf)
    if a.find_synthetic:
        with scratch("find", None) as root:
            return find_synthetic(spark, str(root), a.find_synthetic, a.months, a.files, a.repeat)
    if a.spread_nights:
        n = spread_nights(spark, a.lake, a.before)
        result("drop_cost", f"{n:,} logs moved to the night after their job ended")
        return 0
    if a.fleet:
        best, facts = alternate(
            a.repeat,
            lambda way: fleet_round(spark, conf, a.fleet if way == "drop" else None),
            names=("drop", "rebuild"),
        )
        differ = same_marts(facts["drop"]["marts"], facts["rebuild"]["marts"])
        same = not differ
        result(
            "drop_cost",
            f"fleet: drop of {facts['drop']['logs']:,} logs {best['drop']:.1f} s, rebuild of "
            f"{facts['rebuild']['logs']:,} logs {best['rebuild']:.1f} s, drop/rebuild "
            f"{best['drop'] / best['rebuild']:.2f}; marts "
            + ("identical (floats to 1e-9)" if same else f"DIFFER: {', '.join(differ)}"),
        )
        return 0 if same else 1
    if a.find:
        return find_main(spark, conf, a.repeat)
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


def find_synthetic(spark, root: str, logs: int, months: int, files: int, repeat: int) -> int:
    """See --find-synthetic in the module docstring."""
    import pyspark.sql.functions as F
    import pyspark.sql.types as T

    from iolake.lake.changes import completed, months_to_check, write_mark
    from iolake.runner import PRUNE_MONTHS_MAX
    from schemas import OPS, TableSpec

    struct = T.StructType(
        [T.StructField("log_id", T.StringType()), T.StructField("job_month", T.StringType())]
    )
    src, done = (
        TableSpec(n, layer, struct, ("log_id",))
        for n, layer in (("src", "bronze"), ("done", "silver"))
    )
    names = [f"{2024 + m // 12}-{m % 12 + 1:02d}" for m in range(months)]
    month_of = F.element_at(F.array(*map(F.lit, names)), (F.col("id") % months + 1).cast("int"))

    def logs_df(first: int, n: int, newest: bool = False):
        return spark.range(first, first + n).select(
            F.sha2(F.col("id").cast("string"), 256).alias("log_id"),
            F.lit(names[-1]).alias("job_month") if newest else month_of.alias("job_month"),
        )

    t0 = time.perf_counter()
    for spec in (src, done):
        (
            logs_df(0, logs)
            .repartition(months * files, "job_month", (F.rand(1) * files).cast("int"))
            .write.format("delta")
            .partitionBy("job_month")
            .save(spec.path(root))
        )
    empty = OPS["empty_logs"]
    _, mark = months_to_check(spark, src, done, empty, root, "synthetic", PRUNE_MONTHS_MAX)
    write_mark(spark, done, root, "synthetic", completed(spark, mark, done, empty, root))
    night = max(1_000, logs // 100)
    for k in range(20):
        part = night // 20
        (
            logs_df(logs + k * part, part, newest=True)
            .repartition(4)
            .write.format("delta")
            .mode("append")
            .partitionBy("job_month")
            .save(src.path(root))
        )
    print(
        f"built {logs:,} logs x 2 tables, {months * files:,} files each, night {night:,} "
        f"in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )

    best, facts = alternate(
        repeat,
        lambda way: find_once(spark, src, done, root, "synthetic", way == "marked"),
        names=("everywhere", "marked"),
    )
    same = facts["everywhere"]["found"] == facts["marked"]["found"]
    result(
        "drop_cost",
        f"synthetic {logs:,} logs, {months} months x {files} files, night of "
        f"{facts['marked']['logs']:,} logs in {facts['marked']['months']}: everywhere "
        f"{best['everywhere']:.2f} s, marked {best['marked']:.2f} s; "
        f"found {'the same logs' if same else 'DIFFERENT logs'}",
    )
    return 0 if same else 1


def find_main(spark, conf, repeat: int) -> int:
    from iolake.pipeline import load_pipeline, table_spec

    lines, all_same = [], True
    for stage in (s for s in load_pipeline() if s.new_logs):
        src, done = table_spec(stage.new_logs["from"]), table_spec(stage.new_logs["done"])
        best, facts = alternate(
            repeat,
            lambda way, src=src, done=done, name=stage.name: find_once(
                spark, src, done, conf.lake.root, name, way == "marked"
            ),
            names=("everywhere", "marked"),
        )
        same = facts["everywhere"]["found"] == facts["marked"]["found"]
        all_same &= same
        print(
            f"{stage.name}: {facts['marked']['logs']:,} new logs; marked months "
            f"{facts['marked']['months']}; everywhere {best['everywhere']:.2f} s, marked "
            f"{best['marked']:.2f} s; found {'the same logs' if same else 'DIFFERENT logs'}",
            flush=True,
        )
        lines.append(f"{stage.name} {best['everywhere']:.1f} -> {best['marked']:.1f} s")
    result("drop_cost", f"finding new logs: {', '.join(lines)}; same logs: {all_same}")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
