"""A table rewritten sorted by the one column it is looked up by, in small row groups, through
delta-rs: what `iolake maintain` does to tables whose `TableSpec.sorted_by` names a column
(bronze/logs by `log_id`, decision 0041).

Why not Spark's OPTIMIZE ZORDER BY: with one column Delta's Z-order range-partitions the rows
but does not sort them within a file, and Spark writes row groups of 128 MiB, so every row group
of the rewritten file spans the whole `log_id` range and a look-up of one log reads them all
(the ledger of 100,000 logs is one file of one row group). delta-rs' Z-order on one column is a
sort; with row groups of `ROW_GROUP_ROWS` rows a reader skips every row group whose min/max
statistics exclude the value (`iolake.lake.arrow.read` pushes the filter into the scan). The
commit is delta-rs' OPTIMIZE (files rearranged, no data change): a writer that commits rows
meanwhile conflicts with it only if it removed the same files, as with Spark's.
"""

from __future__ import annotations

from deltalake import CommitProperties, DeltaTable, WriterProperties

from iolake.lake.arrow import _options

ROW_GROUP_ROWS = 8_192  # rows per row group of a sorted rewrite: a look-up decodes ~1 MiB
COMPRESSION = "ZSTD"  # smaller than Spark's snappy files at these row groups, same read speed


def sort_rewrite(
    path: str,
    column: str,
    user_metadata: str | None = None,
    row_group_rows: int = ROW_GROUP_ROWS,
    storage_options: dict | None = None,
) -> dict:
    """Rewrite the Delta table at `path` sorted by `column` in row groups of `row_group_rows`
    rows; the commit carries `user_metadata` (the run's, as Spark's commits do). Returns
    delta-rs' OPTIMIZE metrics (files added and removed)."""
    table = DeltaTable(path, storage_options=_options(path, storage_options))
    commit = CommitProperties(
        custom_metadata={"userMetadata": user_metadata} if user_metadata else None
    )
    return table.optimize.z_order(
        [column],
        writer_properties=WriterProperties(
            max_row_group_size=row_group_rows, compression=COMPRESSION
        ),
        commit_properties=commit,
    )
