"""Helpers every decoder uses to emit rows with exactly the bronze Arrow schemas."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa

from schemas import BRONZE
from schemas.darshan_counters import MODULE_COUNTERS


def build_table(table: str, columns: Mapping[str, object]) -> pa.Table:
    """A table with the decoded schema of `table`; columns not given are all-null."""
    schema = BRONZE[table].decoded_arrow_schema
    n = None
    for v in columns.values():
        n = len(v)
        break
    n = n or 0
    arrays = []
    for field in schema:
        if field.name in columns:
            arrays.append(pa.array(columns[field.name], type=field.type))
        else:
            arrays.append(pa.nulls(n, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def empty_table(table: str) -> pa.Table:
    return BRONZE[table].decoded_arrow_schema.empty_table()


def module_table_rows(
    table: str, records: Iterable[tuple[int, int, np.ndarray, np.ndarray]]
) -> pa.Table:
    """Rows of a module table from (record_id uint64, rank, counters[], fcounters[]) tuples."""
    _, counters, fcounters = MODULE_COUNTERS[table]
    records = list(records)
    if not records:
        return empty_table(table)
    ids = np.array([r[0] for r in records], dtype=np.uint64).view(np.int64)
    ranks = np.array([r[1] for r in records], dtype=np.int64)
    ints = np.vstack([np.asarray(r[2], dtype=np.int64) for r in records])
    floats = np.vstack([np.asarray(r[3], dtype=np.float64) for r in records])
    cols: dict[str, object] = {"record_id": ids, "rank": ranks}
    for i, name in enumerate(counters):
        cols[name] = ints[:, i] if i < ints.shape[1] else pa.nulls(len(records), pa.int64())
    for i, name in enumerate(fcounters):
        cols[name] = floats[:, i] if i < floats.shape[1] else pa.nulls(len(records), pa.float64())
    return build_table(table, cols)


def mount_of(path: str, mounts: list[dict]) -> dict | None:
    """The mount entry with the longest mount point that is a path prefix of `path`."""
    best = None
    for m in mounts:
        mp = m["mount_point"]
        if path == mp or path.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(best["mount_point"]):
                best = m
    return best


def attach_mounts(files: pa.Table, mounts: list[dict]) -> pa.Table:
    names = files.column("name").to_pylist()
    found = [mount_of(n or "", mounts) for n in names]
    mp = pa.array([f["mount_point"] if f else None for f in found], pa.string())
    fs = pa.array([f["fs_type"] if f else None for f in found], pa.string())
    files = files.set_column(files.schema.get_field_index("mount_point"), "mount_point", mp)
    return files.set_column(files.schema.get_field_index("fs_type"), "fs_type", fs)


def heatmap_module(name: str | None, record_id: int) -> str:
    """The module a HEATMAP record is about: Darshan names it `heatmap:<MODULE>` (POSIX, MPIIO,
    STDIO, DFS, DAOS); a record without that name keeps its id, as pydarshan does."""
    if name and name.startswith("heatmap:"):
        return name.split(":", 1)[1]
    return str(record_id)
