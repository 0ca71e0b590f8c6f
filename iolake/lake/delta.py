"""Delta table helpers: create from a `TableSpec`, commit exactly once, stamp every commit.

Exactly-once: every bronze write is an insert-only MERGE keyed on (job_month, log_id) — a log's
rows land in a table in one commit or not at all, and a log already present is never
inserted again. A commit that loses a race to a concurrent run (Delta's optimistic
concurrency) is retried; the retry sees the winner's rows and inserts only what is missing.
"""

from __future__ import annotations

import json
import logging
import random
import time

from schemas import TableSpec

log = logging.getLogger(__name__)

RETRYABLE = (
    "Concurrent",
    "DELTA_CONCURRENT",
    "ProtocolChanged",
    "MetadataChanged",
    "DELTA_METADATA_CHANGED",
    "DELTA_PROTOCOL_CHANGED",
    "already exists",
)
# While a concurrent run creates a table, its folder already exists but holds no commit yet:
# Delta then refuses to create the table "in a non-empty location", or skips the create (the
# log folder exists) and finds no table. A moment later the winner's commit is there and
# `createIfNotExists` is a no-op, so creating retries on both.
CREATE_RACE = ("DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION", "DELTA_TABLE_NOT_FOUND")
CREATE_RETRYABLE = RETRYABLE + CREATE_RACE


class SchemaConflict(RuntimeError):
    """A write would change the type of an existing column: only additive columns may evolve a table."""


def schema_changes(table_schema, new_schema, what: str) -> list:
    """The fields of `new_schema` the table lacks (additive, allowed); raises on a changed type.

    Names compare case-insensitively (as Delta does); types compare without nullability.
    """
    have = {f.name.lower(): f for f in table_schema.fields}
    added, changed = [], []
    for f in new_schema.fields:
        old = have.get(f.name.lower())
        if old is None:
            added.append(f)
        elif old.dataType.simpleString() != f.dataType.simpleString():
            changed.append(
                f"{f.name}: {old.dataType.simpleString()} -> {f.dataType.simpleString()}"
            )
    if changed:
        raise SchemaConflict(
            f"{what}: refusing to change column types ({'; '.join(changed)}); only new nullable columns "
            "may be added to a table (rewrite the table, or give the counter a new name)"
        )
    return added


USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"  # the run's, on every commit


def commit_metadata(spark, run_id: str, conf_digest: str, stage: str, git_sha: str) -> None:
    """Every Delta commit of this session now carries the run id, git sha and config hash."""
    meta = {"run_id": run_id, "stage": stage, "git_sha": git_sha, "config": conf_digest}
    spark.conf.set(USER_METADATA, json.dumps(meta, sort_keys=True))


def with_retries(
    fn, retries: int, what: str, retryable: tuple[str, ...] = RETRYABLE, backoff_s: float = 0.25
):
    """Call `fn`, again after a jittered back-off (`backoff_s`, doubling, at most 8 s) when it fails
    with one of `retryable` in its error."""
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as e:  # Delta raises JVM exceptions wrapped in several Python types
            text = f"{type(e).__name__}: {e}"
            if attempt == retries or not any(tok in text for tok in retryable):
                raise
            log.info(
                "%s: attempt %d lost a race (%s); retrying",
                what,
                attempt + 1,
                text.splitlines()[0][:200],
            )
            time.sleep(min(8.0, backoff_s * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")


def ensure_table(spark, spec: TableSpec, lake: str, retries: int = 8):
    """Create the table from its spec, or add the spec's columns an existing table lacks.

    A spec that gained columns (e.g. a newer Darshan's counters in `schemas/darshan_counters.py`)
    evolves the table: the new columns are appended, nullable, and the existing rows read null.
    """
    from delta.tables import DeltaTable

    path = spec.path(lake)
    if DeltaTable.isDeltaTable(spark, path):

        def evolve():  # re-read each attempt: a concurrent run may have added the columns already
            table = DeltaTable.forPath(spark, path)
            added = schema_changes(table.toDF().schema, spec.struct, f"{spec.layer}/{spec.name}")
            if added:
                cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in added)
                log.warning(
                    "%s/%s: schema evolves, adding column(s) %s", spec.layer, spec.name, cols
                )
                spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS ({cols})")
            return table

        return with_retries(evolve, retries, f"evolve {spec.name}")

    def create():
        b = DeltaTable.createIfNotExists(spark).location(path).addColumns(spec.struct)
        if spec.partition_by:
            b = b.partitionedBy(*spec.partition_by)
        for k, v in spec.properties.items():
            b = b.property(k, v)
        if spec.doc:
            b = b.comment(spec.doc.strip().splitlines()[0][:200])
        return b.execute()

    try:
        return with_retries(create, retries, f"create {spec.name}", CREATE_RETRYABLE)
    except Exception as e:
        if not any(tok in str(e) for tok in CREATE_RACE + ("DELTA_MISSING_DELTA_TABLE",)):
            raise
        raise RuntimeError(
            f"{spec.layer}/{spec.name}: {path} holds files but is not a Delta table, and no concurrent "
            "run made it one; move those files away (a run killed while creating the table can leave "
            "an empty _delta_log/ behind) and run again"
        ) from e


def merge_new_logs(
    spark,
    spec: TableSpec,
    lake: str,
    df,
    retries: int = 8,
    months: list[str] | None = None,
    backoff_s: float = 0.25,
) -> None:
    """Insert the rows the table does not hold yet, matched on `spec.merge_on` (a log's rows by
    job_month + log_id; a prediction by its file and model version).

    The MERGE reads only the target's partitions of the batch's `job_month`s (given, or read
    from `df`): a nightly drop touches a month or two, so the cost of finding which logs are
    already present stops growing with the lake. Concurrent runs that ingest the same log
    still conflict, since its rows carry the same month.
    """
    from delta.tables import DeltaTable

    ensure_table(spark, spec, lake, retries)
    cond = " AND ".join(f"t.{c} = s.{c}" for c in spec.merge_on)
    if "job_month" in spec.partition_by and "job_month" in spec.merge_on:
        if months is None:
            months = [r[0] for r in df.select("job_month").distinct().collect()]
        months = sorted({m for m in months if m is not None})
        if months:
            quoted = ", ".join(
                "'" + m.replace("\\", "\\\\").replace("'", "\\'") + "'" for m in months
            )
            cond = f"t.job_month IN ({quoted}) AND {cond}"

    def merge():
        import pyspark.sql.functions as F

        target = DeltaTable.forPath(spark, spec.path(lake))
        tschema = target.toDF().schema
        # rows with columns the table lacks (a newer decoder's counters) evolve it; a type change fails
        added = schema_changes(tschema, df.schema, f"{spec.layer}/{spec.name}")
        # columns the rows lack (older logs, or counters added by an earlier evolution) are null
        src = df
        present = {c.lower() for c in df.columns}
        for f in tschema.fields:
            if f.name.lower() not in present:
                src = src.withColumn(f.name, F.lit(None).cast(f.dataType))
        builder = target.alias("t").merge(src.alias("s"), cond).whenNotMatchedInsertAll()
        if added:
            log.warning(
                "%s/%s: schema evolves, adding column(s) %s",
                spec.layer,
                spec.name,
                ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in added),
            )
            builder = (
                builder.withSchemaEvolution()
            )  # additive only (checked above); this merge only
        builder.execute()

    with_retries(merge, retries, f"merge {spec.name}", backoff_s=backoff_s)


def fill_once(
    spark,
    spec: TableSpec,
    lake: str,
    column: str,
    source: TableSpec,
    marker: str,
    on_start=lambda: None,
    retries: int = 8,
) -> int | None:
    """Fill `column` of `spec`'s rows where it is null from `source`'s rows of the same log_id,
    once per table: after the update MERGE the table property `marker` is set to "true", and a
    table that has it (or was created with it: a spec declaring it) is left alone. Adds the column
    first when the table lacks it (`ensure_table`). `on_start()` is called before the work, so a
    caller can say what the run is doing. Returns the rows updated; None when there was nothing to
    do (no table yet, or already filled). Stopped in between, the next call fills what is still
    null: the property is set last."""
    from delta.tables import DeltaTable

    if not table_exists(spark, spec, lake):
        return None
    path = spec.path(lake)
    prop = latest_metadata(spark, path).configuration().get(marker)  # a Scala Option
    if prop.isDefined() and prop.get() == "true":
        return None
    on_start()
    ensure_table(spark, spec, lake, retries)
    filled = 0
    if table_exists(spark, source, lake):
        values = read_table(spark, source, lake).where(f"`{column}` IS NOT NULL")
        values = values.select("log_id", column)

        def merge():
            (
                DeltaTable.forPath(spark, path)
                .alias("t")
                .merge(values.alias("s"), "t.log_id = s.log_id")
                .whenMatchedUpdate(condition=f"t.`{column}` IS NULL", set={column: f"s.`{column}`"})
                .execute()
            )

        with_retries(merge, retries, f"fill {spec.layer}/{spec.name}.{column}")
        last = DeltaTable.forPath(spark, path).history(1).first()
        if last["operation"] == "MERGE":
            filled = int((last["operationMetrics"] or {}).get("numTargetRowsUpdated", 0))
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{marker}' = 'true')")
    return filled


def read_table(spark, spec: TableSpec, lake: str):
    return spark.read.format("delta").load(spec.path(lake))


def table_exists(spark, spec: TableSpec, lake: str) -> bool:
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, spec.path(lake))


def table_version(spark, spec: TableSpec, lake: str) -> int | None:
    from delta.tables import DeltaTable

    if not table_exists(spark, spec, lake):
        return None
    return DeltaTable.forPath(spark, spec.path(lake)).history(1).collect()[0]["version"]


def read_or_empty(spark, spec: TableSpec, lake: str):
    """The table, or an empty frame of its schema when no run has written it yet."""
    if table_exists(spark, spec, lake):
        return read_table(spark, spec, lake)
    return spark.createDataFrame([], spec.struct)


def table_id(spark, spec: TableSpec, lake: str) -> str | None:
    """Delta's id of the table's current build (a table dropped and re-created gets a new one), or None."""
    if not table_exists(spark, spec, lake):
        return None
    return delta_id(spark, spec.path(lake))


def delta_id(spark, path: str) -> str:
    """The id of the Delta table at `path`, as `DESCRIBE DETAIL` gives it."""
    return str(latest_metadata(spark, path).id())


def delta_log(spark, path: str):
    """Delta's `DeltaLog` of the table at `path` (a JVM object; Delta keeps one per path)."""
    return spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)


def partition_months(spark, spec, lake: str) -> list:
    """The `job_month` partition values of the table's current files, oldest first (None, a log
    without a month, last), from its Delta log: no data file is opened. [] when it does not exist."""
    from pyspark.sql import DataFrame

    if not table_exists(spark, spec, lake):
        return []
    files = delta_log(spark, spec.path(lake)).startTransaction().snapshot().allFiles().toDF()
    months = DataFrame(files, spark).selectExpr("partitionValues['job_month']").distinct().collect()
    return sorted_months(r[0] or None for r in months)


def latest_metadata(spark, path: str):
    """The metadata (id, properties, schema) of the table's latest version, a JVM object, read from
    the version's checksum or log with no Spark job. `DESCRIBE DETAIL` gives the same id and
    properties but also counts the table's files and bytes, which computes its state with a job.
    (A transaction is started only to get the latest snapshot; it commits nothing.)"""
    return delta_log(spark, path).startTransaction().snapshot().metadata()


def unprocessed_logs(
    spark,
    source: TableSpec,
    done: TableSpec,
    lake: str,
    stage: str | None = None,
    months: list | None = None,
):
    """log_ids (with job_month) in `source` that `done` does not hold yet: a stage's new work. With
    `stage`, the logs `ops/empty_logs` records that stage as having processed into this build of
    `done` without a row are not new work either. With `months` (job_months, None among them for
    logs without one), only those partitions of `source` and `done` are read: the months the
    commits since the stage's last run touched (`iolake.lake.changes.months_to_check`)."""
    import pyspark.sql.functions as F

    from schemas import OPS

    if months is not None and not months:
        return spark.createDataFrame([], "log_id string, job_month string")
    todo = read_or_empty(spark, source, lake)
    if months is not None:
        todo = todo.where(month_filter(months))
    todo = todo.select("log_id", "job_month").distinct()
    if table_exists(spark, done, lake):
        held = read_table(spark, done, lake)
        if months is not None:
            held = held.where(month_filter(months))
        todo = todo.join(held.select("log_id").distinct(), "log_id", "left_anti")
        marks = OPS["empty_logs"]
        if stage is not None and table_exists(spark, marks, lake):
            empty = read_table(spark, marks, lake).where(
                (F.col("stage") == stage) & (F.col("done_table_id") == table_id(spark, done, lake))
            )
            todo = todo.join(empty.select("log_id"), "log_id", "left_anti")
    return todo


def sorted_months(months) -> list:
    """`job_month`s oldest first, None (a log without a month) last."""
    return sorted(months, key=lambda m: (m is None, m or ""))


def months_text(months: list) -> str:
    """`months` as a run's log shows them: "2024-01, 2024-02", a log without one as "no month"."""
    return ", ".join(m or "no month" for m in months)


def month_filter(months: list):
    """`job_month IN (months)` (or null, when a new log has none): on a table partitioned by
    job_month, Delta reads only those partitions' files. A nightly drop holds a month or two of
    jobs, so without it every incremental stage would scan all of `io_ops` (one row per DXT
    segment) just to find the new logs' rows."""
    import pyspark.sql.functions as F

    known = [m for m in months if m is not None]
    cond = F.col("job_month").isin(known) if known else F.lit(False)
    return cond | F.col("job_month").isNull() if None in months else cond
