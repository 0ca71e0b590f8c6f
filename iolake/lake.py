"""Delta table helpers: create from a `TableSpec`, commit exactly once, stamp every commit.

Exactly-once: every bronze write is an insert-only MERGE keyed on (job_month, log_id) — a log's
rows land in a table in one commit or not at all, and a log already present is never
inserted again. A commit that loses a race to a concurrent run (Delta's optimistic
concurrency) is retried; the retry sees the winner's rows and inserts only what is missing.
"""
from __future__ import annotations

import json
import random
import time

from schemas import TableSpec

RETRYABLE = ("Concurrent", "DELTA_CONCURRENT", "ProtocolChanged", "MetadataChanged",
             "DELTA_METADATA_CHANGED", "DELTA_PROTOCOL_CHANGED", "already exists")


class GateFailed(RuntimeError):
    pass


def commit_metadata(spark, run_id: str, conf_digest: str, stage: str, git_sha: str) -> None:
    """Every Delta commit of this session now carries the run id, git sha and config hash."""
    meta = {"run_id": run_id, "stage": stage, "git_sha": git_sha, "config": conf_digest}
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", json.dumps(meta, sort_keys=True))


def with_retries(fn, retries: int, what: str):
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as e:  # Delta raises JVM exceptions wrapped in several Python types
            text = f"{type(e).__name__}: {e}"
            if attempt == retries or not any(tok in text for tok in RETRYABLE):
                raise
            time.sleep(min(8.0, 0.25 * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")


def ensure_table(spark, spec: TableSpec, lake: str, retries: int = 8):
    from delta.tables import DeltaTable

    path = spec.path(lake)

    def create():
        b = DeltaTable.createIfNotExists(spark).location(path).addColumns(spec.struct)
        if spec.partition_by:
            b = b.partitionedBy(*spec.partition_by)
        for k, v in spec.properties.items():
            b = b.property(k, v)
        if spec.doc:
            b = b.comment(spec.doc.strip().splitlines()[0][:200])
        return b.execute()

    return with_retries(create, retries, f"create {spec.name}")


def merge_new_logs(spark, spec: TableSpec, lake: str, df, retries: int = 8) -> None:
    """Insert the rows of logs the table does not hold yet (keyed by job_month + log_id)."""
    from delta.tables import DeltaTable

    ensure_table(spark, spec, lake, retries)
    cond = " AND ".join(
        [f"t.{c} = s.{c}" for c in ("job_month", "log_id") if c in spec.columns]
    )
    if spec.name == "logs":
        cond = "t.log_id = s.log_id"

    def merge():
        target = DeltaTable.forPath(spark, spec.path(lake))
        target.alias("t").merge(df.alias("s"), cond).whenNotMatchedInsertAll().execute()

    with_retries(merge, retries, f"merge {spec.name}")


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


def unprocessed_logs(spark, source: TableSpec, done: TableSpec, lake: str):
    """log_ids (with job_month) in `source` that `done` does not hold yet: a stage's new work."""
    todo = read_or_empty(spark, source, lake).select("log_id", "job_month").distinct()
    if table_exists(spark, done, lake):
        todo = todo.join(read_table(spark, done, lake).select("log_id").distinct(), "log_id", "left_anti")
    return todo
