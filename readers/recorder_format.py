"""Binary layer of the Recorder decoder: trace folder -> per-rank streams of `Call`s.

Two on-disk formats are read (facts in docs/formats/recorder.md):

* 2.5.x (Recorder 2.3-2.5): `recorder.mt` (metadata + function names), and per rank
  `<r>.cst` (call-signature table), `<r>.cfg` (Sequitur grammar over signatures) and
  `<r>.ts` (uint32 pairs of time deltas, one pair per call).
* 2.2.x: `recorder.mt` (global def + function names), per rank `<r>.mt` (local def + file
  map) and `<r>.itf` (one binary header + text arguments per call, peephole-compressed).

Only one rank's calls are materialised at a time (2.5 is a true generator; 2.2 keeps one
rank's records to sort them by start time, as Recorder's own 2.2 reader does).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from readers.base import BadHeader, DecodeError, UnsupportedFormat

SUPPORTED_MAJOR_MINOR = ("2.2", "2.5")
USER_FUNCTION_ID = 255
_TS_CHUNK_PAIRS = 65536  # pairs of uint32 read from a .ts file at a time


class TruncatedTrace(DecodeError):
    kind = "corrupt"


@dataclass(frozen=True, slots=True)
class Call:
    """One traced call, times in seconds since the trace's own time origin (see `time_base`)."""

    tstart: float
    tend: float
    func: str
    level: int
    tid: int
    args: tuple[str, ...]
    res: int | None = None  # return value (2.2 only: fd of open/fopen, result of lseek ...)


def read_version(folder: str) -> str:
    path = os.path.join(folder, "VERSION")
    if not os.path.isfile(path):
        raise BadHeader(f"recorder: missing VERSION file in {folder}")
    with open(path, "rb") as f:
        raw = f.read(64)
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError as err:
        raise BadHeader(f"recorder: VERSION is not text ({raw[:16]!r})") from err
    parts = text.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:3]):
        raise BadHeader(f"recorder: VERSION {text!r} is not major.minor.patch")
    if ".".join(parts[:2]) not in SUPPORTED_MAJOR_MINOR:
        raise UnsupportedFormat(
            f"recorder: unsupported trace version {text} (supported: 2.2.x, 2.5.x)"
        )
    return text


def _read_exact(path: str, what: str) -> bytes:
    if not os.path.isfile(path):
        raise DecodeError(f"recorder: missing {what} {os.path.basename(path)}")
    with open(path, "rb") as f:
        return f.read()


def _func_names(blob: bytes, what: str) -> list[str]:
    if not blob.endswith(b"\n"):
        raise TruncatedTrace(
            f"recorder: {what} function list does not end with a newline (truncated?)"
        )
    try:
        return blob.decode("ascii").split("\n")[:-1]
    except UnicodeDecodeError as err:
        raise BadHeader(f"recorder: {what} function list is not ASCII") from err


class _Cursor:
    """Bounds-checked little-endian reads over one file's bytes."""

    def __init__(self, data: bytes, name: str):
        self.data, self.pos, self.name = data, 0, name

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise TruncatedTrace(
                f"recorder: {self.name} is truncated at byte {self.pos} (needs {n} more)"
            )
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def ints(self, n: int) -> tuple[int, ...]:
        return struct.unpack(f"<{n}i", self.take(4 * n))

    def at_end(self) -> bool:
        return self.pos == len(self.data)


# --------------------------------------------------------------------------- 2.5.x


@dataclass(frozen=True)
class Meta25:
    total_ranks: int
    start_ts: float
    time_resolution: float
    ts_buffer_elements: int
    ts_compression_algo: int
    interprocess_compression: int
    func_names: list[str]


_META25 = struct.Struct("<i4xddiii4x")  # RecorderMetadata, x86-64 padding


def read_meta25(folder: str) -> Meta25:
    blob = _read_exact(os.path.join(folder, "recorder.mt"), "metadata file")
    if len(blob) < _META25.size:
        raise BadHeader(
            f"recorder: recorder.mt has {len(blob)} bytes, the header needs {_META25.size}"
        )
    ranks, start, res, buf, comp, ipc = _META25.unpack_from(blob)
    if ranks < 1 or not (0 < res < 1):
        raise BadHeader(
            f"recorder: recorder.mt header is implausible (ranks={ranks}, resolution={res})"
        )
    if comp != 0:
        raise UnsupportedFormat(
            f"recorder: timestamp compression {comp} is not supported (only 0 = none)"
        )
    return Meta25(
        ranks, start, res, buf, comp, ipc, _func_names(blob[_META25.size :], "recorder.mt")
    )


_SIG_HEAD = struct.Struct("<QBBBi")  # pthread_t tid, func_id, level, arg_count, args strlen


def _read_cst(path: str) -> list[tuple[int, int, int, tuple[str, ...]]]:
    """terminal id -> (tid, func_id, level, args) of each call signature."""
    cur = _Cursor(_read_exact(path, "call-signature file"), os.path.basename(path))
    (entries,) = cur.ints(1)
    if entries < 0:
        raise BadHeader(f"recorder: {cur.name} declares {entries} signatures")
    table: list = [None] * entries
    for _ in range(entries):
        terminal, _rank, key_len, _count = cur.ints(4)
        key = cur.take(key_len)
        if not 0 <= terminal < entries or table[terminal] is not None:
            raise DecodeError(f"recorder: {cur.name} has a bad or repeated terminal id {terminal}")
        if key_len < _SIG_HEAD.size:
            raise TruncatedTrace(
                f"recorder: {cur.name} signature {terminal} is shorter than its header"
            )
        tid, func_id, level, argc, arg_len = _SIG_HEAD.unpack_from(key)
        arg_blob = key[_SIG_HEAD.size : _SIG_HEAD.size + arg_len]
        if len(arg_blob) != arg_len:
            raise TruncatedTrace(
                f"recorder: {cur.name} signature {terminal} arguments are cut short"
            )
        # every argument is followed by one space; spaces inside arguments were replaced by '_'
        args = tuple(arg_blob.decode("utf-8", "replace").split(" ")[:-1]) if arg_len else ()
        if len(args) != argc:
            raise DecodeError(
                f"recorder: {cur.name} signature {terminal} has {len(args)} args, header says {argc}"
            )
        table[terminal] = (tid, func_id, level, args)
    if not cur.at_end():
        raise DecodeError(f"recorder: {cur.name} has {len(cur.data) - cur.pos} trailing bytes")
    return table


def _read_cfg(path: str) -> dict[int, list[tuple[int, int]]]:
    """rule id -> [(symbol, repetitions)]; symbols >= 0 are terminals, < 0 are rules; -1 starts."""
    cur = _Cursor(_read_exact(path, "grammar file"), os.path.basename(path))
    (n_rules,) = cur.ints(1)
    rules: dict[int, list[tuple[int, int]]] = {}
    for _ in range(max(n_rules, 0)):
        rule_id, n_sym = cur.ints(2)
        if n_sym < 0:
            raise DecodeError(f"recorder: {cur.name} rule {rule_id} has {n_sym} symbols")
        body = cur.ints(2 * n_sym)
        rules[rule_id] = list(zip(body[0::2], body[1::2]))
    if -1 not in rules:
        raise DecodeError(f"recorder: {cur.name} has no start rule")
    if not cur.at_end():
        raise DecodeError(f"recorder: {cur.name} has {len(cur.data) - cur.pos} trailing bytes")
    return rules


def _count_calls(rules: dict, n_terminals: int, name: str) -> int:
    """Number of calls the grammar expands to; checks every reference and rejects cycles."""
    memo: dict[int, int] = {}
    state: dict[int, int] = {}  # 1 = on the stack, 2 = done
    stack = [(-1, 0, 0)]  # (rule, next symbol index, partial count)
    state[-1] = 1
    while stack:
        rule, i, acc = stack.pop()
        body = rules[rule]
        while i < len(body):
            sym, rep = body[i]
            if sym >= 0:
                if sym >= n_terminals:
                    raise DecodeError(
                        f"recorder: {name} uses terminal {sym}, the signature table has {n_terminals}"
                    )
                acc += rep
            elif sym in memo:
                acc += rep * memo[sym]
            else:
                if sym not in rules:
                    raise DecodeError(f"recorder: {name} references missing rule {sym}")
                if state.get(sym) == 1:
                    raise DecodeError(f"recorder: {name} grammar is cyclic at rule {sym}")
                stack.append((rule, i, acc))
                stack.append((sym, 0, 0))
                state[sym] = 1
                break
            i += 1
        else:
            memo[rule] = acc
            state[rule] = 2
            if stack:  # resume the parent with this rule's count applied
                prule, pi, pacc = stack.pop()
                stack.append((prule, pi + 1, pacc + rules[prule][pi][1] * acc))
    return memo[-1]


def _expand(rules: dict) -> Iterator[int]:
    """Terminal ids in trace order (iterative: grammars can nest deeply)."""
    stack = [(rules[-1], 0, 1)]  # (body, symbol index, repetitions left of that symbol)
    while stack:
        body, i, left = stack.pop()
        if i >= len(body):
            continue
        sym, rep = body[i]
        if left == 0:
            left = rep
        if left <= 0:
            stack.append((body, i + 1, 0))
            continue
        if sym >= 0:
            for _ in range(left):
                yield sym
            stack.append((body, i + 1, 0))
        else:
            stack.append((body, i, left - 1) if left > 1 else (body, i + 1, 0))
            stack.append((rules[sym], 0, 0))


def _iter_ts(path: str, n_calls: int, resolution: float) -> Iterator[tuple[float, float]]:
    """(tstart, tend) per call, undoing the delta encoding exactly as Recorder's reader does."""
    if not os.path.isfile(path):
        raise DecodeError(f"recorder: missing timestamp file {os.path.basename(path)}")
    size = os.path.getsize(path)
    if size != 8 * n_calls:
        raise TruncatedTrace(
            f"recorder: {os.path.basename(path)} has {size} bytes, the grammar needs {8 * n_calls} "
            f"({n_calls} calls)"
        )
    prev = 0.0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(8 * _TS_CHUNK_PAIRS)
            if not chunk:
                return
            vals = struct.unpack(f"<{len(chunk) // 4}I", chunk)
            for j in range(0, len(vals), 2):
                tstart = vals[j] * resolution + prev
                tend = (
                    vals[j + 1] * resolution + prev
                )  # tend is relative to the previous tstart too
                prev = tstart
                yield tstart, tend


def _ug_ids(folder: str, nprocs: int) -> list[int]:
    """Rank -> unique-grammar id, for traces written with interprocess compression."""
    cur = _Cursor(_read_exact(os.path.join(folder, "ug.mt"), "unique-grammar map"), "ug.mt")
    ids = list(cur.ints(nprocs))
    (n_ug,) = cur.ints(1)
    if any(not 0 <= u < n_ug for u in ids):
        raise DecodeError("recorder: ug.mt maps a rank to a grammar that does not exist")
    return ids


def iter_rank_calls25(folder: str, meta: Meta25, rank: int) -> Iterator[Call]:
    """Stream one rank's calls in trace order (the order recorder2text prints them)."""
    if meta.interprocess_compression:
        cst_path = os.path.join(folder, "0.cst")
        cfg_path = os.path.join(folder, f"{_ug_ids(folder, meta.total_ranks)[rank]}.cfg")
    else:
        cst_path = os.path.join(folder, f"{rank}.cst")
        cfg_path = os.path.join(folder, f"{rank}.cfg")
    sigs = _read_cst(cst_path)
    rules = _read_cfg(cfg_path)
    n_calls = _count_calls(rules, len(sigs), os.path.basename(cfg_path))
    names = meta.func_names
    cache: dict[int, tuple] = {}
    for term, (tstart, tend) in zip(
        _expand(rules), _iter_ts(os.path.join(folder, f"{rank}.ts"), n_calls, meta.time_resolution)
    ):
        info = cache.get(term)
        if info is None:
            tid, func_id, level, args = sigs[term]
            if func_id == USER_FUNCTION_ID:
                func = args[1] if len(args) > 1 else "user_function"
            elif func_id < len(names):
                func = names[func_id]
            else:
                raise DecodeError(
                    f"recorder: rank {rank} calls function id {func_id}, recorder.mt lists {len(names)}"
                )
            info = cache[term] = (func, level, tid, args)
        yield Call(tstart, tend, info[0], info[1], info[2], info[3])


# --------------------------------------------------------------------------- 2.2.x


@dataclass(frozen=True)
class Meta22:
    time_resolution: float
    total_ranks: int
    compression_mode: int
    peephole_window_size: int
    func_names: list[str]


@dataclass(frozen=True)
class Local22:
    start_timestamp: float
    end_timestamp: float
    total_records: int
    files: dict[int, tuple[str, int]]  # file id -> (path, size at finalize)


_GLOBAL22 = struct.Struct("<diii4x")
_LOCAL22 = struct.Struct(
    "<ddii8x8x1024x"
)  # + char** filemap, size_t* sizes, int function_count[256]
_REC22 = struct.Struct("<BiiiB")  # status, tstart, tend, res, func_id (packed, 14 bytes)


def read_meta22(folder: str) -> Meta22:
    blob = _read_exact(os.path.join(folder, "recorder.mt"), "metadata file")
    if len(blob) < _GLOBAL22.size:
        raise BadHeader(
            f"recorder: recorder.mt has {len(blob)} bytes, the header needs {_GLOBAL22.size}"
        )
    res, ranks, mode, window = _GLOBAL22.unpack_from(blob)
    if ranks < 1 or not (0 < res < 1):
        raise BadHeader(
            f"recorder: recorder.mt header is implausible (ranks={ranks}, resolution={res})"
        )
    if mode not in (1, 2):
        raise UnsupportedFormat(
            f"recorder: 2.2 compression mode {mode} is not supported (1 binary, 2 recorder)"
        )
    return Meta22(res, ranks, mode, window, _func_names(blob[_GLOBAL22.size :], "recorder.mt"))


def read_local22(folder: str, rank: int) -> Local22:
    cur = _Cursor(
        _read_exact(os.path.join(folder, f"{rank}.mt"), "rank metadata file"), f"{rank}.mt"
    )
    start, end, num_files, total = _LOCAL22.unpack(cur.take(_LOCAL22.size))
    if num_files < 0 or total < 0:
        raise BadHeader(f"recorder: {rank}.mt declares {num_files} files and {total} records")
    files = {}
    for _ in range(num_files):
        (fid,) = cur.ints(1)
        (size,) = struct.unpack("<Q", cur.take(8))
        (name_len,) = cur.ints(1)
        files[fid] = (cur.take(name_len).decode("utf-8", "replace"), size)
    return Local22(start, end, total, files)


def iter_rank_calls22(folder: str, meta: Meta22, local: Local22, rank: int) -> Iterator[Call]:
    """One rank's calls sorted by start time (stable), times relative to the rank's own start."""
    name = f"{rank}.itf"
    data = _read_exact(os.path.join(folder, name), "trace file")
    res = meta.time_resolution
    names = meta.func_names
    window: list[tuple[int, tuple[str, ...]]] = []  # decoded records, for peephole references
    out: list[tuple[int, int, int, int, tuple[str, ...]]] = []
    pos, n = 0, len(data)
    while pos < n:
        if pos + _REC22.size + 1 > n:
            raise TruncatedTrace(f"recorder: {name} is truncated inside record {len(out)}")
        status, t0, t1, ret, func_id = _REC22.unpack_from(data, pos)
        nl = data.find(b"\n", pos + _REC22.size)
        if nl < 0:
            raise TruncatedTrace(
                f"recorder: {name} is truncated inside record {len(out)} (no end of line)"
            )
        tail = data[pos + _REC22.size : nl].decode("utf-8", "replace")
        pos = nl + 1
        # arguments are each written as ' ' + text; a compressed record carries only the changed ones
        given = tail.split(" ")[1:] if tail else []
        if status:
            back = func_id
            if back >= len(window):
                raise DecodeError(
                    f"recorder: {name} record {len(out)} refers to a record before the start"
                )
            ref_func, ref_args = window[back]
            args, k = list(ref_args), 0
            for j in range(min(len(args), 7)):
                if status & (1 << j):
                    if k >= len(given):
                        raise DecodeError(
                            f"recorder: {name} record {len(out)} lacks a changed argument"
                        )
                    args[j] = given[k]
                    k += 1
            func_id, args_t = ref_func, tuple(args)
        else:
            args_t = tuple(given)
        window.insert(0, (func_id, args_t))
        del window[max(meta.peephole_window_size, 1) :]
        out.append((t0, len(out), t1, ret, func_id, args_t))
    if len(out) != local.total_records:
        raise TruncatedTrace(
            f"recorder: {name} holds {len(out)} records, {rank}.mt says {local.total_records}"
        )
    out.sort(key=lambda r: (r[0], r[1]))
    for t0, _i, t1, ret, func_id, args in out:
        if func_id >= len(names):
            raise DecodeError(
                f"recorder: {name} calls function id {func_id}, recorder.mt lists {len(names)}"
            )
        yield Call(t0 * res, t1 * res, names[func_id], 0, 0, args, ret)
