"""`readers.darshan_header.job_start`: the job's start read from a log's first bytes (decision 0052)."""

from __future__ import annotations

import gzip

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


def test_a_start_moved_by_make_corpus_is_the_start_read():
    from bench.make_corpus import Template

    path = next(p for p in _logs() if p.name == "ior_hdf5_example.darshan")
    template = Template(path)
    for start in (1_700_000_000, 1_767_225_600):  # 2023-11-14 and 2026-01-01, 00:00 UTC
        assert job_start(template.with_jobid(42, start)[:HEAD]) == start


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
