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

from iolake.lake.arrow import _local_files, _options

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


def coarse_rows(path: str, row_group_rows: int | None = None, storage_options=None) -> int:
    """Rows of the Delta table at `path` in row groups of more than `row_group_rows` rows: what a
    look-up by the sorted column may decode whole, row group by row group, since only a sorted
    rewrite makes row groups that small (Spark writes up to 128 MiB a row group, unsorted: a
    million-log ledger merged in one ingest is one row group). Reads the Parquet footers of the
    files holding more rows than that; after a rewrite they are the few files added since."""
    import pyarrow as pa

    row_group_rows = row_group_rows or ROW_GROUP_ROWS
    table = DeltaTable(path, storage_options=_options(path, storage_options))
    adds = pa.table(table.get_add_actions(flatten=True)).select(["path", "num_records"])
    big = {
        p
        for p, n in zip(adds["path"].to_pylist(), adds["num_records"].to_pylist())
        if n is None or n > row_group_rows
    }
    if not big:
        return 0
    coarse = 0
    for frag in table.to_pyarrow_dataset(filesystem=_local_files(table)).get_fragments():
        if frag.path not in big:
            continue
        md = frag.metadata  # the footer
        if any(md.row_group(i).num_rows > row_group_rows for i in range(md.num_row_groups)):
            coarse += md.num_rows
    return coarse


def keep_sorted(
    path: str,
    column: str,
    max_coarse_rows: int,
    user_metadata: str | None = None,
    storage_options: dict | None = None,
    row_group_rows: int | None = None,
) -> tuple[int, dict | None]:
    """`sort_rewrite` the table at `path` when more than `max_coarse_rows` of its rows lie in
    coarse row groups (`coarse_rows`; 0: never). Returns those rows and the rewrite's metrics
    (None when it was not needed). `row_group_rows`: ROW_GROUP_ROWS by default."""
    if not max_coarse_rows:
        return 0, None
    row_group_rows = row_group_rows or ROW_GROUP_ROWS
    coarse = coarse_rows(path, row_group_rows, storage_options)
    if coarse <= max_coarse_rows:
        return coarse, None
    return coarse, sort_rewrite(path, column, user_metadata, row_group_rows, storage_options)
