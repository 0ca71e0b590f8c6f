"""Recorder decoder: 2.2 and 2.5 traces, call-by-call against recorder2text, counters against Darshan."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import pytest

from readers.base import DecodeError, UnsupportedFormat
from readers.recorder import decode_recorder, is_recorder_trace, path_record_id
from schemas import BRONZE
from tests.support.data import shared_path

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`

TIER_DIR = {"bb": "/dev/shm/iosweep-bb", "pfs": "/srv/iosweep-pfs"}
ROLLUP_COUNTERS = (
    "POSIX_READS",
    "POSIX_WRITES",
    "POSIX_BYTES_READ",
    "POSIX_BYTES_WRITTEN",
    "POSIX_ACCESS1_ACCESS",
)


def _sweep_runs() -> list[dict]:
    with open(shared_path("iosweep", "runs.csv"), newline="") as f:
        return list(csv.DictReader(f))


def _recorder_runs() -> list[dict]:
    return [r for r in _sweep_runs() if r["tracer"] == "recorder"]


def _assert_schemas(dec):
    for name, table in dec.tables.items():
        assert table.schema.equals(BRONZE[name].decoded_arrow_schema), name


# ---------------------------------------------------------------- hash


def test_path_record_id_equals_darshan_record_id():
    # ids as stored in darshan/bb/bb_c0004_r1.darshan's name records (uint64 -> int64 bits)
    known = {
        "<STDOUT>": 15920181672442173319,
        "/tmp/iosweep_tmp/bb_c0004_r1/ior.json": 2003815364145779807,
        "/dev/shm/iosweep-bb/bb_c0004_r1/ior_testfile": 15602656855007145326,
    }
    for path, uid in known.items():
        assert path_record_id(path) == uid - (1 << 64) * (uid >= 1 << 63)


# ---------------------------------------------------------------- 2.2


@pytest.mark.parametrize("name", ["recorder-simple", "recorder-ior"])
def test_decode_recorder_22_traces(name):
    folder = shared_path("recorder", name)
    assert is_recorder_trace(str(folder))
    dec = decode_recorder(str(folder))
    _assert_schemas(dec)
    assert dec.format == "recorder" and dec.format_version == "2.2.0"
    job = dec.tables["jobs"].to_pylist()[0]
    assert job["nprocs"] == 2 and job["log_ver"] == "2.2.0" and 0 < job["run_time_s"] < 1
    io = dec.tables["io_ops"].to_pylist()
    assert {r["rank"] for r in io} == {0, 1}
    for rank in (0, 1):
        rows = [r for r in io if r["rank"] == rank]
        assert [r["seq"] for r in rows] == list(range(len(rows)))
        assert all(a["start_s"] <= b["start_s"] for a, b in zip(rows, rows[1:]))
    names = dict(
        zip(
            dec.tables["files"].column("record_id").to_pylist(),
            dec.tables["files"].column("name").to_pylist(),
        )
    )
    assert all(path_record_id(n) == i for i, n in names.items())
    if name == "recorder-simple":
        assert len(io) == 12
        # rank 0 fopens rank0.txt, freads 1 byte then fwrites 1 byte through the same stream
        r0 = [r for r in io if r["rank"] == 0 and r["op"] in ("read", "write")]
        assert [(r["func"], r["offset"], r["length"]) for r in r0] == [
            ("fread", 0, 1),
            ("fwrite", 1, 1),
        ]
        assert names[r0[0]["record_id"]].endswith("/ior/rank0.txt")
    else:
        posix = {
            names[r["record_id"]]: r for r in dec.tables["posix"].to_pylist() if r["rank"] == 0
        }
        test_file = posix["/g/g92/xu23/research/performance-analysis/ior/testFile"]
        assert (
            test_file["POSIX_OPENS"],
            test_file["POSIX_WRITES"],
            test_file["POSIX_BYTES_WRITTEN"],
        ) == (2, 2, 16)
        assert test_file["POSIX_SEEKS"] == 4 and test_file["POSIX_MAX_BYTE_WRITTEN"] == 15
        writes = [
            r
            for r in io
            if r["rank"] == 0
            and r["func"] == "write"
            and r["record_id"]
            == path_record_id("/g/g92/xu23/research/performance-analysis/ior/testFile")
        ]
        assert [r["offset"] for r in writes] == [0, 8]  # from lseek(fd, 0|8, SEEK_SET)


# ---------------------------------------------------------------- 2.5 vs recorder2text


def _parse_text_line(line: str):
    # recorder2text: "<tstart> <tend> <func> <level> <type> (" + " <arg>" per argument + " )"
    head, _, rest = line.partition(" ( ")
    tstart, tend, func, _level, _type = head.split(" ")
    assert rest.endswith(")"), line
    body = rest[:-1].rstrip(" ")
    return tstart, tend, func, body.split(" ") if body else []


def _expected(func: str, args: list[str]):
    """(path, offset, length) that the text line implies for our columns (None = not checked)."""
    if func in ("pread", "pread64", "pwrite", "pwrite64"):
        return args[0], int(args[3]), int(args[2])
    if func in ("read", "write"):
        return args[0], None, int(args[2])
    if func in ("fwrite", "fread"):
        return args[3], None, int(args[1]) * int(args[2])
    if func in (
        "open",
        "open64",
        "close",
        "lseek",
        "lseek64",
        "fsync",
        "fopen",
        "fclose",
        "unlink",
        "ftruncate",
        "vfprintf",
    ):
        return (
            args[0],
            (int(args[1]) if func.startswith("lseek") and args[2] == "0" else None),
            None,
        )
    if func in ("MPI_File_open",):
        return args[1], None, None
    if func in ("MPI_File_write_at", "MPI_File_read_at") and args[4] == "MPI_BYTE":
        return None, None, int(args[3])
    return None, None, None


def test_decode_recorder_25_every_call_matches_recorder2text():
    runs = _recorder_runs()
    assert len(runs) >= 40
    checked = 0
    for run in runs:
        folder = shared_path("iosweep", run["recorder_dir"])
        dec = decode_recorder(str(folder))
        _assert_schemas(dec)
        io = dec.tables["io_ops"]
        ranks, seqs = io.column("rank").to_pylist(), io.column("seq").to_pylist()
        funcs, rids = io.column("func").to_pylist(), io.column("record_id").to_pylist()
        offs, lens = io.column("offset").to_pylist(), io.column("length").to_pylist()
        starts, ends = io.column("start_s").to_pylist(), io.column("end_s").to_pylist()
        meta = dict(dec.tables["jobs"].column("metadata").to_pylist()[0])
        decimals = int(math.log10(1 / float(meta["time_resolution"])))
        i = 0
        nprocs = int(run["nprocs"])
        assert dec.tables["jobs"].column("nprocs").to_pylist() == [nprocs]
        for rank in range(nprocs):
            lines = (folder / "_text" / f"{rank}.txt").read_text().splitlines()
            for seq, line in enumerate(lines):
                tstart, tend, func, args = _parse_text_line(line)
                assert (ranks[i], seqs[i], funcs[i]) == (rank, seq, func), (
                    run["run_id"],
                    rank,
                    seq,
                )
                assert (
                    f"{starts[i]:.{decimals}f}" == tstart and f"{ends[i]:.{decimals}f}" == tend
                ), line
                path, off, length = _expected(func, args)
                if path is not None:
                    assert rids[i] == path_record_id(path), line
                if off is not None:
                    assert offs[i] == off, line
                if length is not None:
                    assert lens[i] == length, line
                i += 1
                checked += 1
        assert i == io.num_rows
    assert checked > 50_000


def test_decode_recorder_offsets_follow_seeks_and_pointer():
    # POSIX WAR shared file, transfer 64 KiB: IOR lseeks then writes/reads; each data call's
    # offset must equal the preceding lseek target, and plain read/write advance the pointer.
    dec = decode_recorder(str(shared_path("iosweep", "recorder", "bb", "bb_c0004_rec")))
    io = [
        r
        for r in dec.tables["io_ops"].to_pylist()
        if r["rank"] == 1
        and r["record_id"] == path_record_id("/dev/shm/iosweep-bb/bb_c0004_rec/ior_testfile")
    ]
    pairs = [
        (a, b) for a, b in zip(io, io[1:]) if a["op"] == "seek" and b["op"] in ("read", "write")
    ]
    assert len(pairs) == 128
    assert all(b["offset"] == a["offset"] and b["length"] == 65536 for a, b in pairs)
    assert all(r["offset"] is not None for r in io if r["op"] in ("read", "write"))


# ---------------------------------------------------------------- Recorder vs Darshan


def _per_file(rows, names, run_id, tier):
    out: dict[str, dict] = {}
    for r in rows:
        name = names.get(r["record_id"], "")
        if not name.startswith(TIER_DIR[tier]):
            continue
        agg = out.setdefault(name.replace(run_id, "RUN"), {c: 0 for c in ROLLUP_COUNTERS})
        for c in ROLLUP_COUNTERS:
            agg[c] = max(agg[c], r[c]) if c == "POSIX_ACCESS1_ACCESS" else agg[c] + r[c]
    return out


def test_recorder_posix_counters_agree_with_darshan_same_config():
    darshan = pytest.importorskip("darshan")
    runs = _sweep_runs()
    pairs = 0
    for rec in (r for r in runs if r["tracer"] == "recorder"):
        dec = decode_recorder(str(shared_path("iosweep", rec["recorder_dir"])))
        names = dict(
            zip(
                dec.tables["files"].column("record_id").to_pylist(),
                dec.tables["files"].column("name").to_pylist(),
            )
        )
        ours = _per_file(dec.tables["posix"].to_pylist(), names, rec["run_id"], rec["tier"])
        assert ours, rec["run_id"]
        for d in runs:
            if (
                d["tracer"] != "darshan"
                or d["config_id"] != rec["config_id"]
                or d["tier"] != rec["tier"]
                or d["rep"] != "1"
            ):
                continue
            report = darshan.DarshanReport(
                str(shared_path("iosweep", d["darshan_log"])), read_all=True
            )
            df = report.records["POSIX"].to_df()["counters"]
            d_rows = [{**row, "record_id": int(row["id"])} for row in df.to_dict("records")]
            d_names = {int(k): v for k, v in report.name_records.items()}
            theirs = _per_file(d_rows, d_names, d["run_id"], d["tier"])
            assert ours == theirs, (rec["run_id"], d["run_id"])
            pairs += 1
    assert pairs >= 40


# ---------------------------------------------------------------- corrupt traces


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("_text"))
    for p in dst.iterdir():
        p.chmod(0o644)
    return dst


def test_decode_recorder_truncated_ts_raises(tmp_path):
    trace = _copy(shared_path("iosweep", "recorder", "bb", "bb_c0001_rec"), tmp_path)
    ts = trace / "1.ts"
    ts.write_bytes(ts.read_bytes()[:-8])
    with pytest.raises(DecodeError, match="1.ts"):
        decode_recorder(str(trace))


@pytest.mark.parametrize(
    "damage", ["no_version", "bad_version", "missing_rank", "cut_cst", "cut_meta", "cut_itf"]
)
def test_decode_recorder_corrupt_copy_raises(tmp_path, damage):
    src = (
        shared_path("recorder", "recorder-ior")
        if damage == "cut_itf"
        else shared_path("iosweep", "recorder", "pfs", "pfs_c0000_rec")
    )
    trace = _copy(src, tmp_path)
    if damage == "no_version":
        (trace / "VERSION").unlink()
    elif damage == "bad_version":
        (trace / "VERSION").write_text("1.9.0")
    elif damage == "missing_rank":
        (trace / "3.cfg").unlink()
    elif damage == "cut_cst":
        cst = trace / "2.cst"
        cst.write_bytes(cst.read_bytes()[:100])
    elif damage == "cut_meta":
        (trace / "recorder.mt").write_bytes((trace / "recorder.mt").read_bytes()[:20])
    elif damage == "cut_itf":
        itf = trace / "1.itf"
        itf.write_bytes(itf.read_bytes()[: len(itf.read_bytes()) // 2])
    with pytest.raises(DecodeError) as err:
        decode_recorder(str(trace))
    assert str(err.value).startswith("recorder: ")
    if damage == "bad_version":
        assert isinstance(err.value, UnsupportedFormat)


def test_is_recorder_trace_rejects_other_folders(tmp_path):
    assert not is_recorder_trace(str(tmp_path))
    assert not is_recorder_trace(str(tmp_path / "missing"))
