"""Streamed DXT (huge traces in bounded memory): `decode(..., stream_dxt_over=0)` hands io_ops
out in record batches, and what they hold equals the whole decode's io_ops table — rows, notes,
damaged modules, errors — on the real DXT logs and on synthetic ones cut into batches of 7 rows
(records and segments straddling batches and inflate chunks); a decompression bomb in a stream is
still a `ResourceLimit`, and streamed bytes are charged to their own cap, not the in-memory one.
"""

from __future__ import annotations

import csv
import io
import random
import re
import zlib

import pyarrow as pa
import pytest

from readers import native_darshan as native
from readers.base import DecodeError, ResourceLimit
from tests.support.darshan_writer import DXT_MPIIO, DXT_POSIX, POSIX, dxt_record, write_log
from tests.support.data import need, shared_path

need(
    native._native is not None,
    "needs iolake_native, the native decoder's extension (pip install ./native)",
)


def _records(seed: int, n: int, big: bool = False) -> bytes:
    r = random.Random(seed)
    out = b""
    for _ in range(n):
        seg = [
            (r.randrange(1 << 40), r.randrange(1 << 20), r.random() * 100, r.random() * 100)
            for _ in range(r.choice([0, 1, 3, 7, 8, 20]))
        ]
        k = r.randrange(len(seg) + 1)
        host = r.choice([b"nid00001", b"nid00002", b"h" * 64, b""])
        out += dxt_record(r.getrandbits(64), r.randrange(4), host, seg[:k], seg[k:], big)
    return out


def _log(regions: dict[int, bytes], versions=None, comp: int = 0, big: bool = False) -> bytes:
    fh = io.BytesIO()
    write_log(fh, {i: [b] for i, b in regions.items()}, versions, comp=comp, level=6, big=big)
    return fh.getvalue()


def _same(data: bytes, batch_rows: int = 7, **limits):
    """Decodes `data` whole and streamed; asserts they agree and returns the streamed Decoded."""
    try:
        whole = native.decode(data, stream_dxt_over=None, **limits)
    except DecodeError as err:
        with pytest.raises(type(err), match="^" + re.escape(str(err)) + "$"):
            native.decode(data, stream_dxt_over=0, batch_rows=batch_rows, **limits)
        return None
    streamed = native.decode(data, stream_dxt_over=0, batch_rows=batch_rows, **limits)
    assert (streamed.notes, streamed.damaged, streamed.status) == (
        whole.notes,
        whole.damaged,
        whole.status,
    )
    if "io_ops" in streamed.streams:
        assert "io_ops" not in streamed.tables
        batches = list(streamed.streams["io_ops"]())
        assert batches and all(b.num_rows <= batch_rows for b in batches)
        got = pa.Table.from_batches(batches)
    else:
        got = streamed.tables.get("io_ops")
    want = whole.tables.get("io_ops")
    assert (got is None) == (want is None)
    if want is not None:
        assert got.schema == want.schema
        assert got.num_rows == want.num_rows
        assert got.equals(want)
    assert set(streamed.all_tables()) == set(whole.tables)
    return streamed


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("comp", [0, 2])
def test_streamed_equals_whole_on_synthetic_logs(comp, big):
    for seed in range(6):
        posix, mpiio = _records(seed, 12, big), _records(100 + seed, 9, big)
        for mpiio_ver in (1, 2):  # DXT_MPIIO version 1 has no offsets: -1
            d = _same(
                _log(
                    {POSIX: b"\0" * 704, DXT_POSIX: posix, DXT_MPIIO: mpiio},
                    {POSIX: 4, DXT_MPIIO: mpiio_ver},
                    comp,
                    big,
                )
            )
            io_ops = d.all_tables()["io_ops"]
            assert io_ops.num_rows > 20
            offsets = io_ops.filter(pa.compute.equal(io_ops["source"], "DXT_MPIIO"))[
                "offset"
            ].to_pylist()
            assert (set(offsets) == {-1}) == (mpiio_ver == 1)
    for batch_rows in (1, 2, 3, 1000):
        _same(_log({DXT_POSIX: _records(7, 15, big)}, comp=comp, big=big), batch_rows)


def test_a_stream_with_no_rows_gives_an_empty_table():
    d = _same(_log({POSIX: b"\0" * 704, DXT_POSIX: dxt_record(1, 0, b"h", [], [])}, {POSIX: 4}))
    assert d.all_tables()["io_ops"].num_rows == 0


def test_truncated_dxt_region_keeps_the_same_rows_and_notes():
    raw = _records(3, 10) + dxt_record(1, 0, b"h", [(0, 1, 0.0, 1.0)] * 5, [])
    for cut in (len(raw) - 5, len(raw) - 40, len(raw) // 2, 104 + 3, 50):
        d = _same(_log({POSIX: b"\0" * 704, DXT_POSIX: raw[:cut]}, {POSIX: 4}))
        if cut == len(raw) - 5:
            assert "DXT_POSIX: record with segments past the region end; stopped" in d.notes


def test_damaged_dxt_regions_are_dropped_as_in_the_whole_decode():
    raw = _records(5, 10)
    data = _log({POSIX: b"\0" * 704, DXT_POSIX: raw, DXT_MPIIO: _records(6, 4)}, {POSIX: 4})
    facts = native.header_facts(data)["regions"]
    ((off, n),) = [(o, n) for name, o, n in facts if name == "DXT_POSIX"]
    # the compressed stream cut short, and corrupted in its middle
    for bad in (
        data[:off] + data[off : off + n // 2] + bytes(n - n // 2) + data[off + n :],
        data[: off + n // 2] + bytes([data[off + n // 2] ^ 0xFF]) + data[off + n // 2 + 1 :],
    ):
        d = _same(bad)
        assert "DXT_POSIX" in d.damaged and d.status == "partial"
    # a negative segment count
    neg = raw[:88] + (-1).to_bytes(8, "little", signed=True) + raw[96:]
    d = _same(_log({POSIX: b"\0" * 704, DXT_POSIX: neg}, {POSIX: 4}))
    assert "negative segment count" in d.damaged["DXT_POSIX"]
    # the file cut inside the DXT region
    assert "DXT_POSIX" in _same(data[: off + n // 2]).damaged
    # every module damaged: the log fails, streamed or not
    with pytest.raises(DecodeError, match="every module damaged"):
        native.decode(_log({DXT_POSIX: neg}), stream_dxt_over=0)


def _bomb(mib: int) -> bytes:
    # all-zero DXT records: 104-byte headers with no segments, a compression ratio of ~1000
    return _log({DXT_POSIX: bytes(mib << 20)})


def test_a_decompression_bomb_in_a_stream_is_a_limit():
    data = _bomb(48)
    assert len(data) < 100_000
    with pytest.raises(ResourceLimit, match="decompression bomb"):
        native.decode(data, stream_dxt_over=0, ratio=64, min_budget=1 << 20)
    with pytest.raises(ResourceLimit, match="decompression bomb"):
        native.decode(data, stream_dxt_over=0, stream_cap=8 << 20)


def test_streamed_bytes_are_not_charged_to_the_in_memory_cap():
    data = _bomb(16)
    with pytest.raises(ResourceLimit):
        native.decode(data, stream_dxt_over=None, hard_cap=4 << 20)
    d = native.decode(data, stream_dxt_over=0, hard_cap=4 << 20)
    assert d.all_tables()["io_ops"].num_rows == 0


def test_small_logs_are_not_streamed_by_default():
    data = _log({DXT_POSIX: _records(1, 5)})
    assert not native.decode(data).streams
    assert native.STREAM_DXT_OVER > len(data)


@pytest.mark.slow
def test_streamed_equals_whole_on_the_real_dxt_logs():
    root = shared_path("darshan")
    with open(root / "MANIFEST.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if "DXT" in r["modules"]]
    assert len(rows) >= 20
    streamed = 0
    for r in rows:
        data = (root / r["path"]).read_bytes()
        try:
            n = native.decode(data, stream_dxt_over=None).tables["io_ops"].num_rows
        except (DecodeError, KeyError):
            n = 0
        d = _same(data, batch_rows=7 if n < 20_000 else 4099)
        streamed += bool(d and d.streams)
    assert streamed >= 20


def test_the_writer_makes_zlib_regions_of_the_raw_records():
    raw = _records(9, 3)
    data = _log({DXT_POSIX: raw})
    regions = {name: (o, n) for name, o, n in native.header_facts(data)["regions"]}
    o, n = regions["DXT_POSIX"]
    assert zlib.decompress(data[o : o + n]) == raw
