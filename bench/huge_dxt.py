"""A huge DXT trace decoded and ingested in bounded memory: peak RSS and seconds of each step.

    python -m bench.huge_dxt [--gib 1.0] [--out LOG] [--keep]
    python -m bench.huge_dxt --quick         # a 0.02 GiB region

Writes a Darshan log (format 3.41, zlib; `tests/support/darshan_writer.py`) whose DXT_POSIX
region inflates to >= `--gib` GiB (32-byte segments: 1 GiB is 33.5 M segments) into a temporary
folder, then runs each step in a fresh child process, which reports its own peak RSS (getrusage
ru_maxrss) and time:

  inflate   Python's zlib inflating the DXT region in 4 MiB pieces, nothing kept: the floor;
  decode    `readers.native_darshan.decode` (io_ops streamed) and every batch read, counted;
  ingest    the executor's work: the ingest stage's mapInArrow function (`make_decode_partition`)
            run without Spark on one ledger row, writing staged Parquet; its io_ops rows counted
            from the staged files' footers and checked against the segments written.

Prints seconds, peak RSS (MiB), rows and the ratio of each step's time to the floor's, then
deletes what it wrote (unless --keep).
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

from bench.common import ROOT, parser, result
from tests.support.darshan_writer import DXT_POSIX, HEADER, SEG, dxt_header, write_log


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


# ---------------------------------------------------------------------------------------------
# the steps, each run in a child process


def _inflate(path: str) -> dict:
    """The floor: inflate the DXT region with Python's zlib, 4 MiB at a time, nothing kept."""
    with open(path, "rb") as fh:
        head = fh.read(HEADER)
        # the 3.41 header: version[8], magic, comp + partial flags, name map, then 64 module maps
        off, n = struct.unpack_from("<QQ", head, 48 + 16 * DXT_POSIX)
        fh.seek(off)
        data = fh.read(n)
    out = 0
    z = zlib.decompressobj()
    view = memoryview(data)
    for i in range(0, len(data), 1 << 20):  # 1 MiB of input at a time, at most 4 MiB out per call
        buf = view[i : i + (1 << 20)]
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
    row = {
        "log_id": "f" * 64,
        "source_uri": path,
        "size_bytes": os.path.getsize(path),
        "mtime_ns": 0,
        "kind": "darshan",
    }
    fn = make_decode_partition(conf, staging, "bench")
    out = list(fn(iter([pa.RecordBatch.from_pylist([row])])))
    ledger = out[0].to_pylist()[0]
    files = [f for f in ledger["staged"] if "/io_ops/" in f]
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    return {
        "rows": rows,
        "status": ledger["status"],
        "reason": ledger["reason"],
        "row_counts": dict(ledger["row_counts"] or []),
        "staged": staging,
    }


STEPS = {"inflate": _inflate, "decode": _decode, "ingest": _ingest}


def _child(step: str, path: str) -> None:
    import resource

    t0 = time.monotonic()
    res = STEPS[step](path)
    res["seconds"] = time.monotonic() - t0
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res))


def _run(step: str, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.huge_dxt", "--child", step, path],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument(
        "--gib", type=float, default=1.0, help="decompressed size of the DXT region (GiB)"
    )
    ap.add_argument("--out", help="write the log here instead of a temporary folder")
    ap.add_argument("--keep", action="store_true", help="keep the log and the staged files")
    ap.add_argument("--quick", action="store_true", help="a 0.02 GiB region")
    ap.add_argument("--child", nargs=2, metavar=("STEP", "LOG"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.quick:
        a.gib = 0.02
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
    print(
        f"wrote {path}: {os.path.getsize(path) / 2**20:,.0f} MiB, DXT_POSIX region {region / 2**30:.3f} GiB "
        f"decompressed, {segments:,} segments in {ranks} records ({time.monotonic() - t0:.0f} s)"
    )
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
        print(
            f"{step:<9}{r['seconds']:>9.1f}{r['peak_rss_mib']:>14,.0f}{rows:>16}{r['seconds'] / floor:>9.2f}"
        )
    ing = results["ingest"]
    ok = ing["rows"] == segments and results["decode"]["rows"] == segments and ing["status"] == "ok"
    print(
        f"\ningest ledger: status {ing['status']}, row_counts {ing['row_counts']}; staged io_ops rows "
        f"{'==' if ing['rows'] == segments else '!='} {segments:,} segments written"
    )
    dec = results["decode"]
    result(
        "huge_dxt",
        f"{region / 2**30:.3f} GiB DXT region: decode {dec['seconds']:.1f} s "
        f"({dec['seconds'] / floor:.2f}x the floor), peak RSS decode {dec['peak_rss_mib']:,.0f} MiB, "
        f"ingest {ing['peak_rss_mib']:,.0f} MiB; rows {'ok' if ok else 'WRONG'}",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
