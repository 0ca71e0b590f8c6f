"""Read a Delta table's current snapshot without Spark: replay `_delta_log`, read the live Parquet.

A Delta folder holds Parquet files of every version; only the transaction log says which are
live. `live_files` replays it: the last checkpoint (`_last_checkpoint` -> one or several
`<version>.checkpoint[.<part>.<parts>].parquet`), then every `<version>.json` commit after it,
applying `add` and `remove` actions in version order. `read_delta` reads those files with
pyarrow and puts back the partition columns (Delta keeps them in the log, not in the files).

Limits, each raising `UnsupportedDelta` rather than returning wrong rows: deletion vectors
(an `add` carrying a `deletionVector`), column mapping (`delta.columnMapping.mode` other than
`none`), V2 checkpoints (`<version>.checkpoint.<uuid>.parquet` with sidecars). Time travel,
log compaction files and change data feed are not read. Local paths only.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

COMMIT = re.compile(r"^(\d{20})\.json$")
CLASSIC_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10})?\.parquet$")


class UnsupportedDelta(ValueError):
    """The table uses a Delta feature this reader does not implement."""


@dataclass
class Snapshot:
    version: int
    files: dict[str, dict] = field(default_factory=dict)  # absolute path -> partitionValues
    partition_columns: list[str] = field(default_factory=list)
    schema_string: str | None = None


def _as_dict(m) -> dict:
    """A map from a JSON commit (dict) or a checkpoint's Parquet map column ((key, value) pairs)."""
    return dict(m) if m else {}


def _abs(table_path: str, path: str) -> str:
    parsed = urlparse(path)
    if parsed.scheme in ("file", ""):
        path = unquote(parsed.path) if parsed.scheme else unquote(path)
        return path if os.path.isabs(path) else os.path.join(table_path, path)
    raise UnsupportedDelta(f"file outside the local filesystem: {path}")


class _Replay:
    def __init__(self, table_path: str):
        self.table_path = table_path
        self.snap = Snapshot(version=-1)

    def metadata(self, meta: dict) -> None:
        conf = _as_dict(meta.get("configuration"))
        if conf.get("delta.columnMapping.mode", "none") != "none":
            raise UnsupportedDelta("column mapping is not supported")
        self.snap.partition_columns = list(meta.get("partitionColumns") or [])
        self.snap.schema_string = meta.get("schemaString")

    def add(self, a: dict) -> None:
        if a.get("deletionVector"):
            raise UnsupportedDelta(f"deletion vectors are not supported ({a['path']})")
        self.snap.files[_abs(self.table_path, a["path"])] = _as_dict(a.get("partitionValues"))

    def remove(self, r: dict) -> None:
        self.snap.files.pop(_abs(self.table_path, r["path"]), None)

    def action(self, act: dict) -> None:
        if act.get("metaData"):
            self.metadata(act["metaData"])
        if act.get("add"):
            self.add(act["add"])
        if act.get("remove"):
            self.remove(act["remove"])


def _checkpoint_files(log: str, names: list[str]) -> tuple[int, list[str]]:
    """The newest complete classic checkpoint: (version, its parquet parts), or (-1, [])."""
    by_version: dict[int, list[str]] = {}
    for n in names:
        if m := CLASSIC_CHECKPOINT.match(n):
            by_version.setdefault(int(m.group(1)), []).append(n)
        elif ".checkpoint." in n and n.endswith(".parquet"):
            raise UnsupportedDelta(f"V2 checkpoints are not supported ({n})")
    hint = os.path.join(log, "_last_checkpoint")
    if os.path.exists(hint):  # the writer's word on which checkpoint is complete
        with open(hint) as fh:
            last = json.load(fh)
        v, parts = int(last["version"]), int(last.get("parts") or 1)
        if len(by_version.get(v, ())) == parts:
            return v, [os.path.join(log, p) for p in sorted(by_version[v])]
    for v in sorted(by_version, reverse=True):  # no hint: a single-file one, or all parts present
        files = by_version[v]
        n_parts = int(files[0].split(".")[-2]) if len(files[0].split(".")) == 5 else 1
        if len(files) == n_parts:
            return v, [os.path.join(log, p) for p in sorted(files)]
    return -1, []


def snapshot(table_path: str) -> Snapshot:
    """Replay the log of the Delta table at `table_path` (a local folder) to its latest version."""
    table_path = os.path.abspath(table_path)
    log = os.path.join(table_path, "_delta_log")
    if not os.path.isdir(log):
        raise FileNotFoundError(f"{table_path} is not a Delta table (no _delta_log)")
    names = os.listdir(log)
    replay = _Replay(table_path)
    cp_version, cp_files = _checkpoint_files(log, names)
    if cp_files:
        cols = ["metaData", "add", "remove"]
        for f in cp_files:
            have = [c for c in cols if c in pq.read_schema(f).names]
            for act in pq.read_table(f, columns=have).to_pylist():
                replay.action(act)
    commits = sorted((int(m.group(1)), n) for n in names if (m := COMMIT.match(n)))
    version = cp_version
    for v, name in commits:
        if v <= cp_version:
            continue
        if v != version + 1:
            raise UnsupportedDelta(f"log gap: version {version} then {v} (expired commits?)")
        with open(os.path.join(log, name)) as fh:
            for line in fh:
                if line.strip():
                    replay.action(json.loads(line))
        version = v
    replay.snap.version = version
    return replay.snap


def live_files(table_path: str) -> list[str]:
    """Absolute paths of the Parquet files of the table's current version, sorted."""
    return sorted(snapshot(table_path).files)


def read_delta(table_path: str, columns: list[str] | None = None, filter=None) -> pa.Table:
    """The table's current rows (optionally only `columns`, and rows matching a `pyarrow.dataset`
    expression `filter`, pushed down to partitions and Parquet row-group statistics)."""
    snap = snapshot(table_path)
    schema = _arrow_schema(snap.schema_string)
    paths = sorted(snap.files)
    # partition values live in the log: hand them to the dataset as per-file expressions
    exprs = []
    for p in paths:
        e = ds.scalar(True)
        for c in snap.partition_columns:
            v = snap.files[p].get(c)
            typ = schema.field(c).type
            e = e & (ds.field(c).is_null() if v is None else ds.field(c) == pa.scalar(v).cast(typ))
        exprs.append(e)
    dataset = ds.FileSystemDataset.from_paths(
        paths, schema=schema, format=ds.ParquetFileFormat(), filesystem=pafs.LocalFileSystem(),
        partitions=exprs)
    return dataset.to_table(columns=columns, filter=filter)


def _arrow_schema(schema_string: str | None) -> pa.Schema:
    if not schema_string:
        raise UnsupportedDelta("the log has no metaData schema")
    return pa.schema([pa.field(f["name"], _arrow_type(f["type"]), f.get("nullable", True))
                      for f in json.loads(schema_string)["fields"]])


_PRIMITIVE = {
    "string": pa.string(), "long": pa.int64(), "integer": pa.int32(), "short": pa.int16(),
    "byte": pa.int8(), "double": pa.float64(), "float": pa.float32(), "boolean": pa.bool_(),
    "binary": pa.binary(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


def _arrow_type(t) -> pa.DataType:
    if isinstance(t, str):
        if t in _PRIMITIVE:
            return _PRIMITIVE[t]
        if m := re.match(r"decimal\((\d+),\s*(\d+)\)", t):
            return pa.decimal128(int(m.group(1)), int(m.group(2)))
        raise UnsupportedDelta(f"type {t!r}")
    kind = t["type"]
    if kind == "array":
        return pa.list_(_arrow_type(t["elementType"]))
    if kind == "map":
        return pa.map_(_arrow_type(t["keyType"]), _arrow_type(t["valueType"]))
    if kind == "struct":
        return pa.struct([pa.field(f["name"], _arrow_type(f["type"]), f.get("nullable", True)) for f in t["fields"]])
    raise UnsupportedDelta(f"type {kind!r}")


__all__ = ["UnsupportedDelta", "live_files", "read_delta", "snapshot"]
