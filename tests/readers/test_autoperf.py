"""AutoPerf's APMPI and APXC in bronze (native decoder), and every log's module versions and region
sizes in the ledger (both decoders).

The oracle for APMPI / APXC is pydarshan itself (`DarshanReport.mod_read_all_apmpi_records`,
`mod_read_all_apxc_records`), run in a fresh process per log: libdarshan-util's AutoPerf readers
keep "the next record is the header" in a static variable, so only the first log a process reads is
read right (`test_pydarshan_reads_only_the_first_autoperf_log_of_a_process` shows it). Record sizes
are checked against the C struct layouts by hand (48 + 5,232 n and 72 + 3,184 n bytes).
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from readers import native_darshan as native
from schemas import BRONZE
from schemas.autoperf import APMPI_OPS, APXC_COLUMN
from tests.support.data import need, shared_path

need(
    native._native is not None,
    "needs iolake_native, the native decoder's extension (pip install ./native)",
)

APMPI_LOG = ("darshan-logs", "darshan_logs", "apmpi", "darshan-apmpi-2nodes-64mpi.darshan")
APXC_LOG = ("darshan-logs", "darshan_logs", "apmpi_apxc", "mpi-io-test.darshan")

# pydarshan in a process of its own: the log's AutoPerf records as JSON (uint64 as int, float as
# float: a JSON float reads back to the same double)
_ORACLE = r"""
import json, sys
import darshan
out = []
for path in sys.argv[1:]:
    r = darshan.DarshanReport(path, read_all=False)
    got = {"modules": {m: [int(i["ver"]), int(i["len"])] for m, i in r.modules.items()}}
    for mod, read in (("APMPI", r.mod_read_all_apmpi_records),
                      ("APXC", r.mod_read_all_apxc_records)):
        if mod not in r.modules:
            continue
        read(mod)
        recs = []
        for rec in r.records[mod]._records:
            d = {}
            for k, v in rec.items():
                if isinstance(v, dict):
                    v = {n: (float(x) if "float" in type(x).__name__ else int(x))
                         for n, x in v.items()}
                elif hasattr(v, "item"):
                    v = v.item()
                d[k] = v
            recs.append(d)
        got[mod] = recs
    out.append(got)
print(json.dumps(out))
"""


def _pydarshan(*paths: str) -> list[dict]:
    """pydarshan's modules and AutoPerf records of each of `paths`, all read in ONE new process."""
    res = subprocess.run(
        [sys.executable, "-c", _ORACLE, *paths], capture_output=True, text=True, check=True
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def _signed(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return float(a) == float(b) or (math.isnan(float(a)) and math.isnan(float(b)))
    return int(a) == int(b)


def _check_apmpi(table, recs: list[dict], where: str) -> int:
    """bronze/apmpi rows == pydarshan's APMPI records; returns the values compared."""
    header, perf = recs[0], recs[1:]
    rows = {(r["rank"], r["op"]): r for r in table.to_pylist()}
    assert len(rows) == table.num_rows == len(APMPI_OPS) * len(perf), where
    n = 0
    for rec in perf:
        ac = rec["all_counters"]
        for op in APMPI_OPS:
            row = rows[(rec["rank"], op)]
            assert row["record_id"] == _signed(rec["id"]) and row["node_name"] == rec["node_name"]
            want = {
                "call_count": ac[f"{op}_CALL_COUNT"],
                "total_time_s": ac[f"{op}_TOTAL_TIME"],
                "min_time_s": ac[f"{op}_MIN_TIME"],
                "max_time_s": ac[f"{op}_MAX_TIME"],
                "total_bytes": ac.get(f"{op}_TOTAL_BYTES"),
                "msg_size_0_256": ac.get(f"{op}_MSG_SIZE_AGG_0_256"),
                "msg_size_256_1k": ac.get(f"{op}_MSG_SIZE_AGG_256_1K"),
                "msg_size_1k_8k": ac.get(f"{op}_MSG_SIZE_AGG_1K_8K"),
                "msg_size_8k_256k": ac.get(f"{op}_MSG_SIZE_AGG_8K_256K"),
                "msg_size_256k_1m": ac.get(f"{op}_MSG_SIZE_AGG_256K_1M"),
                "msg_size_1m_plus": ac.get(f"{op}_MSG_SIZE_AGG_1M_PLUS"),
                "total_sync_time_s": ac.get(f"{op}_TOTAL_SYNC_TIME"),
                "rank_comm_time_s": ac["MPI_TOTAL_COMM_TIME"],
                "rank_comm_sync_time_s": ac["MPI_TOTAL_COMM_SYNC_TIME"],
                "sync_flag": header["sync_flag"],
                "variance_total_mpitime": header["variance_total_mpitime"],
                "variance_total_mpisynctime": header["variance_total_mpisynctime"],
            }
            for col, v in want.items():
                if v is None:
                    assert row[col] is None, (where, rec["rank"], op, col)
                else:
                    assert _same(row[col], v), (where, rec["rank"], op, col, row[col], v)
                n += 1
    return n


def _check_apxc(table, recs: list[dict], where: str) -> int:
    """bronze/apxc rows == pydarshan's APXC records; returns the values compared."""
    import re

    header, perf = recs[0], recs[1:]
    assert table.num_rows == 48 * len(perf), where
    rows = {(r["record_id"], r["rank"], r["tile_row"], r["tile_col"]): r for r in table.to_pylist()}
    n = 0
    for rec in perf:
        key = (_signed(rec["id"]), rec["rank"])
        for name, v in rec["counters"].items():
            m = re.match(r"APXC_AR_RTR_(PT_)?(\d)_(\d)_INQ_PRF_(.*)$", name)
            row = rows[(*key, int(m.group(2)), int(m.group(3)))]
            assert row["tile"] == ("PT" if m.group(1) else "RTR")
            assert row[APXC_COLUMN[m.group(4)]] == v, (where, name)
            n += 1
        for k in ("group", "chassis", "blade", "node"):
            assert all(r[k] == rec[k] for r in rows.values() if r["record_id"] == key[0])
    for k in ("nblades", "nchassis", "ngroups", "memory_mode", "cluster_mode", "appid"):
        assert set(table.column(k).to_pylist()) == {header[k]}, (where, k)
    return n


def test_apmpi_and_apxc_equal_pydarshan_on_the_autoperf_samples():
    paths = [str(shared_path("darshan", *APMPI_LOG)), str(shared_path("darshan", *APXC_LOG))]
    for path in paths:
        (ref,) = _pydarshan(path)
        d = native.decode(path)
        assert _check_apmpi(d.tables["apmpi"], ref["APMPI"], path) > 0
        if "APXC" in ref:
            assert _check_apxc(d.tables["apxc"], ref["APXC"], path) == 392
        for t in ("apmpi", "apxc"):
            if t in d.tables:
                assert d.tables[t].schema == BRONZE[t].decoded_arrow_schema
    # 2 nodes x 64 ranks, one APMPI record each; the APXC log has one router
    assert native.decode(paths[0]).tables["apmpi"].num_rows == 128 * 74
    assert native.decode(paths[1]).tables["apxc"].num_rows == 48


def test_record_sizes_are_the_c_layouts():
    """Each region inflates to one header and whole records: APMPI 48 + 5,232 n bytes (base record
    16, magic 8, sync_flag 4 + 4 padding, 2 doubles; then 396 u64 + 240 doubles + 128-byte node
    name), APXC 72 + 3,184 n (base 16 + 7 words; then 4 location words + 392 u64)."""
    for parts, mod, head, rec, table, per in (
        (APMPI_LOG, "APMPI", 48, 5232, "apmpi", 74),
        (APXC_LOG, "APXC", 72, 3184, "apxc", 48),
    ):
        path = shared_path("darshan", *parts)
        data = path.read_bytes()
        (off, length) = next((o, n) for m, o, n in native.header_facts(path)["regions"] if m == mod)
        raw, rest = b"", data[off : off + length]
        while rest:  # a region is one zlib stream per writing process, concatenated
            z = zlib.decompressobj()
            raw += z.decompress(rest)
            rest = z.unused_data
        assert (len(raw) - head) % rec == 0
        n = (len(raw) - head) // rec
        assert native.decode(path).tables[table].num_rows == n * per


def test_pydarshan_reads_only_the_first_autoperf_log_of_a_process():
    """Why the pydarshan fallback decoder leaves APMPI/APXC out: the same log read twice in one
    process gives its header record the first time only."""
    path = str(shared_path("darshan", *APXC_LOG))
    first, second = _pydarshan(path, path)
    assert len(first["APXC"]) == 2 and "magic" not in first["APXC"][1]
    assert len(second["APXC"]) == 1  # the header taken for a router record, the router lost


def test_modules_info_equals_pydarshans_test_suite_and_the_fallback():
    """darshan-util/pydarshan/darshan/tests/test_report.py::test_modules: sample.darshan has 4
    modules and an MPI-IO region of 154 bytes; both decoders say so, and agree on every module."""
    import darshan

    from readers.pydarshan_decoder import decode as reference

    sample = Path(darshan.__file__).parent / "tests" / "input" / "sample.darshan"
    need(sample.exists(), f"needs {sample} (the darshan wheel's test input)")
    nat, ref = native.decode(sample), reference(str(sample))
    info = {m["module"]: m for m in nat.modules_info}
    assert len(info) == 4 and info["MPI-IO"]["region_bytes"] == 154
    assert nat.modules_info == ref.modules_info
    got = _pydarshan(str(sample))[0]["modules"]
    assert {m: [i["version"], i["region_bytes"]] for m, i in info.items()} == got


def test_pydarshan_fallback_says_why_it_skips_autoperf():
    from readers.pydarshan_decoder import decode as reference

    d = reference(str(shared_path("darshan", *APXC_LOG)))
    assert "apmpi" not in d.tables and "apxc" not in d.tables
    for mod in ("APMPI", "APXC"):
        assert any(
            n.startswith(f"module {mod} not decoded by the pydarshan decoder") for n in d.notes
        )
    assert {m["module"] for m in d.modules_info} == {
        "POSIX",
        "MPI-IO",
        "LUSTRE",
        "STDIO",
        "APXC",
        "APMPI",
    }


@pytest.mark.slow
def test_every_autoperf_log_pydarshan_reads_equals_it():
    root = shared_path("darshan")
    with open(root / "MANIFEST.csv", newline="") as fh:
        rows = [
            r
            for r in csv.DictReader(fh)
            if r["pydarshan_3_5_0"] == "reads" and {"APMPI", "APXC"} & set(r["modules"].split())
        ]
    assert len(rows) >= 14
    compared = 0
    for r in rows:
        path = str(root / r["path"])
        (ref,) = _pydarshan(path)
        d = native.decode(path)
        compared += _check_apmpi(d.tables["apmpi"], ref["APMPI"], path)
        if "APXC" in ref:
            compared += _check_apxc(d.tables["apxc"], ref["APXC"], path)
        info = {m["module"]: [m["version"], m["region_bytes"]] for m in d.modules_info}
        assert info == ref["modules"], path
    assert compared > 100_000
