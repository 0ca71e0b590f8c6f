"""Meaning of Recorder calls: operation class, file touched, offset and length.

`RankOps` walks one rank's calls in trace order and turns each into an `Op`, keeping the
per-rank state that offsets need (file pointers, MPI-IO views and pointers, a local view of
each file's end). The offset rule follows the one Recorder's `build_offset_intervals` and
PrismIO's IOFrame use (open -> 0, O_APPEND/'a' -> end of file, lseek/fseek SET/CUR/END,
read/write advance the pointer, pread/pwrite carry their offset); see docs/formats/recorder.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from readers.recorder_format import Call

O_TRUNC = 0o1000
O_APPEND = 0o2000
SEEK_WHENCE = {"0": 0, "1": 1, "2": 2, "MPI_SEEK_SET": 0, "MPI_SEEK_CUR": 1, "MPI_SEEK_END": 2}
STD_STREAMS = {0: "<STDIN>", 1: "<STDOUT>", 2: "<STDERR>"}  # Darshan's names for fds 0-2

OPEN_FUNCS = {
    "creat",
    "creat64",
    "open",
    "open64",
    "fopen",
    "fopen64",
    "fdopen",
    "MPI_File_open",
    "H5Fcreate",
    "H5Fopen",
}
CLOSE_FUNCS = {"close", "fclose", "MPI_File_close", "H5Fclose"}
SEEK_FUNCS = {
    "lseek",
    "lseek64",
    "fseek",
    "fseeko",
    "ftell",
    "ftello",
    "MPI_File_seek",
    "MPI_File_seek_shared",
}
SYNC_FUNCS = {"fsync", "fdatasync", "msync", "MPI_File_sync", "H5Fflush"}
POSIX_READS = {"read", "pread", "pread64", "readv"}
POSIX_WRITES = {"write", "pwrite", "pwrite64", "writev"}
STDIO_READS = {"fread"}
STDIO_WRITES = {"fwrite", "vfprintf"}
STAT_FUNCS = {"__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat", "__fxstat64"}
META_FUNCS = STAT_FUNCS | {
    "getcwd",
    "mkdir",
    "rmdir",
    "chdir",
    "link",
    "linkat",
    "unlink",
    "symlink",
    "symlinkat",
    "readlink",
    "readlinkat",
    "rename",
    "chmod",
    "chown",
    "lchown",
    "utime",
    "opendir",
    "readdir",
    "closedir",
    "rewinddir",
    "mknod",
    "mknodat",
    "fcntl",
    "access",
    "faccessat",
    "remove",
    "truncate",
    "ftruncate",
    "mkfifo",
    "fileno",
    "dup",
    "dup2",
    "MPI_File_set_size",
    "MPI_File_get_size",
    "MPI_File_set_view",
}
# Functions whose file argument is a descriptor/stream (2.2 writes the number, 2.5 the path).
FD_FUNCS = {
    "close",
    "write",
    "read",
    "lseek",
    "lseek64",
    "pread",
    "pread64",
    "pwrite",
    "pwrite64",
    "readv",
    "writev",
    "fsync",
    "fdatasync",
    "fread",
    "fwrite",
    "fclose",
    "fseek",
    "ftell",
    "fseeko",
    "ftello",
    "vfprintf",
    "__fxstat",
    "__fxstat64",
    "mmap",
    "mmap64",
    "fcntl",
    "ftruncate",
    "fdopen",
    "fileno",
    "dup",
    "dup2",
}
NO_FILE_FUNCS = {
    "getcwd",
    "umask",
    "msync",
    "readdir",
    "closedir",
    "rewinddir",
    "pipe",
    "tmpfile",
    "dup",
    "dup2",
}
PATH_ARG = {  # position of the file argument where it is not the first
    **{f: 1 for f in STAT_FUNCS},
    "fread": 3,
    "fwrite": 3,
    "mmap": 4,
    "mmap64": 4,
    "linkat": 1,
    "faccessat": 1,
    "readlinkat": 1,
    "symlinkat": 2,
    "mknod": 1,
    "mknodat": 2,
    "MPI_File_open": 1,
    "H5Fcreate": 0,
    "H5Fopen": 0,
}
MPI_TYPE_SIZE = {
    "MPI_BYTE": 1,
    "MPI_CHAR": 1,
    "MPI_SIGNED_CHAR": 1,
    "MPI_UNSIGNED_CHAR": 1,
    "MPI_CHARACTER": 1,
    "MPI_SHORT": 2,
    "MPI_UNSIGNED_SHORT": 2,
    "MPI_INT": 4,
    "MPI_UNSIGNED": 4,
    "MPI_INTEGER": 4,
    "MPI_FLOAT": 4,
    "MPI_REAL": 4,
    "MPI_INT32_T": 4,
    "MPI_UINT32_T": 4,
    "MPI_LONG": 8,
    "MPI_UNSIGNED_LONG": 8,
    "MPI_LONG_LONG_INT": 8,
    "MPI_LONG_LONG": 8,
    "MPI_UNSIGNED_LONG_LONG": 8,
    "MPI_DOUBLE": 8,
    "MPI_DOUBLE_PRECISION": 8,
    "MPI_INT64_T": 8,
    "MPI_UINT64_T": 8,
    "MPI_OFFSET": 8,
    "MPI_LONG_DOUBLE": 16,
}


def layer(func: str) -> str:
    """posix | stdio | mpiio | mpi | hdf5 | other — the Darshan-like module a call belongs to."""
    if func.startswith("MPI_File"):
        return "mpiio"
    if func.startswith("MPI_"):
        return "mpi"
    if func.startswith("H5"):
        return "hdf5"
    if (
        func in STDIO_READS
        or func in STDIO_WRITES
        or func
        in {"fopen", "fopen64", "fdopen", "fclose", "fseek", "fseeko", "ftell", "ftello", "fileno"}
    ):
        return "stdio"
    return "posix"


def op_class(func: str) -> str:
    if (
        func in POSIX_READS
        or func in STDIO_READS
        or func.startswith(("MPI_File_read", "MPI_File_iread"))
        or func in ("H5Dread", "H5Aread")
    ):
        return "read"
    if (
        func in POSIX_WRITES
        or func in STDIO_WRITES
        or func.startswith(("MPI_File_write", "MPI_File_iwrite"))
        or func in ("H5Dwrite", "H5Awrite")
    ):
        return "write"
    if func in OPEN_FUNCS:
        return "open"
    if func in CLOSE_FUNCS:
        return "close"
    if func in SEEK_FUNCS:
        return "seek"
    if func in SYNC_FUNCS:
        return "sync"
    if func in META_FUNCS or func.startswith(("H5D", "H5G", "H5A", "H5O", "H5L", "H5F")):
        return "meta"
    return "other"


def _int(s: str | None) -> int | None:
    if s is None:
        return None
    try:
        return int(s)
    except ValueError:
        return None


def _arg(args: tuple[str, ...], i: int) -> str | None:
    return args[i] if 0 <= i < len(args) else None


@dataclass(slots=True)
class Op:
    path: str | None
    op: str
    func: str
    offset: int | None
    length: int | None
    call: Call
    extra: dict | None = None  # rollup facts: open mode/flags, MPI comm, seek whence ...


@dataclass(slots=True)
class _View:
    disp: int = 0
    esize: int | None = 1  # etype size in bytes; None = unknown
    contiguous: bool = True  # filetype is a named (contiguous) type
    ptr: int | None = 0  # individual file pointer, in etypes


class RankOps:
    """Per-rank decoding state. `fd_args` is True for 2.2 traces (fds instead of paths)."""

    def __init__(self, fd_args: bool):
        self.fd_args = fd_args
        self.fd_path: dict[int, str] = {}
        self.pos: dict[object, int | None] = {}  # handle (fd or path) -> file pointer
        self.eof: dict[str, int] = {}  # path -> end of file as far as this rank knows
        self.eof_exact: set[str] = set()  # paths whose size this rank saw set (trunc, set_size ...)
        self.fh_path: dict[str, str] = {}
        self.views: dict[str, _View] = {}
        self.last_read_returned: int | None = None

    # -- file resolution ----------------------------------------------------------------
    def _handle(self, func: str, args: tuple[str, ...]) -> tuple[object, str | None]:
        """(handle key for the file pointer, path) of a call's file argument."""
        if func.startswith("MPI_File") and func != "MPI_File_open":
            fh = _arg(args, 0)
            return fh, self.fh_path.get(fh) if fh is not None else None
        if func in NO_FILE_FUNCS or func.startswith(("MPI_", "H5")) and func not in PATH_ARG:
            return None, None
        raw = _arg(args, PATH_ARG.get(func, 0))
        if raw is None or raw in ("%p", "???"):
            return None, None
        if self.fd_args and func in FD_FUNCS:
            fd = _int(raw)
            if fd is None:
                return None, None
            return fd, self.fd_path.get(fd, STD_STREAMS.get(fd))
        return raw, raw

    # -- main step ------------------------------------------------------------------------
    def step(self, call: Call) -> Op:
        func, args = call.func, call.args
        op = op_class(func)
        handle, path = self._handle(func, args)
        offset = length = None
        extra = None
        if func.startswith("MPI_File"):
            offset, length, extra = self._mpi(func, args, handle, path, op)
        elif op == "open":
            extra = self._open(func, args, call, handle, path)
        elif op in ("read", "write") and not func.startswith("H5"):
            self.last_read_returned = None
            offset, length = self._rw(func, args, handle, path)
            if self.last_read_returned is not None:
                extra = {"returned": self.last_read_returned}
        elif op == "seek":
            offset, extra = self._seek(func, args, handle, path)
        elif op == "close" and handle is not None:
            self.pos.pop(handle, None)
            if self.fd_args and isinstance(handle, int):
                self.fd_path.pop(handle, None)
        elif func in ("ftruncate", "truncate") and path is not None:
            size = _int(_arg(args, 1))
            if size is not None:
                self._set_eof(path, size)
        elif func == "rename":
            extra = {"target": _arg(args, 1)}
        return Op(path, op, func, offset, length, call, extra)

    def _open(self, func, args, call, handle, path) -> dict | None:
        if func.startswith("H5") or path is None:
            return None
        if func in ("fopen", "fopen64", "fdopen"):
            mode = _arg(args, 1) or ""
            append, trunc, flags, perm = "a" in mode, "w" in mode, None, None
        elif func in ("creat", "creat64"):
            append, trunc, flags, perm = False, True, None, _int(_arg(args, 1))
        else:
            flags = _int(_arg(args, 1)) or 0
            append, trunc, perm = bool(flags & O_APPEND), bool(flags & O_TRUNC), _int(_arg(args, 2))
        if trunc:
            self._set_eof(path, 0)
        if self.fd_args:  # 2.2: the descriptor is the call's return value
            key = call.res
            if func == "fdopen":
                old = _int(_arg(args, 0))
                path = self.fd_path.get(old, path) if old is not None else path
            if key is None or key < 0:
                return {"flags": flags, "mode": perm}
            self.fd_path[key] = path
        else:
            key = path
        self.pos[key] = self._exact_eof(path) if append else 0
        return {"flags": flags, "mode": perm}

    def _rw(self, func, args, handle, path) -> tuple[int | None, int | None]:
        if func in ("pread", "pread64", "pwrite", "pwrite64"):
            length, offset = _int(_arg(args, 2)), _int(_arg(args, 3))
        else:
            if func in ("read", "write"):
                length = _int(_arg(args, 2))
            elif func in ("readv", "writev", "vfprintf"):
                length = _int(_arg(args, 1))
            else:  # fread / fwrite: size * nmemb
                size, nmemb = _int(_arg(args, 1)), _int(_arg(args, 2))
                length = size * nmemb if size is not None and nmemb is not None else None
            offset = self.pos.get(handle) if handle is not None else None
            if handle is not None:
                self.pos[handle] = (
                    offset + length if offset is not None and length is not None else None
                )
        if path is not None and offset is not None and length is not None:
            if op_class(func) == "write":
                self.eof[path] = max(self.eof.get(path, 0), offset + length)
            else:
                end = self._exact_eof(path)
                if end is not None:  # bytes a read can return, given the size this rank knows
                    self.last_read_returned = max(0, min(length, end - offset))
        return offset, length

    def _set_eof(self, path: str, size: int):
        self.eof[path] = size
        self.eof_exact.add(path)

    def _exact_eof(self, path: str | None) -> int | None:
        return self.eof.get(path) if path in self.eof_exact else None

    def _seek(self, func, args, handle, path) -> tuple[int | None, dict | None]:
        if func in ("ftell", "ftello"):
            return (self.pos.get(handle) if handle is not None else None), None
        if func.startswith("MPI_File"):
            return None, None
        off, whence = _int(_arg(args, 1)), SEEK_WHENCE.get(_arg(args, 2) or "")
        cur = self.pos.get(handle) if handle is not None else None
        if off is None or whence is None:
            new = None
        elif whence == 0:
            new = off
        elif whence == 1:
            new = cur + off if cur is not None else None
        else:
            end = self._exact_eof(path)
            new = end + off if end is not None else None
        if handle is not None:
            self.pos[handle] = new
        return new, {"whence": whence}

    def _mpi(self, func, args, fh, path, op):
        """MPI-IO offsets in bytes: view displacement + offset x etype size (contiguous views only)."""
        extra = None
        if func == "MPI_File_open":
            fh_new, path = _arg(args, 4), _arg(args, 1)
            if fh_new is not None and path is not None:
                self.fh_path[fh_new] = path
                self.views[fh_new] = _View()
            return None, None, {"comm": _arg(args, 0), "amode": _int(_arg(args, 2))}
        view = self.views.get(fh) if fh is not None else None
        if func == "MPI_File_close":
            self.views.pop(fh, None)
            return None, None, None
        if func == "MPI_File_set_view":
            if view is not None:
                view.disp = _int(_arg(args, 1)) or 0
                view.esize = MPI_TYPE_SIZE.get(_arg(args, 2) or "")
                view.contiguous = (_arg(args, 3) or "") in MPI_TYPE_SIZE
                view.ptr = 0
            return None, None, None
        if func in ("MPI_File_get_size", "MPI_File_set_size"):
            size = _int(_arg(args, 1))
            if path is not None and size is not None:
                self._set_eof(path, size)
            return None, None, None
        if func == "MPI_File_seek":
            off, whence = _int(_arg(args, 1)), SEEK_WHENCE.get(_arg(args, 2) or "")
            if view is None:
                return None, None, None
            if off is None or whence is None or whence == 2:
                view.ptr = None
            elif whence == 0:
                view.ptr = off
            else:
                view.ptr = view.ptr + off if view.ptr is not None else None
            return self._bytes(view, view.ptr), None, {"whence": whence}
        if op not in ("read", "write"):
            return None, None, None
        at = "_at" in func
        count = _int(_arg(args, 3 if at else 2))
        tsize = MPI_TYPE_SIZE.get(_arg(args, 4 if at else 3) or "")
        length = count * tsize if count is not None and tsize is not None else None
        if view is None or "shared" in func or "ordered" in func:
            return None, length, extra
        if at:
            offset = self._bytes(view, _int(_arg(args, 1)))
        else:
            offset = self._bytes(view, view.ptr)
            if view.ptr is not None and length is not None and view.esize:
                view.ptr += length // view.esize
            else:
                view.ptr = None
        return offset, length, extra

    @staticmethod
    def _bytes(view: _View, etypes: int | None) -> int | None:
        if etypes is None or view.esize is None or not view.contiguous:
            return None
        return view.disp + etypes * view.esize
