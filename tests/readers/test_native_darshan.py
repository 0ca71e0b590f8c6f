"""The native (Rust) Darshan decoder: equal to the pydarshan decoder on every log it reads,
reads what it cannot (bzip2, big-endian), and fails only with `DecodeError`s."""
from __future__ import annotations

import csv
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from readers.base import DecodeError, UnsupportedFormat
from schemas import BRONZE
from tests.conftest import shared_path

native = pytest.importorskip("readers.native_darshan")
if native._native is None:  # pragma: no cover
    pytest.skip("iolake_native is not built (pip install ./native)", allow_module_level=True)


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
            assert xa.view(np.int64).tolist() == ya.view(np.int64).tolist(), f"{where}.{name} bits differ"
        else:
            assert x.equals(y), f"{where}.{name} differs"


def test_every_readable_log_equals_pydarshan(decoded):
    assert len(decoded) >= 100
    for path, (nat, ref) in decoded.items():
        assert set(nat.tables) == set(ref.tables), path
        for t, ref_table in ref.tables.items():
            _assert_tables_equal(nat.tables[t], ref_table, f"{path}:{t}")
        assert nat.modules == ref.modules, path
        assert nat.partial_modules == ref.partial_modules, path
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
    assert any("HEATMAP skipped" in x for x in notes)
    assert any("APMPI skipped" in x for x in notes)


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
                keep = ["jobid", "uid", "nprocs", "start_time_sec", "end_time_sec", "exe", "metadata"]
                _assert_tables_equal(bz.tables[t].select(keep), orig.tables[t].select(keep), r["path"])
                mounts = [sorted(map(tuple, (m.values() for m in x.tables[t].column("mounts")[0].as_py())))
                          for x in (bz, orig)]
                assert mounts[0] == mounts[1]
            else:
                _assert_tables_equal(bz.tables[t], orig.tables[t], f"{r['path']}:{t}")


def test_logs_pydarshan_cannot_read(manifest):
    """The bad-header logs decode (the caller checks their values); the log that crashes
    pydarshan decodes; Darshan 2.x logs are UnsupportedFormat."""
    bad_header = [r for r in manifest if r["pydarshan_3_5_0"] == "opens, bad header or read fails"]
    assert len(bad_header) == 6
    for r in bad_header:
        d = native.decode(r["abspath"])
        assert d.tables["jobs"].num_rows == 1
    crash = [r for r in manifest if r["pydarshan_3_5_0"] == "fails to open" and not r["pydarshan_error"]]
    assert crash
    for r in crash:
        try:
            native.decode(r["abspath"])
        except DecodeError:
            pass
    old = [r for r in manifest if r["path"].endswith(".gz")]
    assert old
    for r in old:
        with pytest.raises(UnsupportedFormat, match="unsupported format 2.x"):
            native.decode(r["abspath"])


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
