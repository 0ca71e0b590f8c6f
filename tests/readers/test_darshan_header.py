"""`readers.darshan_header.job_start`: the job's start read from a log's first bytes (decision 0052)."""

from __future__ import annotations

import bz2
import gzip
import struct
import zlib

import pytest

from jobs.ingest_tasks import job_month
from readers.darshan_header import job_start
from readers.native_darshan import decode_darshan
from tests.support.data import shared_path

HEAD = 1 << 20  # what ingest's hash pass keeps of each file


def _logs():
    roots = [shared_path("darshan"), shared_path("iosweep", "darshan")]
    return sorted(p for r in roots for p in r.rglob("*") if p.is_file() and ".darshan" in p.name)


def test_job_start_gives_the_decoders_month_on_every_readable_shared_log():
    months, agree = 0, 0
    for path in _logs():
        data = path.read_bytes()
        try:
            jobs = decode_darshan(data)["jobs"]
        except Exception:  # a log the decoder quarantines: no month to compare with
            continue
        months += 1
        start = job_start(data[:HEAD])
        want = job_month(jobs.column("start_time_sec")[0].as_py())
        agree += start is not None and job_month(start) == want
    assert months > 1000  # zlib, bzip2 and uncompressed logs of 3.00-3.41 among them
    assert agree == months


def _log(version: bytes, start: int, order: str = "<", comp: int = 0) -> bytes:
    """A Darshan 3.x header and job region built from darshan-log-format.h by hand: 3.41 puts 65
    region maps at byte 32 of a 1,328-byte header, older versions 17 maps at byte 24 of 360; the
    job region (uid, start, ...) follows, compressed, up to the name region the map points to."""
    maps_at, n_maps, size = (32, 65, 1328) if version >= b"3.41" else (24, 17, 360)
    job = struct.pack(order + "qqqqq", 1000, start, 0, start + 60, 0) + b"k=v\n"
    blob = {0: zlib.compress, 1: bz2.compress, 2: bytes}[comp](job)
    head = bytearray(size)
    head[:8] = version.ljust(8, b"\0")
    struct.pack_into(order + "q", head, 8, 6567223)
    head[16] = comp
    struct.pack_into(order + "QQ", head, maps_at, size + len(blob), 10)  # the name records
    return bytes(head) + blob + b"\0" * 10


@pytest.mark.parametrize("version", [b"3.41", b"3.21", b"3.00"])
@pytest.mark.parametrize(("order", "comp"), [("<", 0), ("<", 1), ("<", 2), (">", 0)])
def test_a_hand_built_header_gives_its_start(version, order, comp):
    for start in (1_700_000_000, 1_767_225_600):  # 2023-11-14 22:13:20 and 2026-01-01 00:00 UTC
        assert job_start(_log(version, start, order, comp)) == start


def test_job_start_is_none_when_the_head_cannot_tell():
    data = next(p for p in _logs() if p.name == "ior_hdf5_example.darshan").read_bytes()
    assert job_start(data[:HEAD]) is not None
    assert job_start(data[:200]) is None  # shorter than the header
    assert job_start(gzip.compress(b"a Darshan 2.x log")) is None
    assert data[:4] == b"3.21"  # a header of 360 bytes, the job region after it
    garbage = bytearray(data[:HEAD])
    garbage[360:392] = b"\xff" * 32  # the job region no longer inflates
    assert job_start(bytes(garbage)) is None
    assert job_start(b"") is None
