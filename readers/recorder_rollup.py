"""Roll Recorder calls up into Darshan-named counters, one row per (file, rank, module).

Fills the bronze `posix`, `stdio` and `mpiio` tables from the `Op`s of `recorder_ops`. The
rules mimic Darshan's runtime (darshan-posix.c and friends): which calls count as opens,
reads, writes, seeks, stats and syncs; fsync time is write time; open/close/seek/stat time
is metadata time; a read is consecutive when it starts one byte after the previous read's
last byte and sequential when it starts after it. A counter the trace cannot give (memory
alignment, strides, cross-rank variance, ...) is left null, never 0. See docs/formats/recorder.md.
"""

from __future__ import annotations

from collections import Counter

from readers.recorder_ops import (
    POSIX_READS,
    POSIX_WRITES,
    STAT_FUNCS,
    STDIO_READS,
    STDIO_WRITES,
    Op,
    layer,
)

SIZE_BINS = (  # Darshan's access-size histogram bins (upper bounds, exclusive)
    ("0_100", 100),
    ("100_1K", 1024),
    ("1K_10K", 10240),
    ("10K_100K", 102400),
    ("100K_1M", 1048576),
    ("1M_4M", 4194304),
    ("4M_10M", 10485760),
    ("10M_100M", 104857600),
    ("100M_1G", 1073741824),
    ("1G_PLUS", None),
)


def _size_bin(n: int) -> str:
    for name, top in SIZE_BINS:
        if top is None or n < top:
            return name
    return "1G_PLUS"


class _Acc:
    """Running counters of one (module, file, rank)."""

    def __init__(self):
        self.c: Counter = Counter()  # integer counters, keyed by suffix (OPENS, READS, ...)
        self.t: dict[str, float] = {}  # float counters / timestamps, keyed by suffix
        self.sizes: Counter = Counter()  # access size -> count (reads and writes)
        self.hist: Counter = Counter()  # SIZE_READ_x / SIZE_WRITE_x
        self.unknown: set[str] = set()  # counters made underivable by a call with no size/offset
        self.last_read_byte: int | None = None
        self.last_write_byte: int | None = None
        self.last_io: str | None = None
        self.max_read_time = (0.0, None)
        self.max_write_time = (0.0, None)
        self.mode: int | None = None

    def first(self, key: str, v: float):
        if key not in self.t or v < self.t[key]:
            self.t[key] = v

    def last(self, key: str, v: float):
        if key not in self.t or v > self.t[key]:
            self.t[key] = v

    def add_time(self, key: str, v: float):
        self.t[key] = self.t.get(key, 0.0) + v


def _io(acc: _Acc, kind: str, op: Op, t0: float, t1: float, mpi: bool):
    """One read or write: bytes, histogram, consecutive/sequential, switches, timing."""
    R = "READ" if kind == "read" else "WRITE"
    n, off = op.length, op.offset
    if acc.last_io is not None and acc.last_io != kind:
        acc.c["RW_SWITCHES"] += 1
    acc.last_io = kind
    if kind == "read":
        ret = (op.extra or {}).get("returned")
        acc.c["_READ_RETURNED"] += ret if ret is not None and n is not None else (n or 0)
    if n is None:
        acc.unknown |= {
            f"BYTES_{'READ' if kind == 'read' else 'WRITTEN'}",
            "SIZES",
            f"MAX_BYTE_{'READ' if kind == 'read' else 'WRITTEN'}",
        }
    else:
        acc.c["BYTES_READ" if kind == "read" else "BYTES_WRITTEN"] += n
        acc.sizes[n] += 1
        acc.hist[f"SIZE_{R}_{'AGG_' if mpi else ''}{_size_bin(n)}"] += 1
    if off is None or n is None:
        acc.unknown |= {
            f"CONSEC_{R}S",
            f"SEQ_{R}S",
            f"MAX_BYTE_{'READ' if kind == 'read' else 'WRITTEN'}",
        }
    else:
        last = acc.last_read_byte if kind == "read" else acc.last_write_byte
        if last is not None and off == last + 1:
            acc.c[f"CONSEC_{R}S"] += 1
        if last is not None and off > last:
            acc.c[f"SEQ_{R}S"] += 1
        end = off + n - 1
        if kind == "read":
            acc.last_read_byte = end
        else:
            acc.last_write_byte = end
        key = "MAX_BYTE_READ" if kind == "read" else "MAX_BYTE_WRITTEN"
        acc.c[key] = max(acc.c.get(key, 0), end)
    dt = t1 - t0
    acc.add_time(f"F_{R}_TIME", dt)
    acc.first(f"F_{R}_START_TIMESTAMP", t0)
    acc.last(f"F_{R}_END_TIMESTAMP", t1)
    best = acc.max_read_time if kind == "read" else acc.max_write_time
    if dt > best[0] or best[1] is None:
        if kind == "read":
            acc.max_read_time = (dt, n)
        else:
            acc.max_write_time = (dt, n)


def _open_close(acc: _Acc, what: str, t0: float, t1: float):
    acc.add_time("F_META_TIME", t1 - t0)
    acc.first(f"F_{what}_START_TIMESTAMP", t0)
    acc.last(f"F_{what}_END_TIMESTAMP", t1)


class Rollup:
    """Collects `Op`s of one rank and emits module rows (dicts of Darshan counter names)."""

    def __init__(self, record_id):
        self.record_id = record_id
        self.accs: dict[tuple[str, str], _Acc] = {}

    def _acc(self, module: str, path: str) -> _Acc:
        key = (module, path)
        if key not in self.accs:
            self.accs[key] = _Acc()
        return self.accs[key]

    def add(self, op: Op, t0: float, t1: float):
        if op.path is None:
            return
        module = layer(op.func)
        if module == "posix":
            self._posix(op, t0, t1)
        elif module == "stdio":
            self._stdio(op, t0, t1)
        elif module == "mpiio":
            self._mpiio(op, t0, t1)

    def _posix(self, op: Op, t0, t1):
        f, acc = op.func, self._acc("posix", op.path)
        if f in POSIX_READS or f in POSIX_WRITES:
            kind = "read" if f in POSIX_READS else "write"
            acc.c["READS" if kind == "read" else "WRITES"] += 1
            _io(acc, kind, op, t0, t1, mpi=False)
        elif f in ("open", "open64", "creat", "creat64"):
            acc.c["OPENS"] += 1
            if op.extra and op.extra.get("mode") is not None and acc.mode is None:
                acc.mode = op.extra["mode"]
            _open_close(acc, "OPEN", t0, t1)
        elif f == "close":
            _open_close(acc, "CLOSE", t0, t1)
        elif f in ("lseek", "lseek64"):
            acc.c["SEEKS"] += 1
            acc.add_time("F_META_TIME", t1 - t0)
        elif f in STAT_FUNCS:
            acc.c["STATS"] += 1
            acc.add_time("F_META_TIME", t1 - t0)
        elif f in ("fsync", "fdatasync"):
            acc.c["FSYNCS" if f == "fsync" else "FDSYNCS"] += 1
            acc.add_time("F_WRITE_TIME", t1 - t0)
        elif f in ("mmap", "mmap64"):
            acc.c["MMAPS"] += 1
        elif f == "rename":
            acc.c["RENAME_SOURCES"] += 1
            target = (op.extra or {}).get("target")
            if target:
                self._acc("posix", target).c["RENAME_TARGETS"] += 1
        elif f in ("dup", "dup2"):
            acc.c["DUPS"] += 1

    def _stdio(self, op: Op, t0, t1):
        f, acc = op.func, self._acc("stdio", op.path)
        if f in STDIO_READS or f in STDIO_WRITES:
            kind = "read" if f in STDIO_READS else "write"
            acc.c["READS" if kind == "read" else "WRITES"] += 1
            _io(acc, kind, op, t0, t1, mpi=False)
        elif f in ("fopen", "fopen64"):
            acc.c["OPENS"] += 1
            _open_close(acc, "OPEN", t0, t1)
        elif f == "fdopen":
            acc.c["FDOPENS"] += 1
            _open_close(acc, "OPEN", t0, t1)
        elif f == "fclose":
            _open_close(acc, "CLOSE", t0, t1)
        elif f in ("fseek", "fseeko"):
            acc.c["SEEKS"] += 1
            acc.add_time("F_META_TIME", t1 - t0)
        elif f == "fileno":
            pass

    def _mpiio(self, op: Op, t0, t1):
        f, acc = op.func, self._acc("mpiio", op.path)
        if op.op in ("read", "write"):
            kind = op.op
            R = "READS" if kind == "read" else "WRITES"
            if f.startswith(("MPI_File_iread", "MPI_File_iwrite")):
                acc.c[f"NB_{R}"] += 1
            elif f.endswith("_begin"):
                acc.c[f"SPLIT_{R}"] += 1
            elif f.endswith("_all") or "ordered" in f:
                acc.c[f"COLL_{R}"] += 1
            else:
                acc.c[f"INDEP_{R}"] += 1
            _io(acc, kind, op, t0, t1, mpi=True)
        elif f == "MPI_File_open":
            comm = (op.extra or {}).get("comm")
            acc.c["INDEP_OPENS" if comm == "MPI_COMM_SELF" else "COLL_OPENS"] += 1
            if acc.mode is None:
                acc.mode = (op.extra or {}).get("amode")
            _open_close(acc, "OPEN", t0, t1)
        elif f == "MPI_File_close":
            _open_close(acc, "CLOSE", t0, t1)
        elif f == "MPI_File_sync":
            acc.c["SYNCS"] += 1
            acc.add_time("F_WRITE_TIME", t1 - t0)
        elif f == "MPI_File_set_view":
            acc.c["VIEWS"] += 1
            acc.add_time("F_META_TIME", t1 - t0)
        elif f in ("MPI_File_seek", "MPI_File_set_size", "MPI_File_get_size"):
            acc.add_time("F_META_TIME", t1 - t0)

    # -- output -------------------------------------------------------------------------
    def rows(self, rank: int) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {"posix": [], "stdio": [], "mpiio": []}
        for (module, path), acc in self.accs.items():
            if not acc.c and not acc.t:  # only calls Darshan does not count (mkdir, access, ...)
                continue
            out[module].append(_row(module, acc, self.record_id(path), rank))
        self.accs = {}
        return out


_INT_SUFFIXES = {
    "posix": (
        "OPENS",
        "FILENOS",
        "DUPS",
        "READS",
        "WRITES",
        "SEEKS",
        "STATS",
        "MMAPS",
        "FSYNCS",
        "FDSYNCS",
        "RENAME_SOURCES",
        "RENAME_TARGETS",
        "BYTES_READ",
        "BYTES_WRITTEN",
        "CONSEC_READS",
        "CONSEC_WRITES",
        "SEQ_READS",
        "SEQ_WRITES",
        "RW_SWITCHES",
    ),
    "stdio": ("OPENS", "FDOPENS", "READS", "WRITES", "SEEKS", "BYTES_READ", "BYTES_WRITTEN"),
    "mpiio": (
        "INDEP_OPENS",
        "COLL_OPENS",
        "INDEP_READS",
        "INDEP_WRITES",
        "COLL_READS",
        "COLL_WRITES",
        "SPLIT_READS",
        "SPLIT_WRITES",
        "NB_READS",
        "NB_WRITES",
        "SYNCS",
        "VIEWS",
        "BYTES_READ",
        "BYTES_WRITTEN",
        "RW_SWITCHES",
    ),
}
_PREFIX = {"posix": "POSIX_", "stdio": "STDIO_", "mpiio": "MPIIO_"}


def _row(module: str, acc: _Acc, record_id: int, rank: int) -> dict:
    p = _PREFIX[module]
    row: dict = {"record_id": record_id, "rank": rank}
    for s in _INT_SUFFIXES[module]:
        row[p + s] = None if s in acc.unknown else acc.c.get(s, 0)
    row["_read_returned"] = None if "BYTES_READ" in acc.unknown else acc.c.get("_READ_RETURNED", 0)
    for s in ("MAX_BYTE_READ", "MAX_BYTE_WRITTEN"):
        if module in ("posix", "stdio"):
            # Darshan leaves these 0 when nothing was read/written
            row[p + s] = None if s in acc.unknown else acc.c.get(s, 0)
    if module == "posix":
        row["POSIX_FILENOS"] = None  # fileno() is a stdio call in Recorder's list; not attributable
        row["POSIX_RENAMED_FROM"] = None
    if module in ("posix", "mpiio"):
        row[p + "MODE"] = acc.mode
        bins = [b for b, _ in SIZE_BINS]
        agg = "AGG_" if module == "mpiio" else ""
        for R, unknown_key in (("READ", "BYTES_READ"), ("WRITE", "BYTES_WRITTEN")):
            for b in bins:
                row[f"{p}SIZE_{R}_{agg}{b}"] = (
                    None if unknown_key in acc.unknown else acc.hist.get(f"SIZE_{R}_{agg}{b}", 0)
                )
        top = sorted(acc.sizes.items(), key=lambda kv: (-kv[1], -kv[0]))[:4]
        sizes_known = "SIZES" not in acc.unknown
        for i in range(4):
            a, n = top[i] if i < len(top) else (0, 0)
            row[f"{p}ACCESS{i + 1}_ACCESS"] = a if sizes_known else None
            row[f"{p}ACCESS{i + 1}_COUNT"] = n if sizes_known else None
        row[p + "MAX_READ_TIME_SIZE"] = (
            acc.max_read_time[1] if acc.max_read_time[1] is not None else 0
        )
        row[p + "MAX_WRITE_TIME_SIZE"] = (
            acc.max_write_time[1] if acc.max_write_time[1] is not None else 0
        )
        row[p + "F_MAX_READ_TIME"] = acc.max_read_time[0]
        row[p + "F_MAX_WRITE_TIME"] = acc.max_write_time[0]
    for s in ("F_READ_TIME", "F_WRITE_TIME", "F_META_TIME"):
        row[p + s] = acc.t.get(s, 0.0)
    for what in ("OPEN", "READ", "WRITE", "CLOSE"):
        for edge in ("START", "END"):
            row[f"{p}F_{what}_{edge}_TIMESTAMP"] = acc.t.get(f"F_{what}_{edge}_TIMESTAMP", 0.0)
    return row
