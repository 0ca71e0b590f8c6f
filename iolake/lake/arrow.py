"""Spark-free reads of the lake: a table's current snapshot as Arrow, through delta-rs (`deltalake`).

Everything that reads the lake without writing it comes here: `iolake report` (apps/report.py),
`IOFrame.from_lake` (apps/analysis) and the table versions of an `ops/runs` row (iolake/runs.py).
Why delta-rs: it replays the Delta log (checkpoints, commits) in Rust, so a read needs no JVM and
no Spark session and takes seconds, not the half minute a Spark session takes to start; and the
same call reads a local folder or any URI delta-rs understands (s3://, gs://, abfss://, ... with
`storage_options`, else credentials from the environment as delta-rs reads them).

How a table is read:
- as a pyarrow dataset (`DeltaTable.to_pyarrow_dataset()`): `columns` and `filter` (a
  `pyarrow.compute` / `pyarrow.dataset` expression) are pushed into the scan, so partition
  values and Parquet statistics prune files and row groups; a local table's files are read with
  pyarrow's own LocalFileSystem, an object store's through delta-rs' file system handler;
- through delta-rs' own engine (`DeltaTable.scan()`) when a dataset would return wrong rows:
  deletion vectors (rows deleted in place) and column mapping (renamed or dropped columns, which
  a dataset reads as nulls). `columns` are pushed into the engine; `filter` is applied to the
  streamed batches;
- a table needing a reader feature delta-rs lacks raises `UnreadableTable`, naming the table and
  the feature: never wrong rows.

A table no stage has written yet reads as no rows: an empty table of the spec's Arrow schema
(`exists` tells the two apart). `lake` is the lake root (a folder or URI; a `LakeConf` works too).

One job's rows (`read_logs`, `job_months`, `ledger_matches`): a per-job read costs in proportion
to the job, not the lake. The job's `job_month` is looked up first in bronze/logs (one row per log,
unpartitioned: only its `log_id` and `job_month` columns are read, filtered by log_id), then each
table partitioned by `job_month` is read with `job_month IN (...) AND log_id IN (...)`, so only
that month's files are opened (and, where the files' log_id statistics are narrow, only some of
them; see docs/decisions/0034-per-job-reads.md). A log the ledger does not hold is read without
the month filter, as before (never fewer rows); a quarantined log (no month) has no such rows.
"""

from __future__ import annotations

import os
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError
from deltalake.table import SUPPORTED_READER_FEATURES

from iolake.lake import objectstore
from schemas import TABLES, TableSpec

# reader features a pyarrow dataset reads right, as delta-rs itself declares them
DATASET_FEATURES = frozenset(SUPPORTED_READER_FEATURES)
# reader features that change which rows or columns a file holds: read through delta-rs' engine
ENGINE_FEATURES = frozenset({"deletionVectors", "columnMapping"})
MAX_READER_VERSION = 3


class UnreadableTable(RuntimeError):
    """delta-rs cannot read the table (a reader feature it lacks)."""


def root(lake) -> str:
    """The lake root as delta-rs takes it: a URI as given (`s3a://` as `s3://`), a local path
    made absolute."""
    if not isinstance(lake, (str, os.PathLike)):  # a LakeConf (a Path's `.root` is its anchor)
        lake = lake.root
    lake = os.fspath(lake)
    return objectstore.delta_rs_uri(lake) if "://" in lake else os.path.abspath(lake)


def _options(path: str, storage_options: dict | None) -> dict | None:
    """The caller's options, else what an S3-compatible endpoint in the environment needs."""
    return storage_options if storage_options is not None else objectstore.storage_options(path)


def _label(spec: TableSpec) -> str:
    return f"{spec.layer}/{spec.name}"


def open_table(lake, spec: TableSpec, storage_options: dict | None = None) -> DeltaTable | None:
    """The table's latest snapshot, or None when the lake has no such table (yet)."""
    try:
        path = spec.path(root(lake))
        return DeltaTable(path, storage_options=_options(path, storage_options))
    except TableNotFoundError:
        return None


def exists(lake, spec: TableSpec, storage_options: dict | None = None) -> bool:
    path = spec.path(root(lake))
    return DeltaTable.is_deltatable(path, storage_options=_options(path, storage_options))


def version(lake, spec: TableSpec, storage_options: dict | None = None) -> int | None:
    """The table's latest Delta version, or None when it does not exist."""
    table = open_table(lake, spec, storage_options)
    return None if table is None else table.version()


def versions(lake, storage_options: dict | None = None) -> dict[str, int]:
    """`layer/name` -> latest Delta version of every table of the lake but `ops/runs` (the table
    recording them); tables not written yet are left out."""
    out = {}
    for spec in TABLES.values():
        if (spec.layer, spec.name) == ("ops", "runs"):
            continue
        v = version(lake, spec, storage_options)
        if v is not None:
            out[_label(spec)] = v
    return out


def read(
    lake,
    spec: TableSpec,
    columns: list[str] | None = None,
    filter: ds.Expression | None = None,
    storage_options: dict | None = None,
    prune: list[tuple] | None = None,
) -> pa.Table:
    """The current rows of `spec`'s table: only `columns` (None: all, in table order), only rows
    matching `filter`. `prune`: (column, op, value) tuples delta-rs selects files by before the
    dataset is built (partition values exactly, other columns by the files' min/max statistics);
    it must keep every file `filter` needs. A table that does not exist yet gives an empty table
    of `spec.arrow_schema` (projected on `columns`). Raises `UnreadableTable` if delta-rs cannot
    read the table."""
    table = open_table(lake, spec, storage_options)
    if table is None:
        return empty(spec, columns)
    return read_table(table, columns, filter, _label(spec), prune)


def empty(spec: TableSpec, columns: list[str] | None = None) -> pa.Table:
    """No rows, typed as `read` types `spec`'s table (projected on `columns`): what a table no
    stage has written yet reads as."""
    table = spec.arrow_schema.empty_table()
    return table.select(columns) if columns is not None else table


def read_table(
    table: DeltaTable,
    columns: list[str] | None = None,
    filter: ds.Expression | None = None,
    label: str | None = None,
    prune: list[tuple] | None = None,
) -> pa.Table:
    """`read` of an opened `DeltaTable` (`label` names it in errors)."""
    label = label or table.table_uri
    protocol = table.protocol()
    features = set(protocol.reader_features or ())
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnreadableTable(
            f"{label}: delta-rs {deltalake.__version__} reads Delta reader version "
            f"{MAX_READER_VERSION} at most; the table requires {protocol.min_reader_version}"
        )
    mapped = table.metadata().configuration.get("delta.columnMapping.mode", "none") != "none"
    if not mapped and features <= DATASET_FEATURES:
        dataset = table.to_pyarrow_dataset(
            file_pruning_predicate=prune or None, filesystem=_local_files(table)
        )
        return dataset.to_table(columns=columns, filter=filter)
    try:
        return _engine_scan(table, columns, filter)
    except DeltaError as e:
        lacking = sorted(features - DATASET_FEATURES - ENGINE_FEATURES) or sorted(features)
        lacking = [
            f for f in lacking if f.lower() in str(e).lower()
        ] or lacking  # the ones delta-rs names
        raise UnreadableTable(
            f"{label}: delta-rs {deltalake.__version__} cannot read this table: it requires "
            f"reader feature(s) {', '.join(lacking)} ({e})"
        ) from e


def _local_files(table: DeltaTable) -> pafs.FileSystem | None:
    """A local table's folder as pyarrow's own file system; None (delta-rs' file system handler)
    for object stores. The handler serves pyarrow's I/O threads through Python callbacks, and a
    process that scanned through it aborted at exit one time in six ("terminate called without
    an active exception", exit 134: apache/arrow#34314), after its work was done."""
    uri = table.table_uri
    if not uri.startswith("file://"):
        return None
    return pafs.SubTreeFileSystem(unquote(uri[len("file://") :]), pafs.LocalFileSystem())


def _engine_scan(table: DeltaTable, columns, filter) -> pa.Table:
    """Rows through delta-rs' engine (deletion vectors applied, mapped columns by logical name),
    typed as a dataset read would type them (string, not string_view)."""
    schema = pa.schema(
        [f.remove_metadata() for f in pa.schema(table.schema().to_arrow())]
    )  # no physical names
    scan_columns = columns if filter is None else None  # the filter may need other columns
    want = schema if scan_columns is None else pa.schema([schema.field(c) for c in scan_columns])

    def batches():
        for batch in pa.RecordBatchReader.from_stream(table.scan(columns=scan_columns)):
            yield batch.select(want.names).cast(want)

    return ds.Scanner.from_batches(
        batches(), schema=want, columns=columns, filter=filter
    ).to_table()


# ---- one job's rows ----------------------------------------------------------------------
LEDGER = "logs"  # bronze/logs: log_id -> job_month, one row per log
LEDGER_COLUMNS = ["log_id", "job_month", "status", "reason", "source_uri"]


def _strings(values) -> pa.Array:
    return pa.array(list(values), pa.string())  # typed even when empty


def job_months(lake, log_ids, storage_options: dict | None = None) -> dict[str, str | None]:
    """log_id -> job_month of each of `log_ids` that bronze/logs holds (None: a quarantined log,
    which has no month and no rows elsewhere). Reads only those two columns of the rows asked for."""
    ids = list(dict.fromkeys(log_ids))
    if not ids:
        return {}
    t = read(
        lake,
        TABLES[LEDGER],
        ["log_id", "job_month"],
        pc.field("log_id").isin(_strings(ids)),
        storage_options,
    )
    return months_of(t)


def months_of(ledger: pa.Table) -> dict[str, str | None]:
    """log_id -> job_month of bronze/logs rows (the columns `log_id` and `job_month`)."""
    return dict(zip(ledger.column("log_id").to_pylist(), ledger.column("job_month").to_pylist()))


def _ledger_read(lake, columns, filter, storage_options, table: DeltaTable | None) -> pa.Table:
    """`read` of bronze/logs, from `table` (its snapshot, already opened) when given."""
    spec = TABLES[LEDGER]
    if table is None:
        return read(lake, spec, columns, filter, storage_options)
    return read_table(table, columns, filter, _label(spec))


def ledger_matches(
    lake,
    prefix: str,
    columns: list[str] | None = LEDGER_COLUMNS,
    storage_options: dict | None = None,
    table: DeltaTable | None = None,
) -> pa.Table:
    """bronze/logs rows whose log_id starts with `prefix` (lower-cased; a whole log_id matches
    itself): `columns` (default LEDGER_COLUMNS; None: every column). No rows when the lake has no
    ledger yet. `table`: the ledger's snapshot when the caller holds it open (a look-up that
    reads the ledger several times opens it once)."""
    prefix = prefix.strip().lower()
    cols = None if columns is None else list(columns)
    return _ledger_read(lake, cols, prefix_filter("log_id", prefix), storage_options, table)


def ledger_has_jobids(
    lake, storage_options: dict | None = None, table: DeltaTable | None = None
) -> bool:
    """Does every bronze/logs row carry its log's jobid (the table property `JOBID_FILLED`,
    schemas/logs.py)? False for a ledger from before the column, until ingest has filled it.
    `table`: the ledger's snapshot when the caller holds it open."""
    from schemas.logs import JOBID_FILLED

    if table is None:
        table = open_table(lake, TABLES[LEDGER], storage_options)
    if table is None:
        return False
    return table.metadata().configuration.get(JOBID_FILLED) == "true"


def ledger_by_jobid(
    lake, jobid: int, storage_options: dict | None = None, table: DeltaTable | None = None
) -> pa.Table:
    """bronze/logs' log_id, job_month and jobid of the logs whose jobid is `jobid`: reads those
    three columns of the ledger (its rows are sorted by log_id, so every row group's jobids span
    the range and none is skipped: a few MB per 100,000 logs). Only meaningful when
    `ledger_has_jobids`. `table`: the ledger's snapshot when the caller holds it open."""
    where = pc.field("jobid") == pa.scalar(int(jobid), pa.int64())
    return _ledger_read(lake, ["log_id", "job_month", "jobid"], where, storage_options, table)


def prefix_filter(column: str, prefix: str) -> ds.Expression:
    """`column` starts with `prefix`, also written as the range [prefix, next prefix) so that
    files and row groups whose min/max statistics lie outside it are skipped (`starts_with`
    alone reads them all)."""
    where = pc.starts_with(pc.field(column), prefix)
    if not prefix:
        return where
    where = where & (pc.field(column) >= prefix)
    last = ord(prefix[-1])
    if last < 0x10FFFF:  # the first string after every one with this prefix
        where = where & (pc.field(column) < prefix[:-1] + chr(last + 1))
    return where


def log_filter(
    spec: TableSpec, log_ids, months: dict[str, str | None] | None
) -> tuple[ds.Expression, list[tuple]] | None:
    """The row filter and the file-pruning tuples that keep `log_ids`' rows of `spec`'s table:
    `log_id IN (...)`, with `job_month IN (...)` first when the table is partitioned by month and
    `months` places every log (ids the ledger lacks: no month filter, so no row is lost). delta-rs
    drops the other months' files, and files whose log_id min/max statistics exclude the ids.
    None: no log can have rows here (every one quarantined)."""
    ids = list(dict.fromkeys(log_ids))
    if not ids:
        return pc.field("log_id").isin(_strings([])), []
    by_month = "job_month" in spec.partition_by and months is not None
    if by_month and all(i in months for i in ids):
        ids = [i for i in ids if months[i] is not None]
        if not ids:
            return None
        wanted = sorted({months[i] for i in ids})
        where = pc.field("job_month").isin(wanted) & pc.field("log_id").isin(_strings(ids))
        return where, [("job_month", "in", wanted), ("log_id", "in", ids)]
    # a log the ledger does not hold, or a table not partitioned by month: every partition
    return pc.field("log_id").isin(_strings(ids)), [("log_id", "in", ids)]


def read_logs(
    lake,
    spec: TableSpec,
    log_ids,
    columns: list[str] | None = None,
    filter: ds.Expression | None = None,
    storage_options: dict | None = None,
    months: dict[str, str | None] | None = None,
) -> pa.Table:
    """`read` of the rows of `log_ids` only (a str: one log), pruned to their months. `months`
    (log_id -> job_month, from `job_months`) saves the look-up when a caller reads several
    tables of the same logs; None: looked up here."""
    ids = [log_ids] if isinstance(log_ids, str) else list(dict.fromkeys(log_ids))
    if months is None and "job_month" in spec.partition_by and ids:
        months = job_months(lake, ids, storage_options)  # {} without a ledger: no pruning
    found = log_filter(spec, ids, months)
    if found is None:  # only quarantined logs: they have no rows here
        found = pc.field("log_id").isin(_strings([])), []
    where, prune = found
    where = where if filter is None else filter & where
    return read(lake, spec, columns, where, storage_options, prune)


__all__ = [
    "LEDGER_COLUMNS",
    "UnreadableTable",
    "empty",
    "exists",
    "job_months",
    "ledger_by_jobid",
    "ledger_has_jobids",
    "ledger_matches",
    "log_filter",
    "months_of",
    "open_table",
    "prefix_filter",
    "read",
    "read_logs",
    "read_table",
    "root",
    "version",
    "versions",
]
