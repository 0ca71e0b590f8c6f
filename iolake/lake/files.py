"""Commit the Parquet files ingest's tasks already wrote to a bronze table, without writing them again.

Ingest's decode tasks write each table's rows to staged Parquet files, one per (task, table,
job_month), under `_staging/<run>/<table>/job_month=<M>/`. The MERGE path (`delta.merge_new_logs`)
reads those rows and writes them a second time as the table's files, a large share of ingest's
time for `io_ops` alone. Here the staged files *become* the table's
files: moved into the table's folder and added in one Delta transaction (`AddFile` actions with
the row counts and min/max statistics the tasks computed), so a log's rows still land in one
commit or not at all.

Exactly once, as with the MERGE:
- the transaction declares it read the whole table, so a concurrent commit to the table between
  its snapshot and its commit makes it fail with Delta's ConcurrentAppendException, and it is
  retried (`with_retries`) from a fresh snapshot;
- before each attempt it checks whether the table already holds any of the batch's log_ids in
  the batch's months (a run killed after this table's commit but before the ledger's, or a
  concurrent run that won the same logs). If it does, the batch falls back to the insert-only
  MERGE, which inserts only the missing logs, and the moved files are deleted afterwards.

The files were read by the gate through the same Parquet reader Delta uses, with the table's
schema (`schemas/`), so what the gate saw is what the table returns.
"""

from __future__ import annotations

import json
import math
import time
import uuid

import pyarrow as pa

from schemas._spec import STATS_COLUMNS

STATS_KEY = b"iolake.delta_stats"  # Parquet key-value metadata: the file's Delta statistics (JSON)
MONTH_DIR = "job_month="


def stats_columns(spec) -> list[str]:
    """The columns Delta keeps statistics for: the table's `delta.dataSkippingStatsColumns`, else its
    first 32 non-partition columns (Delta's default)."""
    cols = spec.properties.get(STATS_COLUMNS)
    if cols:
        return [c.strip() for c in cols.split(",") if c.strip()]
    return [f.name for f in spec.struct.fields if f.name not in spec.partition_by][:32]


def arrow_stats(t: pa.Table, columns: list[str]) -> str:
    """Delta's per-file statistics JSON for `t`: numRecords, and nullCount, minValues and maxValues of
    `columns`. Bounds are left out where they could mislead data skipping: NaN or infinite floats,
    and types other than integers, floats and strings (a missing bound means "unknown" to Delta)."""
    import pyarrow.compute as pc

    mins, maxs, nulls = {}, {}, {}
    for c in columns:
        if c not in t.column_names:
            continue
        a = t.column(c)
        nulls[c] = a.null_count
        typ = a.type
        floating = pa.types.is_floating(typ)
        if not (
            pa.types.is_integer(typ)
            or floating
            or pa.types.is_string(typ)
            or pa.types.is_large_string(typ)
        ):
            continue
        if a.null_count == len(a):
            continue
        if floating and pc.any(pc.is_nan(a)).as_py():
            continue
        mm = pc.min_max(a)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if floating and not (math.isfinite(lo) and math.isfinite(hi)):
            continue
        mins[c], maxs[c] = lo, hi
    return json.dumps(
        {"numRecords": t.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls},
        separators=(",", ":"),
    )


def month_of(path: str) -> str:
    """The job_month of a staged file, from its `job_month=<M>` folder."""
    for part in reversed(path.split("/")[:-1]):
        if part.startswith(MONTH_DIR):
            return part[len(MONTH_DIR) :]
    raise ValueError(f"staged file {path} is not under a {MONTH_DIR}<month> folder")


def _scala(spark):
    jvm = spark._jvm
    utils = jvm.org.apache.spark.api.python.PythonUtils
    none = jvm.scala.Option.empty()

    def seq(items):
        lst = jvm.java.util.ArrayList()
        for x in items:
            lst.add(x)
        return utils.toSeq(lst)

    def smap(d):
        m = jvm.java.util.HashMap()
        for k, v in d.items():
            m.put(k, v)
        return utils.toScalaMap(m)

    return jvm, none, seq, smap


def _add_actions(spark, files: list[dict]):
    jvm, none, seq, smap = _scala(spark)
    add = jvm.org.apache.spark.sql.delta.actions.AddFile
    tags = getattr(add, "apply$default$7")()
    dv = getattr(add, "apply$default$8")()
    return seq(
        [
            add.apply(
                f["rel"],
                smap({"job_month": f["month"]}),
                f["size"],
                f["mtime_ms"],
                True,
                f["stats"],
                tags,
                dv,
                none,
                none,
                none,
                none,
                none,
            )
            for f in files
        ]
    )


def _write_op(spark, partition_by: list[str]):
    jvm, none, seq, _ = _scala(spark)
    mode = jvm.org.apache.spark.sql.SaveMode.Append
    return jvm.org.apache.spark.sql.delta.DeltaOperations.Write(
        mode, jvm.scala.Some(seq(partition_by)), none, none, none, none, none, none, none
    )


def _footer(fs, path: str) -> tuple[int, str | None]:
    """(size in bytes, Delta stats JSON or None) of a staged file."""
    import pyarrow.parquet as pq

    with fs.open_input_file(path) as fh:
        size = fh.size()
        meta = pq.read_metadata(fh).metadata or {}
    stats = meta.get(STATS_KEY)
    return size, stats.decode() if stats else None


def _file_count(snapshot) -> int:
    """The files of a Delta snapshot (a JVM object): from its version's checksum file (`.crc`,
    which Delta writes after each commit) when there is one, without a Spark job; else from the
    snapshot's state, which Delta computes with one."""
    crc = snapshot.checksumOpt()
    return int(crc.get().numFiles() if crc.isDefined() else snapshot.numOfFiles())


def _holds_any(spark, spec, lake: str, log_ids, months: list[str]) -> bool:
    import pyspark.sql.functions as F

    from iolake.lake.delta import read_table

    t = read_table(spark, spec, lake).where(F.col("job_month").isin(months)).select("log_id")
    return bool(t.join(log_ids, "log_id", "left_semi").limit(1).count())


def commit_staged_files(
    spark, spec, lake: str, staged: list[str], log_ids, retries: int = 8, backoff_s: float = 0.25
) -> str:
    """Add the staged Parquet files `staged` (URIs under `job_month=<M>/` folders) to `spec`'s table
    in one commit; `log_ids` is a DataFrame of the batch's log_ids (a superset will do) that does not
    read the staged files, which move. Returns "files", or "merge" when the table already held some
    of the batch's logs and the insert-only MERGE committed them."""
    from iolake.lake.delta import delta_log, ensure_table, merge_new_logs, with_retries
    from readers.fsio import resolve

    ensure_table(spark, spec, lake, retries)
    table_fs, table_root = resolve(spec.path(lake))
    months = sorted({month_of(u) for u in staged})
    log_ids = log_ids.select("log_id").distinct().cache()
    moved: list[dict] = []
    attempted = []  # a commit was tried: its files may be referenced, so they never move back
    try:
        for uri in staged:
            fs, src = resolve(uri)
            month = month_of(uri)
            size, stats = _footer(fs, src)
            rel = f"{MONTH_DIR}{month}/part-{uuid.uuid4()}.c000.iolake.parquet"
            dest = f"{table_root}/{rel}"
            table_fs.create_dir(f"{table_root}/{MONTH_DIR}{month}", recursive=True)
            fs.move(src, dest)
            mtime = table_fs.get_file_info(dest).mtime
            moved.append(
                {
                    "rel": rel,
                    "path": dest,
                    "src": src,
                    "month": month,
                    "size": size,
                    "stats": stats,
                    "mtime_ms": int(mtime.timestamp() * 1000) if mtime else int(time.time() * 1000),
                }
            )

        def commit() -> str:
            txn = delta_log(spark, spec.path(lake)).startTransaction()
            txn.readWholeTable()  # any concurrent commit to the table now conflicts: retried from scratch
            # a table with no file holds no log: no query (a new table's first commit)
            if _file_count(txn.snapshot()) and _holds_any(spark, spec, lake, log_ids, months):
                return "merge"
            attempted.append(True)
            txn.commit(_add_actions(spark, moved), _write_op(spark, list(spec.partition_by)))
            return "files"

        how = with_retries(commit, retries, f"add files {spec.name}", backoff_s=backoff_s)
        if how == "merge":
            rows = spark.read.schema(spec.struct).parquet(
                *[_uri_like(staged[0], m["path"]) for m in moved]
            )
            merge_new_logs(spark, spec, lake, rows, retries, months, backoff_s)
            for m in moved:
                table_fs.delete_file(m["path"])
        return how
    except BaseException:
        if not attempted:
            _unmove(table_fs, moved)
        raise
    finally:
        log_ids.unpersist()


def _uri_like(example: str, path: str) -> str:
    return path if "://" not in example else f"{example.split('://')[0]}://{path}"


def _unmove(fs, moved: list[dict]) -> None:
    """After a failure before any commit was tried, the moved files go back to their staged place.
    After a tried commit they stay: the table may reference them; unreferenced, they are an
    orphan VACUUM removes, and a re-run decodes the logs again (the ledger was not written)."""
    for m in moved:
        try:
            fs.move(m["path"], m["src"])
        except (FileNotFoundError, OSError):
            pass
