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
  values and Parquet statistics prune files and row groups;
- through delta-rs' own engine (`DeltaTable.scan()`) when a dataset would return wrong rows:
  deletion vectors (rows deleted in place) and column mapping (renamed or dropped columns, which
  a dataset reads as nulls). `columns` are pushed into the engine; `filter` is applied to the
  streamed batches;
- a table needing a reader feature delta-rs lacks raises `UnreadableTable`, naming the table and
  the feature: never wrong rows.

A table no stage has written yet reads as no rows: an empty table of the spec's Arrow schema
(`exists` tells the two apart). `lake` is the lake root (a folder or URI; a `LakeConf` works too).
"""

from __future__ import annotations

import os

import deltalake
import pyarrow as pa
import pyarrow.dataset as ds
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
    lake = os.fspath(getattr(lake, "root", lake))
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
) -> pa.Table:
    """The current rows of `spec`'s table: only `columns` (None: all, in table order), only rows
    matching `filter`. A table that does not exist yet gives an empty table of `spec.arrow_schema`
    (projected on `columns`). Raises `UnreadableTable` if delta-rs cannot read the table."""
    table = open_table(lake, spec, storage_options)
    if table is None:
        empty = spec.arrow_schema.empty_table()
        return empty.select(columns) if columns is not None else empty
    return read_table(table, columns, filter, _label(spec))


def read_table(
    table: DeltaTable,
    columns: list[str] | None = None,
    filter: ds.Expression | None = None,
    label: str | None = None,
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
        return table.to_pyarrow_dataset().to_table(columns=columns, filter=filter)
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


__all__ = [
    "UnreadableTable",
    "exists",
    "open_table",
    "read",
    "read_table",
    "root",
    "version",
    "versions",
]
