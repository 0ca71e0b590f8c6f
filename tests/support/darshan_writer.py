"""Synthetic Darshan logs (format 3.41) written byte by byte: the tests' small DXT logs and
bench.huge_dxt's huge one.

The layout follows darshan-util: the 3.41 header (darshan-log-format.h: version, magic,
compression, partial flags, name map, 64 module maps, 64 module versions), zlib regions for the
job record (+ exe and mount table), the name records and each module; DXT records as
darshan-dxt-logutils.c reads them: a 104-byte `dxt_file_record` (base record id, rank,
shared_record, hostname[64], write_count, read_count) and then write_count + read_count 32-byte
`segment_info`s (offset, length, start, end), writes first.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

MAGIC = 6567223
DXT_POSIX, DXT_MPIIO, POSIX = 10, 11, 1  # module indices of format 3.41
MPIIO, STDIO, HEATMAP = 2, 9, 15
VERSIONS = {POSIX: 4, MPIIO: 3, STDIO: 2, HEATMAP: 1}  # module versions of format 3.41
HEADER = 1328  # bytes of the 3.41 header; the job region follows it
HOST = 64
SEG = 32
RECORD_ID = 0x1234_5678_9ABC  # the one name record `write_log` writes (/scratch/huge.dat)


def dxt_header(
    rid: int, rank: int, host: bytes, write_count: int, read_count: int, big: bool = False
) -> bytes:
    """The 104-byte `dxt_file_record` (shared_record -1), in byte order `big`."""
    e = ">" if big else "<"
    return (
        struct.pack(e + "Qqq", rid, rank, -1)
        + host[:HOST].ljust(HOST, b"\0")
        + struct.pack(e + "qq", write_count, read_count)
    )


def dxt_record(rid: int, rank: int, host: bytes, writes, reads, big: bool = False) -> bytes:
    """One DXT record: its header, then its write and read segments (offset, length, start, end)."""
    e = ">" if big else "<"
    head = dxt_header(rid, rank, host, len(writes), len(reads), big)
    return head + b"".join(struct.pack(e + "qqdd", *s) for s in (*writes, *reads))


def counter_record(table: str, rid: int, rank: int, big: bool = False, **values) -> bytes:
    """One record of a counter module (`posix`, `mpiio`, `stdio`) as darshan-util reads it: base
    record (id, rank), the integer counters, then the floating-point ones (darshan-*-log-format.h),
    each 0 unless named in `values` (e.g. POSIX_F_READ_TIME=1.5)."""
    from schemas.darshan_counters import MODULE_COUNTERS

    _, ints, floats = MODULE_COUNTERS[table]
    unknown = set(values) - set(ints) - set(floats)
    assert not unknown, unknown
    e = ">" if big else "<"
    return (
        struct.pack(e + "Qq", rid, rank)
        + struct.pack(e + f"{len(ints)}q", *(int(values.get(c, 0)) for c in ints))
        + struct.pack(e + f"{len(floats)}d", *(float(values.get(c, 0.0)) for c in floats))
    )


def heatmap_record(rid: int, rank: int, width: float, write_bins, read_bins, big=False) -> bytes:
    """One HEATMAP record (darshan-heatmap-log-format.h, as darshan-heatmap-logutils.c reads it):
    base record, bin_width_seconds, nbins, two pointer words (not read), then nbins write and nbins
    read byte counts."""
    assert len(write_bins) == len(read_bins)
    e = ">" if big else "<"
    n = len(write_bins)
    return (
        struct.pack(e + "Qqdqqq", rid, rank, width, n, 0, 0)
        + struct.pack(e + f"{n}q", *write_bins)
        + struct.pack(e + f"{n}q", *read_bins)
    )


def write_log(
    fh,
    regions: dict[int, Iterable[bytes]],
    versions: dict[int, int] | None = None,
    comp: int = 0,
    level: int = 1,
    big: bool = False,
    names: dict[int, str] | None = None,
    nprocs: int = 64,
) -> None:
    """Writes a format-3.41 log to the seekable `fh`: job and name regions, then each module
    region (module index -> raw record bytes, in pieces), compressed with zlib (`comp` 0) or
    stored (`comp` 2). The header is written last, once the region offsets are known. `names`
    (record id -> name) replaces the one name record /scratch/huge.dat."""
    e = ">" if big else "<"
    versions = versions or {}
    job = struct.pack(e + "7q", 1000, 1_600_000_000, 0, 1_600_000_100, 0, nprocs, 42)
    job += b"lib_ver=3.4.0\n".ljust(1024, b"\0") + b"/bin/bench\nlustre\t/scratch\0"
    names = names or {RECORD_ID: "/scratch/huge.dat"}
    names = b"".join(struct.pack(e + "Q", k) + v.encode() + b"\0" for k, v in names.items())

    def put(pieces: Iterable[bytes]) -> tuple[int, int]:
        off = fh.tell()
        z = zlib.compressobj(level) if comp == 0 else None
        for p in pieces:
            fh.write(z.compress(p) if z else p)
        if z:
            fh.write(z.flush())
        return off, fh.tell() - off

    fh.seek(HEADER)
    maps = {"job": put([job]), "names": put([names])}
    mod_map = [(0, 0)] * 64
    mod_ver = [0] * 64
    for i in sorted(regions):
        mod_map[i] = put(regions[i])
        mod_ver[i] = versions.get(i, 1)
    head = (
        b"3.41".ljust(8, b"\0")
        + struct.pack(e + "q", MAGIC)
        + bytes([comp])
        + bytes(7)
        + struct.pack("<Q", 0)
    )
    head += struct.pack(e + "QQ", *maps["names"]) + b"".join(
        struct.pack(e + "QQ", *m) for m in mod_map
    )
    head += struct.pack(e + "64I", *mod_ver)
    assert len(head) == HEADER
    fh.seek(0)
    fh.write(head)
    # darshan-util finds the job region right after the header
    assert maps["job"][0] == HEADER
