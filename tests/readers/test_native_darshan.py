"""The native (Rust) Darshan decoder: equal to the pydarshan decoder on every log it reads,
reads what it cannot (bzip2, big-endian), and fails only with `DecodeError`s."""

from __future__ import annotations

import csv
import random
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from readers import (
    native_darshan as native,
)  # imports without the extension: `native._native` is None
from readers.base import DecodeError, UnsupportedFormat
from schemas import BRONZE
from tests.support.data import need, shared_path

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`

need(
    native._native is not None,
    "needs iolake_native, the native decoder's extension (pip install ./native)",
)


def _manifest() -> list[dict]:
    root = shared_path("darshan")
    with open(root / "MANIFEST.csv", newline="") as fh:
        return [dict(r, abspath=str(root / r["path"])) for r in csv.DictReader(fh)]


def _reference(path: str):
    """pydarshan's tables. Its header peek refuses big-endian logs that libdarshan-util reads,
    so for those the same table-building code is run on the open log directly."""
    from readers import pydarshan_decoder as pdd
    from readers.darshan_header import HeaderFacts

    try:
        return pdd.decode(path)
    except UnsupportedFormat as err:
        if "big-endian" not in str(err):
            raise
        b = pdd._backend()
        log = b.log_open(path)
        assert log["handle"] != b.ffi.NULL
        try:
            return pdd._decode_open_log(b, log, HeaderFacts(format_version="?", compression="zlib"))
        finally:
            b.log_close(log)


@pytest.fixture(scope="module")
def manifest():
    return _manifest()


@pytest.fixture(scope="module")
def decoded(manifest):
    """path -> (native Decoded, reference Decoded or None); each log decoded once."""
    out = {}
    for r in manifest:
        if r["pydarshan_3_5_0"] == "reads":
            out[r["path"]] = (native.decode(r["abspath"]), _reference(r["abspath"]))
    return out


def _assert_tables_equal(a: pa.Table, b: pa.Table, where: str) -> None:
    assert a.schema == b.schema, f"{where}: schema differs"
    assert a.num_rows == b.num_rows, f"{where}: {a.num_rows} rows vs {b.num_rows}"
    for name in a.column_names:
        x, y = a.column(name), b.column(name)
        if pa.types.is_floating(x.type):
            xa, ya = x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False)
            assert np.array_equal(xa, ya, equal_nan=True), f"{where}.{name} differs"
            # same bits, so -0.0 / NaN payloads agree too
            assert xa.view(np.int64).tolist() == ya.view(np.int64).tolist(), (
                f"{where}.{name} bits differ"
            )
        else:
            assert x.equals(y), f"{where}.{name} differs"


def test_every_readable_log_equals_pydarshan(decoded):
    assert len(decoded) >= 100
    for path, (nat, ref) in decoded.items():
        # AutoPerf's tables come from the native decoder only (test_autoperf.py checks them
        # against pydarshan, one log per process)
        assert set(nat.tables) - {"apmpi", "apxc"} == set(ref.tables), path
        for t, ref_table in ref.tables.items():
            _assert_tables_equal(nat.tables[t], ref_table, f"{path}:{t}")
        assert nat.modules == ref.modules, path
        assert nat.partial_modules == ref.partial_modules, path
        assert nat.modules_info == ref.modules_info, path
        assert sorted(m["module"] for m in nat.modules_info) == nat.modules, path
        assert nat.format_version == ref.format_version, path
        assert nat.writer_version == ref.writer_version, path
        assert nat.compression == ref.compression, path
        assert nat.format == "darshan" and nat.decoder.startswith("iolake-native")


def test_schemas_are_exact(decoded):
    for nat, _ in decoded.values():
        for t, table in nat.tables.items():
            assert table.schema == BRONZE[t].decoded_arrow_schema


def test_partial_module_flags(decoded):
    partial = {p: n.partial_modules for p, (n, _) in decoded.items() if n.partial_modules}
    assert any("partial_data_dxt" in p for p in partial)
    assert any("partial_data_stdio" in p for p in partial)


def test_skipped_modules_are_noted(decoded):
    notes = [x for n, _ in decoded.values() for x in n.notes]
    assert not any("HEATMAP skipped" in x for x in notes)
    assert not any("APMPI skipped" in x or "APXC skipped" in x for x in notes)
    assert any(n.tables.get("apmpi") is not None for n, _ in decoded.values())


def test_heatmap_equals_pydarshan_report_heatmaps(manifest, decoded):
    """bronze/heatmap equals pydarshan's public accessor (`DarshanReport.heatmaps[module]`, its
    `to_df`) on every shared log pydarshan reads that has a HEATMAP module."""
    import darshan

    with_heatmap = [r for r in manifest if "HEATMAP" in r["modules"] and r["path"] in decoded]
    assert len(with_heatmap) >= 40
    for r in with_heatmap:
        table = decoded[r["path"]][0].tables["heatmap"].to_pandas()
        report = darshan.DarshanReport(r["abspath"], read_all=False)
        report.read_all_heatmap_records()
        assert set(table.module) == {str(m) for m in report.heatmaps}, r["path"]
        for mod, hm in report.heatmaps.items():
            mine = table[table.module == str(mod)].set_index("rank")
            assert (mine.nbins == hm._nbins).all() and (
                mine.bin_width_s == hm._bin_width_seconds
            ).all()
            for op, col in (("read", "read_bytes"), ("write", "write_bytes")):
                ref = hm.to_df(ops=[op], interval_index=False)
                assert sorted(mine.index) == sorted(ref.index), (r["path"], mod)
                for rank, row in ref.iterrows():
                    assert list(mine.loc[rank, col]) == [int(v) for v in row], (
                        r["path"],
                        mod,
                        op,
                        rank,
                    )


def test_bzip2_logs_equal_their_originals(manifest):
    converted = [r for r in manifest if r["path"].startswith("converted-bzip2/")]
    assert len(converted) == 4
    for r in converted:
        original_rel = r["license_note"].split(" re-encoded")[0]
        original = next(x for x in manifest if x["path"].endswith(Path(original_rel).name))
        bz = native.decode(r["abspath"])
        orig = native.decode(original["abspath"])
        assert bz.compression == "bzip2" and orig.compression == "zlib"
        assert set(bz.tables) == set(orig.tables), r["path"]
        for t in orig.tables:
            if t == "jobs":
                # darshan-convert rewrites the log as format 3.41 (job nsec fields, run time)
                # and writes the mount table back in another order among equal-length points
                keep = [
                    "jobid",
                    "uid",
                    "nprocs",
                    "start_time_sec",
                    "end_time_sec",
                    "exe",
                    "metadata",
                ]
                _assert_tables_equal(
                    bz.tables[t].select(keep), orig.tables[t].select(keep), r["path"]
                )
                mounts = [
                    sorted(
                        map(tuple, (m.values() for m in x.tables[t].column("mounts")[0].as_py()))
                    )
                    for x in (bz, orig)
                ]
                assert mounts[0] == mounts[1]
            else:
                _assert_tables_equal(bz.tables[t], orig.tables[t], f"{r['path']}:{t}")


def test_logs_pydarshan_cannot_read(manifest):
    """The bad-header logs decode (the caller checks their values); Darshan 2.x logs are UnsupportedFormat."""
    bad_header = [r for r in manifest if r["pydarshan_3_5_0"] == "opens, bad header or read fails"]
    assert len(bad_header) == 6
    for r in bad_header:
        d = native.decode(r["abspath"])
        assert d.tables["jobs"].num_rows == 1
        assert d.tables["jobs"].column("nprocs").to_pylist() == [
            int(r["nprocs"])
        ]  # what pydarshan's header read says
    old = [r for r in manifest if r["path"].endswith(".gz")]
    assert old
    for r in old:
        with pytest.raises(UnsupportedFormat, match="unsupported format 2.x"):
            native.decode(r["abspath"])


# Darshan 3.41's on-disk header (darshan-log-format.h): version string, magic, compression type,
# 64-bit partial flag, then the name map and 64 module maps (offset, length), then 64 module
# versions; the zlib-compressed job record follows it. Module ids are darshan_module_id's.
HEADER_341 = 8 + 8 + 8 + 8 + 16 + 64 * 16 + 64 * 4
MODULE_IDS = {
    1: "POSIX",
    2: "MPI-IO",
    3: "H5F",
    4: "H5D",
    5: "PNETCDF_FILE",
    6: "PNETCDF_VAR",
    7: "BG/Q",
    8: "LUSTRE",
    9: "STDIO",
    10: "DXT_POSIX",
    11: "DXT_MPIIO",
    12: "MDHIM",
    13: "APXC",
    14: "APMPI",
    15: "HEATMAP",
    16: "DFS",
    17: "DAOS",
}
POSIX_V4_RECORD = 704  # id + rank + 69 int64 counters + 17 doubles


def _raw_341(path: str) -> dict:
    """The log read by hand as darshan-util reads a 3.41 log: header maps, job record, name records."""
    data = Path(path).read_bytes()
    assert (
        data[:8].rstrip(b"\0") == b"3.41"
        and struct.unpack_from("<q", data, 8)[0] == 6567223
        and data[16] == 0
    )
    name_off, name_len = struct.unpack_from("<QQ", data, 32)
    maps = {i: struct.unpack_from("<QQ", data, 48 + 16 * i) for i in range(64)}
    regions = {
        MODULE_IDS[i]: zlib.decompress(data[off : off + n]) for i, (off, n) in maps.items() if n
    }
    job = zlib.decompress(data[HEADER_341:name_off])
    names, blob, at = {}, zlib.decompress(data[name_off : name_off + name_len]), 0
    while at < len(blob):  # darshan_name_record: 64-bit id, NUL-terminated name
        (rid,) = struct.unpack_from("<q", blob, at)
        end = blob.index(b"\0", at + 8)
        names[rid] = blob[at + 8 : end].decode()
        at = end + 1
    return {"job": job, "names": names, "regions": regions}


def test_native_decodes_the_log_that_crashes_libdarshan_util_as_format_3_41(manifest):
    """pydarshan 3.5.0 dies (SIGSEGV) opening this log; the native decoder reads it as the 3.41 log
    its header says it is, exactly as darshan-util lays a 3.41 job record out. The record was in
    fact written in the older 5-word layout (uid, start, end, nprocs, jobid): the 3.41 nprocs and
    jobid words hold the first metadata bytes ("lib_ver="), the nprocs ingest's header check
    refuses in this log and in the six other bad-header logs of the same Darshan build."""
    (r,) = [
        x for x in manifest if x["pydarshan_3_5_0"] == "fails to open" and not x["pydarshan_error"]
    ]
    assert Path(r["path"]).name.startswith("snyders_ior-POSIX_id531897-30559_8-18-57636")
    raw = _raw_341(r["abspath"])
    words = struct.unpack_from("<7q", raw["job"])
    d = native.decode(r["abspath"])  # no DecodeError, no crash
    assert (d.format_version, d.compression, d.partial_modules) == ("3.41", "zlib", [])
    assert sorted(d.modules) == sorted(raw["regions"]) == ["APMPI", "LUSTRE", "POSIX"]
    (job,) = d.tables["jobs"].to_pylist()
    names_341 = [
        "uid",
        "start_time_sec",
        "start_time_nsec",
        "end_time_sec",
        "end_time_nsec",
        "nprocs",
        "jobid",
    ]
    assert {k: job[k] for k in names_341} == dict(zip(names_341, words))
    assert (
        job["exe"] == raw["job"][56 + 1024 :].split(b"\n", 1)[0].decode()
    )  # exe follows 1024 bytes of metadata
    # the facts behind the garbage: the old layout's words, the file name, the other bad-header logs
    assert words[:5] == (
        6372,
        1660838436,
        1660838436,
        4,
        531897,
    )  # jobid 531897: "_id531897-" in the name
    assert (
        job["start_time_sec"] == 1660838436
    )  # 2022-08-18 16:00:36 UTC: the name's "8-18-57636" (s of day)
    assert job["nprocs"].to_bytes(8, "little") == b"lib_ver="
    siblings = {
        int(x["nprocs"])
        for x in manifest
        if x["pydarshan_3_5_0"] == "opens, bad header or read fails"
    }
    assert siblings == {job["nprocs"]}
    # name records and the POSIX records, as darshan-parser would list them
    files = d.tables["files"].to_pylist()
    assert {f["record_id"]: f["name"] for f in files} == raw["names"]
    assert "/home/snyders/software/ior/build/testFile" in raw["names"].values() and len(files) == 6
    posix = d.tables["posix"]
    assert posix.num_rows == len(raw["regions"]["POSIX"]) // POSIX_V4_RECORD == 1
    assert (
        raw["names"][posix.column("record_id")[0].as_py()]
        == "/home/snyders/software/ior/build/testFile"
    )
    # what it cannot use it says so, rather than guessing: no LUSTRE rows, no APMPI rows (the
    # region holds a header and 272 bytes, less than one 5,232-byte version-1 rank record)
    assert d.tables["lustre"].num_rows == 0
    assert any(n.startswith("LUSTRE: ") for n in d.notes)
    assert "apmpi" not in d.tables
    assert any(n.startswith("APMPI: 272 trailing bytes ignored") for n in d.notes)


def test_bytes_and_path_agree(manifest):
    r = next(x for x in manifest if x["pydarshan_3_5_0"] == "reads")
    a = native.decode(r["abspath"]).tables
    b = native.decode(Path(r["abspath"]).read_bytes()).tables
    assert a.keys() == b.keys() and all(a[k].equals(b[k]) for k in a)


def test_dispatch(manifest):
    from readers.darshan import decode_darshan

    r = next(x for x in manifest if x["pydarshan_3_5_0"] == "reads")
    a = decode_darshan(r["abspath"])
    b = decode_darshan(Path(r["abspath"]).read_bytes(), decoder="pydarshan")
    assert a.keys() == b.keys() and all(a[k].equals(b[k]) for k in a)
    with pytest.raises(ValueError):
        decode_darshan(r["abspath"], decoder="nope")


def test_decompression_bomb_is_a_resource_limit(manifest):
    from readers.base import ResourceLimit

    r = max((x for x in manifest if x["pydarshan_3_5_0"] == "reads"), key=lambda x: int(x["bytes"]))
    with pytest.raises(ResourceLimit):
        native.decode(r["abspath"], ratio=1, min_budget=0)


# --- robustness: truncation and bit flips ------------------------------------------------


def _mutants(data: bytes, rng: random.Random, n_cuts: int, n_flips: int):
    for k in range(1, n_cuts + 1):
        yield data[: len(data) * k // (n_cuts + 1)]
    for _ in range(n_flips):
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        yield bytes(b)
    yield b""
    yield data[:17]


def test_truncated_and_flipped_logs_raise_only_decode_errors(manifest):
    rng = random.Random(1234)
    logs = [r for r in manifest if not r["path"].endswith(".gz")]
    count = 0
    for r in logs:
        data = Path(r["abspath"]).read_bytes()
        # small logs get more mutants; the few large ones a handful (CI time)
        cuts, flips = (12, 12) if len(data) < 200_000 else (3, 2)
        for m in _mutants(data, rng, cuts, flips):
            count += 1
            try:
                native.decode(m)
            except DecodeError:
                pass
    assert count > 1000


def _ipc_copy(t: pa.Table) -> pa.Table:
    """`t` read back from an IPC stream: a copy that shares no memory with `t`."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return pa.ipc.open_stream(pa.py_buffer(sink.getvalue().to_pybytes())).read_all()


def test_tables_outlive_the_decode(manifest):
    """io_ops' numeric and string columns and the counter tables are Rust's vectors handed to
    Arrow without a copy (`iolake_native.Buffer`): tables kept after the rest of the decode is
    dropped, the memory collected and reused, still read as they did."""
    import gc

    kept = []
    for r in manifest:
        if r["pydarshan_3_5_0"] != "reads":
            continue
        tables = native.decode(r["abspath"]).all_tables()
        if tables.get("io_ops") is not None and tables["io_ops"].num_rows:
            kept.append((tables, {k: _ipc_copy(t) for k, t in tables.items()}))
        if len(kept) == 3:
            break
    assert kept, "no shared log with DXT rows"
    gc.collect()
    churn = [bytearray(b"\xa5" * (1 << 16)) for _ in range(4096)]
    del churn
    for tables, copies in kept:
        for k, t in tables.items():
            t.validate(full=True)
            assert t.equals(copies[k]), k


def test_native_buffers_are_read_only(manifest):
    r = next(x for x in manifest if x["pydarshan_3_5_0"] == "reads")
    raw = native._native.decode_log(Path(r["abspath"]).read_bytes())
    batch = raw["counter_tables"][0]["batch"]
    view = memoryview(batch)
    del raw, batch
    assert view.readonly and view.nbytes > 0
    with pytest.raises(TypeError):
        view[0] = 0
    assert pa.py_buffer(view).address % 8 == 0
