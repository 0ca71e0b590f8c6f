"""ingest: trace files -> bronze Delta tables, incrementally and exactly once.

Reads:  trace files under INPUT... (local paths or any URI pyarrow.fs understands),
        bronze/logs (the ledger).
Writes: bronze/logs, jobs, files, posix, mpiio, stdio, h5f, h5d, pnetcdf_file, pnetcdf_var,
        dfs, daos, lustre, heatmap, io_ops, and covers (each log's covering set, computed from its
        decoded tables unless `ingest.covers` is false: `features/covering_sets.py`, `log_covers`).

1. List traces; drop those whose (uri, size, mtime) the ledger already holds (no read needed).
2. Hash the rest in executors; drop content hashes the ledger holds, and duplicates.
3. Cut the new logs, in log_id order, into Spark tasks of bounded bytes (run heaviest first);
   each task decodes its logs (in a worker process when `ingest.isolate`), checks header sanity
   and writes one Parquet file per (bronze table, job_month) to LAKE/_staging/<run_id>/. Bad
   logs become ledger rows with a reason.
4. Gate each table's staged rows (Great Expectations), then commit them exactly once,
   `ingest.commit_threads` tables at a time: by default
   the staged files themselves are added to the table (`ingest.commit: files`,
   `iolake/lake/files.py`), else an insert-only MERGE on (job_month, log_id) writes them again
   (`merge`); the ledger is merged last, so a log is "done" only with its rows.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from iolake import faults, progress
from iolake.cli import entry_points
from iolake.config import Config
from iolake.runinfo import RunInfo
from iolake.spark import local_frame
from readers.fsio import TraceFile, list_traces
from schemas import BRONZE, DECODED_TABLES

LEDGER = "bronze/logs"
CANDIDATE_COLS = ("source_uri", "size_bytes", "mtime_ns", "kind")


def plan_tasks(
    logs: list[dict], task_bytes: int, task_max_logs: int, min_tasks: int = 1
) -> list[list[dict]]:
    """Consecutive runs of the logs in (month_hint, log_id) order, of at most `task_bytes` bytes (or
    one big log) and `task_max_logs` logs each, the heaviest bin first (decisions 0037, 0052).

    The byte target shrinks so that there are at least `min_tasks` bins when there are that many
    logs: a small nightly drop must still keep every core busy. A bin holds a narrow log_id range, so
    its staged files' log_id min/max statistics let a point read of one log skip the other tasks'
    files, and its rows are written in log_id order (row-group statistics skip too); Spark runs
    the slices of `parallelize` in order, so the heaviest first keeps a big log from straggling.
    `month_hint` (the month the log's header gives, `hash_partition`; absent or None sorts first)
    keeps a task's logs in one month, so a drop spanning many months stages one file per table
    and task, not one per table, task and month.
    """
    total = sum(r["size_bytes"] for r in logs)
    if min_tasks > 1 and logs:
        task_bytes = max(1, min(task_bytes, -(-total // min_tasks)))
        task_max_logs = max(1, min(task_max_logs, -(-len(logs) // min_tasks)))
    bins: list[list[dict]] = []
    loads: list[int] = []
    for log in sorted(
        logs, key=lambda r: (r.get("month_hint") or "", r["log_id"], r["source_uri"])
    ):
        if bins and loads[-1] + log["size_bytes"] <= task_bytes and len(bins[-1]) < task_max_logs:
            bins[-1].append(log)
            loads[-1] += log["size_bytes"]
        else:
            bins.append([log])
            loads.append(log["size_bytes"])
    order = sorted(range(len(bins)), key=lambda i: (-loads[i], i))
    return [bins[i] for i in order]


def _candidates_df(spark, traces: list[TraceFile]):
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("source_uri", T.StringType(), False),
            T.StructField("size_bytes", T.LongType(), False),
            T.StructField("mtime_ns", T.LongType(), True),
            T.StructField("kind", T.StringType(), False),
        ]
    )
    return local_frame(spark, [(t.uri, t.size_bytes, t.mtime_ns, t.kind) for t in traces], schema)


def new_logs(ctx, traces: list[TraceFile]) -> list[dict]:
    """Traces the ledger has not seen, one per content hash, as dicts with their log_id."""
    import pyspark.sql.functions as F

    from jobs.ingest_tasks import HASHED_SCHEMA, hash_partition

    if not traces:
        return []
    spark = ctx.spark
    cand = _candidates_df(spark, traces)
    known = ctx.exists(LEDGER)
    if known:
        ledger = ctx.read(LEDGER)
        seen = ledger.select("source_uri", "size_bytes", "mtime_ns")
        cand = cand.join(
            seen,
            (cand.source_uri == seen.source_uri)
            & (cand.size_bytes == seen.size_bytes)
            & cand.mtime_ns.eqNullSafe(seen.mtime_ns),
            "left_anti",
        )
    n_parts = max(1, min(64, len(traces) // 500 + 1, spark.sparkContext.defaultParallelism * 4))
    hashed = cand.repartition(n_parts).mapInArrow(hash_partition, HASHED_SCHEMA)
    if known:
        hashed = hashed.join(ledger.select("log_id"), "log_id", "left_anti")
    # one row per content: the first URI in name order stands for its duplicates
    first = hashed.groupBy("log_id").agg(
        F.min_by(F.struct(*CANDIDATE_COLS, "month_hint"), "source_uri").alias("c")
    )
    rows = first.select("log_id", "c.*").collect()
    return [r.asDict() for r in rows]


def transform(spark, logs: list[dict], conf: Config, staging: str, run: RunInfo):
    """Decode `logs` in executors into staged Parquet; returns the (lazy) ledger rows."""
    from jobs.ingest_tasks import OUTPUT_SCHEMA, derivers, make_decode_partition

    bins = plan_tasks(
        logs,
        conf.ingest.task_bytes,
        conf.ingest.task_max_logs,
        min_tasks=2 * spark.sparkContext.defaultParallelism,
    )
    rdd = spark.sparkContext.parallelize(bins, numSlices=max(1, len(bins))).flatMap(lambda b: b)
    df = spark.createDataFrame(
        rdd.map(
            lambda r: (r["log_id"], r["source_uri"], r["size_bytes"], r["mtime_ns"], r["kind"])
        ),
        "log_id string, source_uri string, size_bytes long, mtime_ns long, kind string",
    )
    fn = make_decode_partition(conf.ingest, staging, run.run_id, derivers(conf))
    return df.mapInArrow(fn, OUTPUT_SCHEMA), len(bins)


def fill_ledger_jobids(ctx) -> int | None:
    """Once per lake: a ledger written before it had `jobid` (schemas/logs.py, decision 0042)
    gets the column and each decoded log's jobid from bronze/jobs, then the table property
    JOBID_FILLED that tells readers every row has it. Returns the rows filled; None when there
    was nothing to do (no ledger yet, or already filled)."""
    from schemas.logs import JOBID_FILLED

    t0 = time.monotonic()
    filled = ctx.fill_once(
        LEDGER,
        "jobid",
        "bronze/jobs",
        JOBID_FILLED,
        on_start=lambda: ctx.echo(
            "[ingest] the ledger gains each log's jobid from bronze/jobs (once per lake)"
        ),
    )
    if filled is not None:
        s = time.monotonic() - t0
        ctx.echo(f"[ingest] the ledger's jobid: {filled} rows filled in {s:.1f} s")
    return filled


def execute(ctx) -> dict:
    """List, hash, decode (in executors) and commit the new traces of `ctx.params["traces"]`."""
    import pyspark.sql.functions as F

    from jobs.ingest_tasks import cleanup_staging, derivers, staging_dir

    spark, conf, run, echo = ctx.spark, ctx.conf, ctx.info, ctx.echo
    inputs = list(ctx.params.get("traces") or [])
    t0 = time.monotonic()
    fill_ledger_jobids(ctx)
    traces = list_traces(inputs, conf.ingest.suffixes)
    echo(f"[ingest] run {run.run_id}: {len(traces)} trace files under {len(inputs)} input(s)")
    logs = new_logs(ctx, traces)
    echo(
        f"[ingest] {len(logs)} new logs to decode ({len(traces) - len(logs)} already in the ledger or duplicates)"
    )
    summary = {
        "run_id": run.run_id,
        "listed": len(traces),
        "new": len(logs),
        "status": {},
        "rows": {},
    }
    if not logs:
        summary["seconds"] = time.monotonic() - t0
        echo(format_summary(summary))
        return summary

    staging = staging_dir(conf.lake.root, run.run_id)
    ledger_df, n_tasks = transform(spark, logs, conf, staging, run)
    with progress.SparkProgress(spark, "decode", total_items=len(logs), unit="logs", echo=echo):
        ledger_df.write.mode("overwrite").parquet(f"{staging}/ledger")
    ledger = spark.read.parquet(f"{staging}/ledger")
    staged = sorted(
        {
            f
            for r in ledger.select(F.explode("staged").alias("f")).distinct().collect()
            for f in [r.f]
        }
    )
    months = [
        r.job_month for r in ledger.select("job_month").distinct().collect()
    ]  # every decoded row's

    derive = derivers(conf)
    commits = []
    for table in DECODED_TABLES:
        files = [f for f in staged if f"/{table}/" in f]
        if files:
            commits.append((table, files))
        elif table in derive:
            # no log of the batch had a row: the table exists all the same, or its stage would
            # take its absence for "recompute every log"
            ctx.ensure(f"bronze/{table}")
    commit_tables(ctx, commits, ledger.select("log_id"), months)
    ctx.write(LEDGER, ledger.drop("staged"))
    keep_ledger_sorted(ctx)

    facts = ledger.select("status", "row_counts").collect()
    summary["status"] = dict(Counter(r.status for r in facts))
    rows: Counter = Counter()
    for r in facts:
        rows.update(r.row_counts or {})
    summary["rows"] = dict(rows)
    summary["tasks"] = n_tasks
    summary["seconds"] = time.monotonic() - t0
    cleanup_staging(staging)
    echo(format_summary(summary))
    return summary


def keep_ledger_sorted(ctx) -> None:
    """Rewrite the ledger sorted by log_id in small row groups (`iolake.lake.layout.keep_sorted`,
    what `iolake maintain` does) once more than `ingest.ledger_sort_rows` of its rows lie in the
    coarse row groups merges write: a look-up of one log (`iolake report JOB`) then decodes one
    row group, however large the lake, where a million logs merged at once are one row group."""
    from iolake.lake.delta import USER_METADATA
    from iolake.lake.layout import keep_sorted

    spec = ctx.spec(LEDGER, "output")
    (column,) = spec.sorted_by
    t = time.monotonic()
    try:
        coarse, done = keep_sorted(
            spec.path(ctx.conf.lake.root),
            column,
            ctx.conf.ingest.ledger_sort_rows,
            ctx.spark.conf.get(USER_METADATA, None),
        )
    except Exception as e:  # the logs are committed: a ledger left unsorted costs look-ups only
        ctx.echo(
            f"[ingest] warning: the ledger was not checked for sorting ({type(e).__name__}: {e}); "
            "its look-ups read it whole until `iolake maintain` sorts it"
        )
        return
    if done is not None:
        ctx.echo(
            f"[ingest] ledger sorted by {column}: {coarse:,} rows were in coarse row groups "
            f"(ingest.ledger_sort_rows {ctx.conf.ingest.ledger_sort_rows:,}), "
            f"{time.monotonic() - t:.1f} s"
        )


def commit_tables(ctx, commits: list[tuple[str, list[str]]], log_ids, months: list[str]) -> None:
    """Gate and commit each bronze table's staged files, `ingest.commit_threads` tables at a time.

    The tables are independent Delta logs, so their commits need no order among them; each is
    atomic and exactly once on its own (`iolake.lake.files`). What makes a log "done" is the
    ledger, merged by the caller after every table here has committed. A table that fails raises
    once the others have finished theirs (a re-run skips what they committed)."""
    from concurrent.futures import ThreadPoolExecutor

    spark, conf = ctx.spark, ctx.conf

    def one(table: str, files: list[str]) -> None:
        rows = spark.read.schema(BRONZE[table].struct).parquet(*files)
        if conf.ingest.commit == "files":
            # the batch's ids from the staged ledger: the files move into the table as they commit
            ctx.write(f"bronze/{table}", rows, mode="files", files=files, log_ids=log_ids)
        else:
            ctx.write(f"bronze/{table}", rows, months=months)
        faults.point(f"after-merge:{table}")

    threads = max(1, min(conf.ingest.commit_threads, len(commits)))
    if threads == 1:
        for table, files in commits:
            one(table, files)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="iolake-commit") as pool:
        futures = [pool.submit(one, table, files) for table, files in commits]
    for f in futures:
        f.result()


_run, main = entry_points("ingest")


def run(spark, conf, inputs: list[str], run_info=None, echo=print) -> dict:
    """Ingest `inputs` (trace files or folders) through the runner; returns the summary."""
    return _run(spark, conf, run_info, echo, traces=inputs)


def format_summary(s: dict) -> str:
    lines = [
        f"ingest {s['run_id']}: {s['listed']} listed, {s['new']} new, {s.get('seconds', 0):.1f} s"
    ]
    if s["new"]:
        lines.append(
            f"  rate: {s['new'] / max(s['seconds'], 1e-9):.1f} logs/s over {s.get('tasks', 0)} task(s)"
        )
    st = s.get("status", {})
    lines.append(
        "  logs: " + ", ".join(f"{k} {st.get(k, 0)}" for k in ("ok", "partial", "quarantined"))
    )
    for t, n in sorted(s.get("rows", {}).items()):
        lines.append(f"  {t:<14} {n:>12,} rows")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
