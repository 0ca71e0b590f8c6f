"""Decode a Recorder trace folder (format 2.2.x or 2.5.x) into the bronze tables.

Reads one trace folder and returns a `readers.base.Decoded` with `jobs` (1 row), `files`
(one row per path touched), `io_ops` (one row per traced call, source RECORDER) and the
roll-ups `posix`, `stdio`, `mpiio` (one row per file and rank). The ranks are decoded one
after another; only one rank's raw calls are alive at a time. Format facts, the record-id
hash and the offset rule are in docs/formats/recorder.md.
"""

from __future__ import annotations

import math
import os

import pyarrow as pa

from readers import recorder_format as fmt
from readers.base import Decoded, DecodeError, DecoderCrash
from readers.recorder_ops import RankOps
from readers.recorder_rollup import Rollup

DECODER_VERSION = "1"
ROLLUP_TABLES = ("posix", "stdio", "mpiio")

_M64 = (1 << 64) - 1


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - b - c) & _M64
    a ^= c >> 43
    b = (b - c - a) & _M64
    b ^= (a << 9) & _M64
    c = (c - a - b) & _M64
    c ^= b >> 8
    a = (a - b - c) & _M64
    a ^= c >> 38
    b = (b - c - a) & _M64
    b ^= (a << 23) & _M64
    c = (c - a - b) & _M64
    c ^= b >> 5
    a = (a - b - c) & _M64
    a ^= c >> 35
    b = (b - c - a) & _M64
    b ^= (a << 49) & _M64
    c = (c - a - b) & _M64
    c ^= b >> 11
    a = (a - b - c) & _M64
    a ^= c >> 12
    b = (b - c - a) & _M64
    b ^= (a << 18) & _M64
    c = (c - a - b) & _M64
    c ^= b >> 22
    return a, b, c


def path_record_id(path: str) -> int:
    """Darshan's record id of a path (Bob Jenkins' 64-bit lookup8 hash, level 0), as int64.

    The same path gets the same id as in a Darshan log, so Recorder and Darshan rows join.
    """
    k = path.encode("utf-8")
    a = b = 0
    c = 0x9E3779B97F4A7C13
    p = 0
    while len(k) - p >= 24:
        a = (a + int.from_bytes(k[p : p + 8], "little")) & _M64
        b = (b + int.from_bytes(k[p + 8 : p + 16], "little")) & _M64
        c = (c + int.from_bytes(k[p + 16 : p + 24], "little")) & _M64
        a, b, c = _mix(a, b, c)
        p += 24
    rest = k[p:]
    c = (c + len(k)) & _M64
    a = (a + int.from_bytes(rest[0:8], "little")) & _M64
    b = (b + int.from_bytes(rest[8:16], "little")) & _M64
    c = (c + (int.from_bytes(rest[16:24], "little") << 8)) & _M64  # low byte of c holds the length
    c = _mix(a, b, c)[2]
    return c - (1 << 64) if c >= 1 << 63 else c


def is_recorder_trace(path: str) -> bool:
    """A folder holding `recorder.mt` and `VERSION`."""
    return (
        os.path.isdir(path)
        and os.path.isfile(os.path.join(path, "recorder.mt"))
        and os.path.isfile(os.path.join(path, "VERSION"))
    )


class _IoOps:
    """Column buffers of io_ops, filled rank by rank."""

    COLS = (
        "source",
        "record_id",
        "rank",
        "seq",
        "op",
        "func",
        "offset",
        "length",
        "start_s",
        "end_s",
        "thread",
        "hostname",
    )

    def __init__(self):
        self.cols = {c: [] for c in self.COLS}

    def add(self, rid, rank, seq, op, start, end):
        c = self.cols
        c["source"].append("RECORDER")
        c["record_id"].append(rid)
        c["rank"].append(rank)
        c["seq"].append(seq)
        c["op"].append(op.op)
        c["func"].append(op.func)
        c["offset"].append(op.offset)
        c["length"].append(op.length)
        c["start_s"].append(start)
        c["end_s"].append(end)
        c["thread"].append(op.call.tid or None)
        c["hostname"].append(None)


def _table(name: str, rows: list[dict]) -> pa.Table:
    from schemas import BRONZE

    schema = BRONZE[name].decoded_arrow_schema
    return pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()


def _decode_ranks(folder: str, version: str):
    """Yield (rank, time offset of the rank's clock from job start, call iterator), plus job facts."""
    if version.startswith("2.5"):
        meta = fmt.read_meta25(folder)
        facts = {
            "nprocs": meta.total_ranks,
            "start": meta.start_ts,
            "end": None,
            "metadata": {
                "time_resolution": repr(meta.time_resolution),
                "ts_buffer_elements": str(meta.ts_buffer_elements),
                "ts_compression_algo": str(meta.ts_compression_algo),
                "interprocess_compression": str(meta.interprocess_compression),
            },
        }
        ranks = ((r, 0.0, fmt.iter_rank_calls25(folder, meta, r)) for r in range(meta.total_ranks))
        return facts, ranks, False
    meta = fmt.read_meta22(folder)
    locals_ = [fmt.read_local22(folder, r) for r in range(meta.total_ranks)]
    start = min(lo.start_timestamp for lo in locals_)
    facts = {
        "nprocs": meta.total_ranks,
        "start": start,
        "end": max(lo.end_timestamp for lo in locals_),
        "metadata": {
            "time_resolution": repr(meta.time_resolution),
            "compression_mode": str(meta.compression_mode),
            "peephole_window_size": str(meta.peephole_window_size),
        },
    }
    ranks = (
        (r, locals_[r].start_timestamp - start, fmt.iter_rank_calls22(folder, meta, locals_[r], r))
        for r in range(meta.total_ranks)
    )
    return facts, ranks, True


def _finish_rollups(rolled: dict[str, list[dict]], ids: dict[str, int], dirs: set[str]) -> None:
    """Cross-rank fix-ups once every rank is read.

    * Directories get no module rows (Darshan keeps none): a path is a directory when it was
      made or listed (mkdir, opendir) or is the parent of another path in the trace.
    * BYTES_READ: Recorder 2.5 keeps no return values, so a read counts its requested size.
      Where a file is touched by one rank only, that rank's view of the file size is exact
      and reads are clipped at the end of file, as the kernel (and so Darshan) would.
    """
    for p in ids:
        parent = p
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if not parent or parent in dirs:
                break
            dirs.add(parent)
    dir_ids = {ids[d] for d in dirs if d in ids}
    for table, rows in rolled.items():
        rows[:] = [r for r in rows if r["record_id"] not in dir_ids]
        ranks: dict[int, set[int]] = {}
        for r in rows:
            ranks.setdefault(r["record_id"], set()).add(r["rank"])
        key = {
            "posix": "POSIX_BYTES_READ",
            "stdio": "STDIO_BYTES_READ",
            "mpiio": "MPIIO_BYTES_READ",
        }[table]
        for r in rows:
            clipped = r.pop("_read_returned", None)
            if table != "mpiio" and clipped is not None and len(ranks[r["record_id"]]) == 1:
                r[key] = clipped


def decode_recorder(folder: str) -> Decoded:
    """Decode one Recorder trace folder; raise a `DecodeError` for corrupt or partial traces."""
    if not os.path.isdir(folder):
        raise DecodeError(f"recorder: {folder} is not a folder")
    version = fmt.read_version(folder)
    try:
        return _decode(folder, version)
    except DecodeError:
        raise
    except (ValueError, IndexError, KeyError, UnicodeError, OverflowError, MemoryError) as err:
        raise DecoderCrash(
            f"recorder: decoder failed on {folder}: {type(err).__name__}: {err}"
        ) from err


def _decode(folder: str, version: str) -> Decoded:
    facts, ranks, fd_args = _decode_ranks(folder, version)
    ids: dict[str, int] = {}

    def rid(path: str | None) -> int | None:
        if path is None:
            return None
        if path not in ids:
            ids[path] = path_record_id(path)
        return ids[path]

    io = _IoOps()
    rollup = Rollup(rid)
    rolled: dict[str, list[dict]] = {t: [] for t in ROLLUP_TABLES}
    last_end = 0.0
    n_calls = 0
    dirs: set[str] = set()
    for rank, shift, calls in ranks:
        state = RankOps(fd_args)
        for seq, call in enumerate(calls):
            op = state.step(call)
            start, end = call.tstart + shift, call.tend + shift
            if op.path is not None:
                rid(op.path)
                if op.extra and op.extra.get("target"):
                    rid(op.extra["target"])
            if op.func in ("mkdir", "opendir") and op.path is not None:
                dirs.add(op.path)
            io.add(rid(op.path), rank, seq, op, start, end)
            rollup.add(op, start, end)
            last_end = max(last_end, end)
            n_calls += 1
        for t, rows in rollup.rows(rank).items():
            rolled[t].extend(rows)

    _finish_rollups(rolled, ids, dirs)
    start = facts["start"]
    end = facts["end"] if facts["end"] is not None else start + last_end
    metadata = dict(
        facts["metadata"],
        calls=str(n_calls),
        time_origin="start_s/end_s are seconds since start_time",
    )
    job = {
        "jobid": None,
        "uid": None,
        "nprocs": facts["nprocs"],
        "start_time_sec": int(math.floor(start)),
        "start_time_nsec": int(round((start - math.floor(start)) * 1e9)) % 1_000_000_000,
        "end_time_sec": int(math.floor(end)),
        "end_time_nsec": int(round((end - math.floor(end)) * 1e9)) % 1_000_000_000,
        "run_time_s": max(end - start, 0.0),
        "exe": None,
        "metadata": list(metadata.items()),
        "log_ver": version,
        "mounts": [],
    }
    files = [
        {"record_id": i, "name": p, "mount_point": None, "fs_type": None} for p, i in ids.items()
    ]
    from schemas import BRONZE

    tables = {
        "jobs": _table("jobs", [job]),
        "files": _table("files", files),
        "io_ops": pa.Table.from_pydict(io.cols, schema=BRONZE["io_ops"].decoded_arrow_schema),
        **{t: _table(t, rows) for t, rows in rolled.items()},
    }
    return Decoded(
        tables=tables,
        format="recorder",
        format_version=version,
        writer_version=version,
        decoder=f"iolake-recorder-{DECODER_VERSION}",
        modules=[
            m
            for m, t in (("POSIX", "posix"), ("STDIO", "stdio"), ("MPI-IO", "mpiio"))
            if tables[t].num_rows
        ],
        notes=[f"{facts['nprocs']} ranks, {n_calls} calls, {len(ids)} files"],
    )
