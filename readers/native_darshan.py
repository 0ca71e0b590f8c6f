"""The native Darshan decoder: `iolake_native` (Rust, PyO3) -> bronze Arrow tables.

Memory-safe and in-process: the Rust side bounds every read, caps decompressed sizes
(a decompression bomb is a `ResourceLimit`), never panics across into Python, and hands back
little-endian column buffers that become pyarrow arrays here without a copy (a counter table
as one Arrow IPC record-batch message, read in one call: docs/decisions/0035). Its tables equal
the pydarshan decoder's (`readers.pydarshan_decoder`) on every log pydarshan reads; it also
reads bzip2-compressed and big-endian logs. Darshan 1.x/2.x logs raise `UnsupportedFormat`.

Huge DXT traces: when a log's DXT regions (compressed) exceed `STREAM_DXT_OVER` bytes, the
decode only scans them (same notes, damage and errors, nothing kept) and `Decoded.streams
["io_ops"]` yields their rows in record batches of at most `batch_rows` rows, each decoded from
one chunk of the region at a time, so no one holds every segment at once. Streamed bytes are not
charged to the 1 GiB in-memory cap but to their own (`ratio` x file size, and `stream_cap`).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from functools import cache, partial

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.ipc  # noqa: F401  (pa.ipc)

from readers.base import Decoded, DecodeError, DecoderCrash, ResourceLimit, UnsupportedFormat
from readers.tables import heatmap_module
from schemas import BRONZE
from schemas.autoperf import (
    APMPI_OPS,
    APXC_COLUMN,
    APXC_TILES,
    CLUSTER_MODES,
    MEMORY_MODES,
    MSG_SIZE_BINS,
    MSG_SIZE_COLUMNS,
    apmpi_counter_names,
    apmpi_fcounter_names,
)
from schemas.darshan_counters import LUSTRE_COMPONENT_COUNTERS, MODULE_COUNTERS
from schemas.modules import DARSHAN_MODULE_TABLE

try:  # the extension is built from native/ (`pip install ./native`)
    import iolake_native as _native
except ImportError as exc:  # pragma: no cover - depends on the environment
    _native = None
    _IMPORT_ERROR = exc

DECODER = "iolake-native-" + (getattr(_native, "__version__", "?") if _native else "?")
COMPRESSION = {0: "zlib", 1: "bzip2", 2: "none"}
# stream the DXT modules of logs whose DXT regions exceed this (compressed bytes, together): below
# it a whole decode is faster (the stream inflates twice: a scan in the decode, then the rows)
STREAM_DXT_OVER = 4 << 20
BATCH_ROWS = 1 << 19
_ERRORS = {
    "corrupt": DecodeError,
    "unsupported": UnsupportedFormat,
    "limit": ResourceLimit,
    "crash": DecoderCrash,
}


@cache
def _schema(table: str) -> pa.Schema:
    return BRONZE[table].decoded_arrow_schema


def _i64(buf, n: int) -> pa.Array:
    return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(buf)])


def _columns(typ: pa.DataType, buf, ncols: int, n: int) -> list[pa.Array]:
    """`ncols` columns of `n` values stored one after the other (column-major) in `buf`."""
    whole = pa.Array.from_buffers(typ, ncols * n, [None, pa.py_buffer(buf)])
    return [whole.slice(i * n, n) for i in range(ncols)]


def _strings(pair, n: int) -> pa.Array:
    offsets, data = pair
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _read_bytes(source) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    path = os.fspath(source)
    with open(path, "rb") as fh:
        return fh.read()


def _native_error(err) -> DecodeError:
    kind, msg = err.args if len(err.args) == 2 else ("corrupt", str(err))
    return _ERRORS.get(kind, DecodeError)(msg)


# glibc malloc's mallopt parameters (malloc.h) and the values set once a process decodes
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TRIM_THRESHOLD, _MMAP_THRESHOLD = 64 << 20, 16 << 20


@cache
def _keep_freed_memory() -> bool:
    """Lets glibc keep freed memory for the next log instead of returning it to the kernel.

    A decode allocates and frees megabytes of columns (Rust's, then Python's bytes); with glibc's
    defaults (a trim threshold that follows the mmap one, from 128 KiB) much of it goes back to
    the kernel each time, and the next log's pages are faulted in and zeroed anew. Fixed
    thresholds (64 MiB kept at the heap top, mmap only over 16 MiB) make later logs reuse them
    (docs/decisions/0038). Once per process; a no-op (False) off glibc.
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )


def _decode_raw(data: bytes, **limits) -> dict:
    if _native is None:
        raise DecoderCrash(
            f"iolake_native is not installed (pip install ./native): {_IMPORT_ERROR}"
        )
    _keep_freed_memory()
    layout = _apmpi_native_layout()
    if layout is not None:
        limits["apmpi_layout"] = layout
    try:
        return _native.decode_log(data, **limits)
    except _native.NativeDecodeError as err:
        raise _native_error(err) from None


def _batch_table(table: str, message: bytes) -> pa.Table:
    """A table from one Arrow IPC record-batch message written by the extension, read in one
    call with the bronze schema (docs/decisions/0035)."""
    schema = _schema(table)
    batch = pa.ipc.read_record_batch(pa.py_buffer(message), schema)
    return pa.Table.from_batches([batch], schema=schema)


def _counter_table(table: str, t: dict) -> pa.Table:
    """A counter table from its Arrow IPC record batch (ids, ranks, then every counter column)."""
    _, counters, fcounters = MODULE_COUNTERS[table]
    if t["nints"] != len(counters) or t["nflts"] != len(fcounters):
        raise DecoderCrash(f"native decoder and schema disagree on the {table} counters")
    return _batch_table(table, t["batch"])


def _lustre_table(t: dict) -> pa.Table:
    """bronze/lustre from the column buffers of an extension built before it wrote the table as
    an IPC record batch."""
    n = t["n"]
    arrays = [
        _i64(t["record_id"], n),
        _i64(t["rank"], n),
        pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(t["component"])]),
    ]
    arrays += _columns(pa.int64(), t["counters"], len(LUSTRE_COMPONENT_COUNTERS), n)
    arrays.append(_strings(t["pool_name"], n))
    offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(t["ost_offsets"])])
    values = pa.Array.from_buffers(
        pa.int64(), len(t["ost_ids"]) // 8, [None, pa.py_buffer(t["ost_ids"])]
    )
    arrays.append(pa.ListArray.from_arrays(offsets, values))
    return pa.Table.from_arrays(arrays, schema=_schema("lustre"))


def _heatmap_table(t: dict, names: dict[int, str]) -> pa.Table:
    n = t["n"]
    ids = _i64(t["record_id"], n)
    offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(t["offsets"])])

    def bins(key: str) -> pa.Array:
        values = pa.Array.from_buffers(pa.int64(), len(t[key]) // 8, [None, pa.py_buffer(t[key])])
        return pa.ListArray.from_arrays(offsets, values)

    cols = {
        "record_id": ids,
        "module": pa.array([heatmap_module(names.get(i), i) for i in ids.to_pylist()], pa.string()),
        "rank": _i64(t["rank"], n),
        "bin_width_s": pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(t["width"])]),
        "nbins": _i64(t["nbins"], n),
        "read_bytes": bins("read"),
        "write_bytes": bins("write"),
    }
    schema = _schema("heatmap")
    return pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema)


def _names_by_index(t: dict, key: str, names: list[str], typ: pa.DataType) -> pa.Array:
    """An io_ops string column from an extension built before 0038 (index buffers, gathered
    here), so that a checkout whose extension is not yet rebuilt still decodes."""
    return pa.array(names, pa.string()).take(
        pa.Array.from_buffers(typ, t["n"], [None, pa.py_buffer(t[key])])
    )


# io_ops' all-null columns are slices of arrays kept for up to this many rows (larger: made anew)
_NULLS_KEPT = 1 << 20
_nulls_kept: dict[pa.DataType, pa.Array] = {}


def _nulls(n: int, typ: pa.DataType) -> pa.Array:
    """`n` nulls of `typ`: a slice of one all-null array kept per type (grown as needed, up to
    `_NULLS_KEPT` rows), so that a decode does not allocate and zero a buffer of `n` values
    for a column that holds none."""
    if n > _NULLS_KEPT:
        return pa.nulls(n, typ)
    kept = _nulls_kept.get(typ)
    if kept is None or len(kept) < n:
        size = 1 << max(n - 1, 1023).bit_length()
        kept = _nulls_kept[typ] = pa.nulls(min(size, _NULLS_KEPT), typ)
    return kept.slice(0, n)


def _io_ops_arrays(t: dict) -> list[pa.Array]:
    """The io_ops columns (in schema order) of one native io_ops dict."""
    n = t["n"]
    schema = _schema("io_ops")
    if "source_str" in t:
        source, op, host = (_strings(t[k], n) for k in ("source_str", "op_str", "host_str"))
    else:
        source = _names_by_index(t, "source", ["DXT_POSIX", "DXT_MPIIO"], pa.uint8())
        op = _names_by_index(t, "op", ["write", "read"], pa.uint8())
        host = _names_by_index(t, "host_idx", t["hostnames"], pa.int32())
    cols = {
        "source": source,
        "record_id": _i64(t["record_id"], n),
        "rank": _i64(t["rank"], n),
        "seq": _i64(t["seq"], n),
        "op": op,
        "func": _nulls(n, pa.string()),
        "offset": _i64(t["offset"], n),
        "length": _i64(t["length"], n),
        "start_s": pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(t["start"])]),
        "end_s": pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(t["end"])]),
        "thread": _nulls(n, pa.int64()),
        "hostname": host,
    }
    return [cols[f.name] for f in schema]


def _io_ops_table(t: dict) -> pa.Table:
    return pa.Table.from_arrays(_io_ops_arrays(t), schema=_schema("io_ops"))


def _io_ops_stream(
    data: bytes, comp_type: int, swapped: bool, parts: list, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """The rows of the streamed DXT modules (`parts`: decode_log's "dxt_parts"), a record batch
    at a time; one empty batch when they hold no rows."""
    stream = _native.DxtStream(data, comp_type, swapped, parts, batch_rows)
    schema = _schema("io_ops")
    rows = 0
    while True:
        try:
            t = stream.next_batch()
        except _native.NativeDecodeError as err:
            raise _native_error(err) from None
        if t is None:
            break
        rows += t["n"]
        yield pa.RecordBatch.from_arrays(_io_ops_arrays(t), schema=schema)
    if not rows:
        yield pa.RecordBatch.from_pylist([], schema=schema)


def _files_table(raw: dict) -> pa.Table:
    """bronze/files: an IPC record batch from the extension, or (from an extension built before
    it wrote one) from the name and mount column buffers."""
    if "files_batch" in raw:
        return _batch_table("files", raw["files_batch"])
    n = raw["n_names"]
    valid = raw["name_mount_valid"]  # None: every name has a mount
    valid = None if valid is None else pa.py_buffer(valid)

    def mount_column(key: str) -> pa.Array:
        offsets, data = raw[key]
        buffers = [valid, pa.py_buffer(offsets), pa.py_buffer(data)]
        return pa.Array.from_buffers(pa.string(), n, buffers)

    arrays = [
        _i64(raw["name_ids"], n),
        _strings(raw["names"], n),
        mount_column("name_mount_point"),
        mount_column("name_fs_type"),
    ]
    return pa.Table.from_arrays(arrays, schema=_schema("files"))


@cache
def _row_type(table: str) -> pa.StructType:
    return pa.struct(list(_schema(table)))


def _jobs_table(raw: dict) -> pa.Table:
    """The one-row jobs table: an IPC record batch from the extension, or (from an extension
    built before docs/decisions/0043) converted from Python values in one call, as a struct."""
    if "jobs_batch" in raw:
        return _batch_table("jobs", raw["jobs_batch"])
    job = raw["job"]
    row = {
        "jobid": job["jobid"],
        "uid": job["uid"],
        "nprocs": job["nprocs"],
        "start_time_sec": job["start_time_sec"],
        "start_time_nsec": job["start_time_nsec"],
        "end_time_sec": job["end_time_sec"],
        "end_time_nsec": job["end_time_nsec"],
        "run_time_s": job["run_time"],
        "exe": job["exe"],
        "metadata": job["metadata"],
        "log_ver": raw["version"],
        "mounts": [{"mount_point": p, "fs_type": t} for p, t in job["mounts"]],
    }
    return pa.Table.from_struct_array(pa.array([row], _row_type("jobs")))


def _names(files: pa.Table) -> dict[int, str]:
    return dict(zip(files["record_id"].to_pylist(), files["name"].to_pylist()))


def decode(
    source, *, stream_dxt_over: int | None = STREAM_DXT_OVER, batch_rows: int = BATCH_ROWS, **limits
) -> Decoded:
    """Decodes one Darshan log (a path or the file's bytes) into bronze tables.

    `stream_dxt_over`: stream io_ops (`Decoded.streams`) when the DXT regions exceed that many
    compressed bytes; 0 = always, None = never. `limits`: ratio, min_budget, hard_cap, stream_cap.
    """
    data = _read_bytes(source)
    raw = _decode_raw(data, stream_dxt_over=stream_dxt_over, **limits)
    streams = {}
    if raw["dxt_parts"]:
        streams["io_ops"] = partial(
            _io_ops_stream, data, raw["comp_type"], raw["swapped"], raw["dxt_parts"], batch_rows
        )
    tables: dict[str, pa.Table] = {
        "jobs": _jobs_table(raw),
        "files": _files_table(raw),
    }
    by_module = {t["module"]: t for t in raw["counter_tables"]}
    for name, _idx, _ver, _len, _partial in raw["modules"]:
        if name in by_module:
            table = DARSHAN_MODULE_TABLE[name]
            tables[table] = _counter_table(table, by_module[name])
        elif name == "LUSTRE" and raw.get("lustre_batch") is not None:
            tables["lustre"] = _batch_table("lustre", raw["lustre_batch"])
        elif name == "LUSTRE" and raw.get("lustre") is not None:
            tables["lustre"] = _lustre_table(raw["lustre"])
        elif name == "HEATMAP" and raw["heatmap"] is not None:
            tables["heatmap"] = _heatmap_table(raw["heatmap"], _names(tables["files"]))
        elif name == "APMPI" and raw.get("apmpi_batch") is not None:
            tables["apmpi"] = _batch_table("apmpi", raw["apmpi_batch"])
        elif name == "APMPI" and raw["apmpi"] is not None and raw["apmpi"]["n"]:
            tables["apmpi"] = _apmpi_table(raw["apmpi"])
        elif name == "APXC" and raw["apxc"] is not None and raw["apxc"]["n"]:
            tables["apxc"] = _apxc_table(raw["apxc"])
        elif (
            name in ("DXT_POSIX", "DXT_MPIIO")
            and raw["io_ops"] is not None
            and "io_ops" not in tables
            and not streams
        ):
            tables["io_ops"] = _io_ops_table(raw["io_ops"])
    meta = dict(raw["job"]["metadata"])
    return Decoded(
        tables=tables,
        format="darshan",
        format_version=raw["version"],
        writer_version=meta.get("lib_ver"),
        compression=COMPRESSION.get(raw["comp_type"]),
        decoder=DECODER,
        modules=sorted(m[0] for m in raw["modules"]),
        partial_modules=sorted(m[0] for m in raw["modules"] if m[4]),
        modules_info=[
            {"module": name, "version": ver, "region_bytes": length}
            for name, _idx, ver, length, _partial in raw["modules"]
        ],
        notes=list(raw["notes"]) + (["big-endian log (byte-swapped)"] if raw["swapped"] else []),
        damaged=dict(raw["damaged"]),
        streams=streams,
    )


def decode_darshan(source) -> dict[str, pa.Table]:
    """The bronze tables of one Darshan log (path or bytes), streamed ones read into tables."""
    return decode(source).all_tables()


def header_facts(source) -> dict:
    """Raw header and job values of a log, for the caller's sanity checks."""
    raw = _decode_raw(_read_bytes(source), stream_dxt_over=STREAM_DXT_OVER)
    facts = {
        k: raw[k]
        for k in (
            "version",
            "major",
            "minor",
            "magic",
            "comp_type",
            "swapped",
            "partial_flag",
            "regions",
        )
    }
    facts.update({k: v for k, v in raw["job"].items() if k not in ("metadata", "mounts")})
    return facts


@cache
def _apmpi_layout() -> dict[str, tuple[bool, np.ndarray]]:
    """bronze/apmpi column -> (from the double counters?, index of each op's counter in its
    record array, -1 where the op has none), from AutoPerf's counter names."""
    iname = {c: k for k, c in enumerate(apmpi_counter_names())}
    fname = {c: k for k, c in enumerate(apmpi_fcounter_names())}
    per_op = {
        "call_count": (False, "{op}_CALL_COUNT"),
        "total_bytes": (False, "{op}_TOTAL_BYTES"),
        "total_time_s": (True, "{op}_TOTAL_TIME"),
        "min_time_s": (True, "{op}_MIN_TIME"),
        "max_time_s": (True, "{op}_MAX_TIME"),
        "total_sync_time_s": (True, "{op}_TOTAL_SYNC_TIME"),
        **{c: (False, "{op}_MSG_SIZE_AGG_" + b) for b, c in zip(MSG_SIZE_BINS, MSG_SIZE_COLUMNS)},
    }
    out = {}
    for col, (flt, pattern) in per_op.items():
        names = fname if flt else iname
        idx = [names.get(pattern.format(op=op), -1) for op in APMPI_OPS]
        out[col] = (flt, np.array(idx, dtype=np.int64))
    for col, name in (
        ("rank_comm_time_s", "MPI_TOTAL_COMM_TIME"),
        ("rank_comm_sync_time_s", "MPI_TOTAL_COMM_SYNC_TIME"),
    ):
        out[col] = (True, np.full(len(APMPI_OPS), fname[name], dtype=np.int64))
    return out


@cache
def _apmpi_gather() -> list[tuple[bool, list[str], np.ndarray, list[np.ndarray | None]]]:
    """`_apmpi_layout` by kind (integer, double): the columns, their counter indexes (columns x
    ops, absent ones at 0) and each column's absent ops (None when it has every op)."""
    out = []
    for flt in (False, True):
        layout = [(c, idx) for c, (f, idx) in _apmpi_layout().items() if f == flt]
        idx = np.stack([np.maximum(i, 0) for _, i in layout])
        absent = [(i < 0) if (i < 0).any() else None for _, i in layout]
        out.append((flt, [c for c, _ in layout], idx, absent))
    return out


_APMPI_HEAD = ["record_id", "rank", "node_name", "op"]
_APMPI_TAIL = ["sync_flag", "variance_total_mpitime", "variance_total_mpisynctime"]


@cache
def _apmpi_native_layout():
    """`_apmpi_layout` for the extension, which then writes bronze/apmpi as one IPC record batch
    (docs/decisions/0043); None when the extension predates that. Its columns are the schema's:
    the rank's ids and names, the counter columns, then the header's."""
    if _native is None or not hasattr(_native, "ApmpiLayout"):
        return None
    layout = _apmpi_layout()
    names = _schema("apmpi").names
    counters = [c for c in names if c in layout]
    if names != _APMPI_HEAD + counters + _APMPI_TAIL:
        raise DecoderCrash("native decoder and schema disagree on the apmpi columns")
    return _native.ApmpiLayout(
        list(APMPI_OPS), [(layout[c][0], layout[c][1].tolist()) for c in counters]
    )


def _apmpi_table(t: dict) -> pa.Table:
    """bronze/apmpi (one row per rank and MPI operation) from the native APMPI columns: the rank
    records' 396 integer and 240 double counters (row-major), reshaped by AutoPerf's counter
    layout (`schemas.autoperf`: per op a call count, then bytes and 6 histogram bins when it has
    them; per op total / min / max time; sync times of 16 collectives; two rank totals)."""
    n, nops = t["n"], len(APMPI_OPS)
    ints = np.frombuffer(t["counters"], dtype="<i8").reshape(n, -1)
    flts = np.frombuffer(t["fcounters"], dtype="<f8").reshape(n, -1)
    hdr = t["header"] or (None, None, None, None, None, None)
    rows = np.repeat(np.arange(n), nops)
    m = n * nops
    cols: dict[str, pa.Array] = {
        "record_id": pa.array(np.frombuffer(t["ids"], dtype="<i8")[rows], pa.int64()),
        "rank": pa.array(np.frombuffer(t["ranks"], dtype="<i8")[rows], pa.int64()),
        "node_name": _strings(t["node_name"], n).take(pa.array(rows)),
        "op": pa.array(APMPI_OPS, pa.string()).take(pa.array(np.tile(np.arange(nops), n))),
        "sync_flag": (
            pa.nulls(m, pa.int32()) if hdr[3] is None else pa.array(np.full(m, hdr[3], np.int32))
        ),
    }
    for col in ("variance_total_mpitime", "variance_total_mpisynctime"):
        v = hdr[4] if col == "variance_total_mpitime" else hdr[5]
        cols[col] = pa.nulls(m, pa.float64()) if v is None else pa.array(np.full(m, v))
    validity: dict[bytes, pa.Buffer] = {}  # one bitmap per pattern of absent ops
    for flt, names, idx, absent in _apmpi_gather():
        # every column of one kind in one gather: (n, columns, ops) -> (columns, n * ops)
        values = (flts if flt else ints)[:, idx].transpose(1, 0, 2).reshape(len(names), m)
        typ = pa.float64() if flt else pa.int64()
        for k, col in enumerate(names):
            valid = None
            if absent[k] is not None:
                key = absent[k].tobytes()
                if key not in validity:
                    bits = np.packbits(~np.tile(absent[k], n), bitorder="little")
                    validity[key] = pa.py_buffer(bits)
                valid = validity[key]
            cols[col] = pa.Array.from_buffers(typ, m, [valid, pa.py_buffer(values[k])])
    schema = _schema("apmpi")
    return pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema)


def _mode(names: tuple[str, ...], value: int) -> tuple[str, bool]:
    """A header mode as pydarshan names it (bit 31 masked) and whether bit 31 is clear."""
    v = value & ~(1 << 31)
    return (names[v] if 0 <= v < len(names) else str(v)), not value & (1 << 31)


@cache
def _apxc_layout() -> dict[str, np.ndarray]:
    """bronze/apxc counter column -> index of each tile's counter in the router record, -1 where
    the tile has none (`schemas.autoperf.APXC_TILES`, record order tile by tile)."""
    out = {c: np.full(len(APXC_TILES), -1, dtype=np.int64) for c in APXC_COLUMN.values()}
    k = 0
    for j, (_, _, _, counters) in enumerate(APXC_TILES):
        for name in counters:
            out[APXC_COLUMN[name]][j] = k
            k += 1
    return out


def _apxc_table(t: dict) -> pa.Table:
    """bronze/apxc (one row per router record and tile) from the native APXC columns."""
    n, ntiles = t["n"], len(APXC_TILES)
    ctr = np.frombuffer(t["counters"], dtype="<i8").reshape(n, -1)
    loc = np.frombuffer(t["location"], dtype="<i8").reshape(n, 4)
    rows = np.repeat(np.arange(n), ntiles)
    tiles = pa.array(np.tile(np.arange(ntiles), n))
    cols: dict[str, object] = {
        "record_id": pa.array(np.frombuffer(t["ids"], dtype="<i8")[rows], pa.int64()),
        "rank": pa.array(np.frombuffer(t["ranks"], dtype="<i8")[rows], pa.int64()),
        "group": pa.array(loc[rows, 0], pa.int64()),
        "chassis": pa.array(loc[rows, 1], pa.int64()),
        "blade": pa.array(loc[rows, 2], pa.int64()),
        "node": pa.array(loc[rows, 3], pa.int64()),
        "tile": pa.array([k for k, *_ in APXC_TILES], pa.string()).take(tiles),
        "tile_row": pa.array([r for _, r, *_ in APXC_TILES], pa.int32()).take(tiles),
        "tile_col": pa.array([c for _, _, c, _ in APXC_TILES], pa.int32()).take(tiles),
    }
    for col, idx in _apxc_layout().items():
        values = ctr[:, np.maximum(idx, 0)].reshape(-1)
        cols[col] = pa.array(values, pa.int64(), mask=np.tile(idx < 0, n))
    h = t["header"]
    m = n * ntiles
    if h is not None:
        mem, mem_ok = _mode(MEMORY_MODES, h[6])
        clu, clu_ok = _mode(CLUSTER_MODES, h[7])
        head = {
            "nblades": h[3],
            "nchassis": h[4],
            "ngroups": h[5],
            "memory_mode": mem,
            "memory_mode_consistent": mem_ok,
            "cluster_mode": clu,
            "cluster_mode_consistent": clu_ok,
            "appid": h[8],
        }
    else:
        head = {}
    schema = _schema("apxc")
    arrays = []
    for f in schema:
        if f.name in cols:
            arrays.append(cols[f.name])
        else:
            arrays.append(pa.array([head.get(f.name)] * m, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
