"""The one way to the lake: Spark reads and the gated writer (`delta`, `writer`, and `files` for
ingest's staged Parquet), Spark-free reads through delta-rs (`arrow`). Every stage, feature and
test reaches tables through here."""

from iolake.gates import GateFailed
from iolake.lake.delta import (
    CREATE_RACE,
    CREATE_RETRYABLE,
    RETRYABLE,
    SchemaConflict,
    commit_metadata,
    delta_id,
    ensure_table,
    fill_once,
    merge_new_logs,
    read_or_empty,
    read_table,
    schema_changes,
    table_exists,
    table_id,
    table_version,
    unprocessed_logs,
    with_retries,
)

__all__ = [
    "CREATE_RACE",
    "CREATE_RETRYABLE",
    "RETRYABLE",
    "GateFailed",
    "SchemaConflict",
    "commit_metadata",
    "delta_id",
    "ensure_table",
    "fill_once",
    "merge_new_logs",
    "read_or_empty",
    "read_table",
    "schema_changes",
    "table_exists",
    "table_id",
    "table_version",
    "unprocessed_logs",
    "with_retries",
]
