"""The reference decoder: shapes, header checks, crash isolation, and equality with pydarshan's report."""

import csv
import gzip

import numpy as np
import pandas as pd
import pytest

from readers.base import DecodeError, DecoderCrash, UnsupportedFormat
from readers.darshan_header import peek_header
from readers.pydarshan_decoder import decode
from readers.sandbox import SandboxedDecoder
from schemas import BRONZE, DARSHAN_MODULE_TABLE
from tests.support.data import shared_path

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`


def _samples():
    from pathlib import Path

    import darshan

    return sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))


def _manifest():
    root = shared_path("darshan")
    with open(root / "MANIFEST.csv") as fh:
        return root, list(csv.DictReader(fh))


def test_peek_header_classifies_unsupported_and_garbage():
    with pytest.raises(UnsupportedFormat, match="2.x"):
        peek_header(gzip.compress(b"old darshan"))
    with pytest.raises(DecodeError, match="truncated header"):
        peek_header(b"3.41")
    with pytest.raises(DecodeError, match="bad magic"):
        peek_header(b"3.41\0\0\0\0" + b"\x01" * 9)
    facts = peek_header(_samples()[0].read_bytes()[:64])
    assert facts.format_version.startswith("3.") and facts.compression == "zlib"


def test_decode_sample_logs_match_bronze_schemas():
    for path in _samples():
        d = decode(str(path))
        assert d.tables["jobs"].num_rows == 1
        for name, t in d.tables.items():
            assert t.schema == BRONZE[name].decoded_arrow_schema, (path.name, name)


def test_sandbox_survives_a_decoder_segfault(tmp_path):
    root, rows = _manifest()
    crashers = [
        r
        for r in rows
        if r["pydarshan_3_5_0"] == "fails to open"
        and r["log_ver"] == ""
        and not r["path"].endswith(".gz")
        and "2.x" not in r["path"]
        and "example-output/carns" not in r["path"]
    ]
    ok = next(r for r in rows if r["pydarshan_3_5_0"] == "reads")
    outcomes = []
    with SandboxedDecoder("pydarshan", timeout_s=60) as sd:
        for r in crashers:
            try:
                sd.decode(str(root / r["path"]))
                outcomes.append("ok")
            except DecoderCrash as e:
                outcomes.append(str(e))
            except DecodeError as e:
                outcomes.append("error: " + str(e))
        # the worker is replaced after a crash and the next log decodes
        assert sd.decode(str(root / ok["path"])).tables["jobs"].num_rows == 1
    assert any("SIGSEGV" in o for o in outcomes), outcomes


def _report_frames(path: str) -> dict:
    import darshan

    rep = darshan.DarshanReport(path, read_all=True)
    out = {}
    for mod, table in DARSHAN_MODULE_TABLE.items():
        if mod in rep.records and mod != "LUSTRE" and len(rep.records[mod]):
            out[table] = rep.records[mod].to_df()
    dxt = []
    for mod in ("DXT_POSIX", "DXT_MPIIO"):
        if mod in rep.records:
            for rec in rep.records[mod].to_df():
                for op, key in (("write", "write_segments"), ("read", "read_segments")):
                    seg = rec[key]
                    for i in range(len(seg)):
                        dxt.append(
                            (
                                mod,
                                np.uint64(rec["id"]).view(np.int64),
                                rec["rank"],
                                op,
                                i,
                                int(seg["offset"].iloc[i]),
                                int(seg["length"].iloc[i]),
                                float(seg["start_time"].iloc[i]),
                                float(seg["end_time"].iloc[i]),
                            )
                        )
    out["io_ops"] = dxt
    out["names"] = {np.uint64(k).view(np.int64): v for k, v in rep.name_records.items()}
    out["job"] = rep.metadata["job"]
    return out


@pytest.mark.slow
def test_decoder_equals_pydarshan_report_on_every_readable_shared_log():
    root, rows = _manifest()
    readable = [r for r in rows if r["pydarshan_3_5_0"] == "reads"]
    assert len(readable) >= 100
    compared = 0
    for r in readable:
        path = str(root / r["path"])
        mine = decode(path)
        ref = _report_frames(path)
        assert mine.tables["jobs"].column("nprocs")[0].as_py() == ref["job"]["nprocs"], r["path"]
        files = mine.tables["files"].to_pandas()
        assert dict(zip(files.record_id, files.name)) == ref["names"], r["path"]
        for table, frames in ref.items():
            if table in ("io_ops", "names", "job"):
                continue
            got = mine.tables[table].to_pandas()
            # pydarshan's report keeps only records that have a name record; the decoder keeps all
            got = got[got.record_id.isin(ref["names"].keys())].reset_index(drop=True)
            for kind in ("counters", "fcounters"):
                want = frames[kind].copy()
                want["record_id"] = want.pop("id").astype("uint64").view("int64")
                want = want[["record_id"] + [c for c in want.columns if c != "record_id"]]
                cols = list(want.columns)
                pd.testing.assert_frame_equal(
                    got[cols].reset_index(drop=True),
                    want.reset_index(drop=True),
                    check_dtype=False,
                    obj=f"{r['path']}:{table}:{kind}",
                )
                compared += 1
        ops = mine.tables.get("io_ops")
        got_ops = (
            []
            if ops is None
            else sorted(
                zip(
                    *[
                        ops.column(c).to_pylist()
                        for c in (
                            "source",
                            "record_id",
                            "rank",
                            "op",
                            "seq",
                            "offset",
                            "length",
                            "start_s",
                            "end_s",
                        )
                    ]
                )
            )
        )
        assert got_ops == sorted(ref["io_ops"]), r["path"]
    assert compared > 200
