"""Reading trace files through pyarrow.fs, so local paths, file://, s3:// and hdfs:// work alike."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs


@dataclass(frozen=True)
class TraceFile:
    uri: str  # what the ledger records: an absolute local path or a full URI
    size_bytes: int
    mtime_ns: int | None
    kind: str  # darshan | recorder


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in uri:
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    if uri.startswith("file://"):
        return pafs.LocalFileSystem(), unquote(urlparse(uri).path)
    return pafs.FileSystem.from_uri(uri)


def is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def local_path(uri: str) -> str:
    return resolve(uri)[1]


def read_bytes(uri: str, limit: int | None = None) -> bytes:
    fs, path = resolve(uri)
    with fs.open_input_stream(path) as f:
        return f.read(limit) if limit is not None else f.read()


def content_hash(uri: str, kind: str = "darshan") -> str:
    """sha256 of a trace's content: the log's identity (`log_id`) everywhere in the lake."""
    return hash_and_head(uri, kind)[0]


def hash_and_head(uri: str, kind: str = "darshan") -> tuple[str, bytes]:
    """(`content_hash`, the file's first MiB) in one read; the head is empty for a Recorder trace
    folder. Ingest reads a log's job header from the head (`readers.darshan_header.job_start`)
    without opening it again."""
    fs, path = resolve(uri)
    h = hashlib.sha256()
    if kind == "recorder":  # a trace folder: names and contents of its files, in name order
        infos = sorted(
            fs.get_file_info(pafs.FileSelector(path, recursive=True)), key=lambda i: i.path
        )
        for info in infos:
            if info.type == pafs.FileType.File and "/_text/" not in info.path[len(path) :] + "/":
                h.update(info.path[len(path) :].encode() + b"\0")
                _hash_stream(fs, info.path, h)
        return h.hexdigest(), b""
    head = _hash_stream(fs, path, h)
    return h.hexdigest(), head


def _hash_stream(fs, path: str, h) -> bytes:
    """Feed the file to `h`; returns its first chunk (1 MiB or the whole of a smaller file)."""
    head = None
    with fs.open_input_stream(path) as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            head = chunk if head is None else head
    return head or b""


def _to_uri(fs, path: str, root_uri: str) -> str:
    if isinstance(fs, pafs.LocalFileSystem):
        return path
    scheme = urlparse(root_uri).scheme
    return f"{scheme}://{path}"


def _is_recorder_dir(fs, path: str) -> bool:
    infos = fs.get_file_info([f"{path}/recorder.mt", f"{path}/VERSION"])
    return all(i.type == pafs.FileType.File for i in infos)


def list_traces(inputs: list[str], suffixes: list[str]) -> list[TraceFile]:
    """Every Darshan log (by suffix) and Recorder trace folder under the inputs, deduplicated."""
    found: dict[str, TraceFile] = {}
    for root in inputs:
        fs, path = resolve(root)
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"input not found: {root}")
        if info.type == pafs.FileType.File:
            t = TraceFile(_to_uri(fs, path, root), info.size, info.mtime_ns, "darshan")
            found[t.uri] = t
            continue
        if _is_recorder_dir(fs, path):
            found[path] = _recorder_entry(fs, path, root)
            continue
        files = _files_under(fs, path)
        recorder_dirs: set[str] = set()
        for i in files:
            if i.base_name == "recorder.mt":
                d = i.path.rsplit("/", 1)[0]
                if _is_recorder_dir(fs, d):
                    recorder_dirs.add(d)
        for d in recorder_dirs:
            t = _recorder_entry(fs, d, root)
            found[t.uri] = t
        for i in files:
            if any(i.path.startswith(d + "/") for d in recorder_dirs):
                continue
            if any(i.base_name.endswith(s) for s in suffixes):
                t = TraceFile(_to_uri(fs, i.path, root), i.size, i.mtime_ns, "darshan")
                found[t.uri] = t
    return sorted(found.values(), key=lambda t: t.uri)


def _files_under(fs, path: str) -> list:
    """Every regular file under the folder `path` (FileInfo), sorted by path. On a local file system
    the walk enters each real directory once (by device and inode), so a symbolic-link loop such as
    `latest -> .` is not followed round and round until the path-length limit, as pyarrow's
    recursive selector does; a link to a folder outside the tree is still followed."""
    if not isinstance(fs, pafs.LocalFileSystem):
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
        return sorted((i for i in infos if i.type == pafs.FileType.File), key=lambda i: i.path)
    seen: set[tuple[int, int]] = set()
    paths: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path, followlinks=True):
        try:
            st = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames.sort()
        paths += [f"{dirpath}/{f}" for f in filenames]
    infos = fs.get_file_info(paths) if paths else []
    return sorted((i for i in infos if i.type == pafs.FileType.File), key=lambda i: i.path)


def _recorder_entry(fs, path: str, root: str) -> TraceFile:
    infos = _files_under(fs, path)
    size = sum(i.size for i in infos)
    mtime = max((i.mtime_ns or 0) for i in infos) if infos else None
    return TraceFile(_to_uri(fs, path, root), size, mtime, "recorder")
