"""A huge DXT trace decoded and ingested in bounded memory (issue 16): generator and benchmark.

    .venv/bin/python bench/huge_dxt.py [--gib 1.0] [--out LOG] [--keep]

Writes a Darshan log (format 3.41, zlib) whose DXT_POSIX region inflates to >= `--gib` GiB
(32-byte segments: 1 GiB is 33.5 M segments) into a temporary folder, then runs each step in a
fresh child process, which reports its own peak RSS (getrusage ru_maxrss) and time:

  inflate   Python's zlib inflating the DXT region in 4 MiB pieces, nothing kept: the floor;
  decode    `readers.native_darshan.decode` (io_ops streamed) and every batch read, counted;
  ingest    the executor's work: the ingest stage's mapInArrow function (`make_decode_partition`)
            run without Spark on one ledger row, writing staged Parquet; its io_ops rows counted
            from the staged files' footers and checked against the segments written.

Prints seconds, peak RSS (MiB), rows and the ratio of each step's time to the floor's, then
deletes what it wrote (unless --keep).

The writer (`write_log`, `dxt_record`) follows darshan-util's layout: the 3.41 header
(darshan-log-format.h: version, magic, compression, partial flags, name map, 64 module maps,
64 module versions), zlib regions for the job record (+ exe and mount table), the name records
and each module; DXT records as darshan-dxt-logutils.c reads them: a 104-byte `dxt_file_record`
(base record id, rank, shared_record, hostname[64], write_count, read_count) and then
write_count + read_count 32-byte `segment_info`s (offset, length, start, end), writes first.
Tests use it for small synthetic logs.
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAGIC = 6567223
DXT_POSIX, DXT_MPIIO, POSIX = 10, 11, 1  # module indices of format 3.41
HOST = 64
SEG = 32


def dxt_header(rid: int, rank: int, host: bytes, write_count: int, read_count: int, big: bool = False) -> bytes:
    """The 104-byte `dxt_file_record` (shared_record -1), in byte order `big`."""
    e = ">" if big else "<"
    return (struct.pack(e + "Qqq", rid, rank, -1) + host[:HOST].ljust(HOST, b"\0")
            + struct.pack(e + "qq", write_count, read_count))


def dxt_record(rid: int, rank: int, host: bytes, writes, reads, big: bool = False) -> bytes:
    """One DXT record: its header, then its write and read segments (offset, length, start, end)."""
    e = ">" if big else "<"
    head = dxt_header(rid, rank, host, len(writes), len(reads), big)
    return head + b"".join(struct.pack(e + "qqdd", *s) for s in (*writes, *reads))


def _segments(first: int, n: int, rank: int):
    """`n` realistic segments as little-endian bytes: sequential 1 MiB transfers, increasing times."""
    import numpy as np

    k = np.arange(first, first + n, dtype=np.int64)
    seg = np.empty(n, dtype=[("off", "<i8"), ("len", "<i8"), ("start", "<f8"), ("end", "<f8")])
    seg["off"] = k * (1 << 20)
    seg["len"] = 1 << 20
    seg["start"] = np.round(rank * 1e-3 + k * 2.5e-4, 6)
    seg["end"] = seg["start"] + 2e-4
    return seg.tobytes()


def huge_dxt_region(segments: int, ranks: int = 64, piece: int = 1 << 20) -> Iterable[bytes]:
    """A DXT_POSIX region of `segments` writes spread over `ranks` records, in pieces of at most
    `piece` segments (so the generator holds one piece)."""
    per = -(-segments // ranks)
    left = segments
    for rank in range(ranks):
        n = min(per, left)
        left -= n
        yield dxt_header(0x1234_5678_9ABC + rank, rank, b"nid%05d" % (rank // 8), n, 0)
        for first in range(0, n, piece):
            yield _segments(first, min(piece, n - first), rank)


def write_log(fh, regions: dict[int, Iterable[bytes]], versions: dict[int, int] | None = None,
              comp: int = 0, level: int = 1, big: bool = False) -> None:
    """Writes a format-3.41 log to the seekable `fh`: job and name regions, then each module
    region (module index -> raw record bytes, in pieces), compressed with zlib (`comp` 0) or
    stored (`comp` 2). The header is written last, once the region offsets are known."""
    e = ">" if big else "<"
    versions = versions or {}
    job = struct.pack(e + "7q", 1000, 1_600_000_000, 0, 1_600_000_100, 0, 64, 42)
    job += b"lib_ver=3.4.0\n".ljust(1024, b"\0") + b"/bin/bench\nlustre\t/scratch\0"
    names = struct.pack(e + "Q", 0x1234_5678_9ABC) + b"/scratch/huge.dat\0"

    def put(pieces: Iterable[bytes]) -> tuple[int, int]:
        off = fh.tell()
        z = zlib.compressobj(level) if comp == 0 else None
        for p in pieces:
            fh.write(z.compress(p) if z else p)
        if z:
            fh.write(z.flush())
        return off, fh.tell() - off

    fh.seek(1328)
    maps = {"job": put([job]), "names": put([names])}
    mod_map = [(0, 0)] * 64
    mod_ver = [0] * 64
    for i in sorted(regions):
        mod_map[i] = put(regions[i])
        mod_ver[i] = versions.get(i, 1)
    head = b"3.41".ljust(8, b"\0") + struct.pack(e + "q", MAGIC) + bytes([comp]) + bytes(7) + struct.pack("<Q", 0)
    head += struct.pack(e + "QQ", *maps["names"]) + b"".join(struct.pack(e + "QQ", *m) for m in mod_map)
    head += struct.pack(e + "64I", *mod_ver)
    assert len(head) == 1328
    fh.seek(0)
    fh.write(head)
    # darshan-util finds the job region right after the header
    assert maps["job"][0] == 1328


# ---------------------------------------------------------------------------------------------
# the steps, each run in a child process


def _inflate(path: str) -> dict:
    """The floor: inflate the DXT region with Python's zlib, 4 MiB at a time, nothing kept."""
    with open(path, "rb") as fh:
        head = fh.read(1328)
        # the 3.41 header: version[8], magic, comp + partial flags, name map, then 64 module maps
        off, n = struct.unpack_from("<QQ", head, 48 + 16 * DXT_POSIX)
        fh.seek(off)
        data = fh.read(n)
    out = 0
    z = zlib.decompressobj()
    view = memoryview(data)
    for i in range(0, len(data), 1 << 20):  # 1 MiB of input at a time, at most 4 MiB out per call
        buf = view[i:i + (1 << 20)]
        while buf:
            out += len(z.decompress(buf, 4 << 20))
            buf = z.unconsumed_tail
    return {"rows": 0, "bytes": out}


def _decode(path: str) -> dict:
    from readers.native_darshan import decode

    d = decode(path)
    rows = sum(b.num_rows for b in d.streams["io_ops"]())
    return {"rows": rows, "streamed": "io_ops" in d.streams, "status": d.status}


def _ingest(path: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from iolake.config import load_config
    from jobs.ingest_tasks import HASHED_SCHEMA, make_decode_partition  # noqa: F401

    staging = tempfile.mkdtemp(prefix="huge-dxt-staging-", dir=os.path.dirname(path))
    conf = load_config("local").ingest
    row = {"log_id": "f" * 64, "source_uri": path, "size_bytes": os.path.getsize(path), "mtime_ns": 0,
           "kind": "darshan"}
    fn = make_decode_partition(conf, staging, "bench")
    out = list(fn(iter([pa.RecordBatch.from_pylist([row])])))
    ledger = out[0].to_pylist()[0]
    files = [f for f in ledger["staged"] if "/io_ops/" in f]
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    return {"rows": rows, "status": ledger["status"], "reason": ledger["reason"],
            "row_counts": dict(ledger["row_counts"] or []), "staged": staging}


STEPS = {"inflate": _inflate, "decode": _decode, "ingest": _ingest}


def _child(step: str, path: str) -> None:
    import resource

    sys.path.insert(0, str(ROOT))
    t0 = time.monotonic()
    res = STEPS[step](path)
    res["seconds"] = time.monotonic() - t0
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res))


def _run(step: str, path: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", step, path], check=True, capture_output=True,
                         text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=1.0, help="decompressed size of the DXT region (GiB)")
    ap.add_argument("--out", help="write the log here instead of a temporary folder")
    ap.add_argument("--keep", action="store_true", help="keep the log and the staged files")
    ap.add_argument("--child", nargs=2, metavar=("STEP", "LOG"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(*a.child)
        return 0
    import shutil

    tmp = tempfile.mkdtemp(prefix="huge-dxt-")
    path = a.out or os.path.join(tmp, "huge_dxt.darshan")
    ranks = 64
    segments = -(-int(a.gib * (1 << 30)) // SEG)
    t0 = time.monotonic()
    with open(path, "wb") as fh:
        write_log(fh, {DXT_POSIX: huge_dxt_region(segments, ranks)})
    region = segments * SEG + ranks * 104
    print(f"wrote {path}: {os.path.getsize(path) / 2**20:,.0f} MiB, DXT_POSIX region {region / 2**30:.3f} GiB "
          f"decompressed, {segments:,} segments in {ranks} records ({time.monotonic() - t0:.0f} s)")
    results = {}
    try:
        for step in STEPS:
            results[step] = _run(step, path)
            if step == "ingest":
                shutil.rmtree(results[step]["staged"], ignore_errors=True)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
            if a.out:
                os.unlink(a.out)
    floor = results["inflate"]["seconds"]
    print(f"\n{'step':<9}{'seconds':>9}{'peak RSS MiB':>14}{'rows':>16}{'x floor':>9}")
    for step, r in results.items():
        rows = f"{r['rows']:,}" if step != "inflate" else f"({r['bytes'] / 2**30:.3f} GiB)"
        print(f"{step:<9}{r['seconds']:>9.1f}{r['peak_rss_mib']:>14,.0f}{rows:>16}{r['seconds'] / floor:>9.2f}")
    ing = results["ingest"]
    ok = ing["rows"] == segments and results["decode"]["rows"] == segments and ing["status"] == "ok"
    print(f"\ningest ledger: status {ing['status']}, row_counts {ing['row_counts']}; staged io_ops rows "
          f"{'==' if ing['rows'] == segments else '!='} {segments:,} segments written")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
