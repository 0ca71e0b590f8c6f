"""Ingest's per-log file rollups (bronze/file_rollups) against the features stage's Spark pass."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from features.file_features import ROLLUP_COLUMNS, file_rollups
from features.file_rollups import log_file_rollups
from schemas import BRONZE
from tests.support.data import need, shared_path

MONTH = "2024-01"
NAN = float("nan")
INPUTS = ("jobs", "files", "posix", "mpiio", "stdio", "h5f", "h5d", "io_ops")


def _frames(spark, logs: dict) -> dict:
    """Bronze frames of {log_id: {table: decoded Arrow table}} (io_ops: its H5F calls only)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for t in INPUTS:
        spec = BRONZE[t]
        parts = []
        for log, tables in logs.items():
            a = tables.get(t)
            if a is None or not a.num_rows:
                continue
            if t == "io_ops":
                a = a.filter(pc.fill_null(pc.starts_with(a.column("func"), "H5F"), False))
            a = a.select(spec.decoded_arrow_schema.names).cast(spec.decoded_arrow_schema)
            a = a.append_column("log_id", pa.array([log] * a.num_rows)).append_column(
                "job_month", pa.array([MONTH] * a.num_rows)
            )
            parts.append(a.select(spec.columns))
        rows = pa.concat_tables(parts).to_pylist() if parts else []
        maps = [f.name for f in spec.struct.fields if f.dataType.typeName() == "map"]
        rows = [{**r, **{m: None if r[m] is None else dict(r[m]) for m in maps}} for r in rows]
        # one partition, as a log's rows sit in one staged file: Spark adds each record's doubles
        # in row order, in one partial sum (split across partials, the last bit may differ)
        out[t] = spark.createDataFrame(
            [tuple(r[c] for c in spec.columns) for r in rows], spec.struct
        ).coalesce(1)
    return out


def _key(v):
    """A float compares bit for bit (NaN equal to NaN); anything else as itself."""
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else ("f", v.hex())
    return ("v", v)


def _rows(rows) -> list[tuple]:
    return sorted(tuple(_key(r[c]) for c in ROLLUP_COLUMNS) for r in rows)


def _compare(spark, logs: dict) -> list[tuple]:
    spark_rows = _rows(r.asDict() for r in file_rollups(_frames(spark, logs)).collect())
    ingest = []
    for log, tables in logs.items():
        for r in log_file_rollups(tables).to_pylist():
            ingest.append({"log_id": log, "job_month": MONTH, **r})
    got = _rows(ingest)
    assert len(got) == len(spark_rows)
    for a, b in zip(got, spark_rows):
        assert [
            c for c, x, y in zip(ROLLUP_COLUMNS, a, b) if x != y and not _ulps(c, x, y)
        ] == [], (a, b)
    return spark_rows


def _ulps(column: str, x, y) -> bool:
    """A sum of doubles over ranks may differ in the last bits: Spark's distinct count of ranks makes
    it sum per rank first and add those in its hash map's order, not in row order."""
    return (
        column.endswith("_time")
        and x[0] == y[0] == "f"
        and math.isclose(float.fromhex(x[1]), float.fromhex(y[1]), rel_tol=1e-12)
    )


def _arrow(table: str, rows: list[dict]):
    import pyarrow as pa

    schema = BRONZE[table].decoded_arrow_schema
    return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema)


def _crafted() -> dict:
    """Ranks shared and not, null counters, NaN / zero / negative timestamps, tied access counts,
    a record in MPI-IO or STDIO only, HDF5 files and datasets, H5F calls in a Recorder trace."""
    px = [
        {
            "record_id": 1,
            "rank": 0,
            "POSIX_OPENS": 2,
            "POSIX_READS": 3,
            "POSIX_WRITES": None,
            "POSIX_FSYNCS": 1,
            "POSIX_MAX_BYTE_READ": 10,
            "POSIX_MAX_BYTE_WRITTEN": None,
            "POSIX_ACCESS1_ACCESS": 8192,
            "POSIX_ACCESS1_COUNT": 5,
            "POSIX_F_READ_TIME": 0.1,
            "POSIX_F_SLOWEST_RANK_TIME": 1.5,
            "POSIX_F_READ_START_TIMESTAMP": 0.0,
            "POSIX_F_WRITE_START_TIMESTAMP": NAN,
        },
        {
            "record_id": 1,
            "rank": 1,
            "POSIX_OPENS": 1,
            "POSIX_READS": 4,
            "POSIX_WRITES": None,
            "POSIX_FDSYNCS": 2,
            "POSIX_MAX_BYTE_READ": None,
            "POSIX_MAX_BYTE_WRITTEN": 99,
            "POSIX_ACCESS1_ACCESS": 4096,
            "POSIX_ACCESS1_COUNT": 5,
            "POSIX_F_READ_TIME": 0.2,
            "POSIX_F_SLOWEST_RANK_TIME": NAN,
            "POSIX_F_READ_START_TIMESTAMP": 2.5,
            "POSIX_F_WRITE_START_TIMESTAMP": -1.0,
        },
        {
            "record_id": 1,
            "rank": 1,
            "POSIX_READS": 1,
            "POSIX_ACCESS1_ACCESS": 1,
            "POSIX_ACCESS1_COUNT": None,
            "POSIX_F_READ_TIME": 0.30000000000000004,
            "POSIX_F_READ_START_TIMESTAMP": 1.25,
        },
        {
            "record_id": 2,
            "rank": -1,
            "POSIX_OPENS": 64,
            "POSIX_WRITES": 128,
            "POSIX_BYTES_WRITTEN": 1 << 40,
            "POSIX_ACCESS1_ACCESS": None,
            "POSIX_ACCESS1_COUNT": 128,
            "POSIX_F_WRITE_TIME": 3.0,
            "POSIX_F_WRITE_START_TIMESTAMP": NAN,
            "POSIX_SEQ_WRITES": 127,
            "POSIX_CONSEC_WRITES": 120,
        },
        {
            "record_id": 5,
            "rank": 0,
            "POSIX_OPENS": 1,
            "POSIX_READS": 1,
            "POSIX_ACCESS1_ACCESS": 100,
            "POSIX_ACCESS1_COUNT": 1,
        },
    ]
    mp = [
        {
            "record_id": 2,
            "rank": -1,
            "MPIIO_COLL_OPENS": 64,
            "MPIIO_COLL_WRITES": 128,
            "MPIIO_NB_WRITES": None,
            "MPIIO_VIEWS": 64,
            "MPIIO_BYTES_WRITTEN": 1 << 40,
            "MPIIO_ACCESS1_ACCESS": 1 << 20,
            "MPIIO_ACCESS1_COUNT": 128,
            "MPIIO_F_WRITE_TIME": 2.0,
            "MPIIO_F_SLOWEST_RANK_TIME": 2.5,
            "MPIIO_F_WRITE_START_TIMESTAMP": 0.5,
        },
        {
            "record_id": 3,
            "rank": 0,
            "MPIIO_INDEP_OPENS": 1,
            "MPIIO_INDEP_READS": 2,
            "MPIIO_SPLIT_READS": 1,
            "MPIIO_SYNCS": 1,
            "MPIIO_F_READ_START_TIMESTAMP": 4.0,
        },
        {
            "record_id": 3,
            "rank": 2,
            "MPIIO_INDEP_OPENS": 1,
            "MPIIO_INDEP_READS": 2,
            "MPIIO_ACCESS1_ACCESS": 7,
            "MPIIO_ACCESS1_COUNT": 0,
            "MPIIO_F_READ_START_TIMESTAMP": 3.0,
        },
    ]
    st = [
        {
            "record_id": 4,
            "rank": 0,
            "STDIO_OPENS": 1,
            "STDIO_WRITES": 3,
            "STDIO_FLUSHES": 1,
            "STDIO_MAX_BYTE_WRITTEN": 30,
            "STDIO_F_META_TIME": 0.01,
        },
        {"record_id": 4, "rank": 0, "STDIO_OPENS": 1, "STDIO_WRITES": 1},
        {"record_id": 6, "rank": 1},  # every counter null
    ]
    files = [
        {"record_id": 1, "name": "/scratch/a.h5", "mount_point": "/scratch", "fs_type": "lustre"},
        {"record_id": 2, "name": "/scratch/b.h5", "mount_point": "/scratch", "fs_type": "lustre"},
        {"record_id": 3, "name": None, "mount_point": None, "fs_type": None},
        {"record_id": 4, "name": "<STDOUT>"},
        {"record_id": 10, "name": "/scratch/a.h5:/grid/x"},
        {"record_id": 11, "name": "/scratch/a.h5:/y"},
        {"record_id": 12, "name": "/scratch/b.h5:/z:/w"},
        {"record_id": 13, "name": "no-file-part"},
    ]
    h5f = [
        {"record_id": 1, "rank": 0, "H5F_OPENS": 2},
        {"record_id": 1, "rank": 1, "H5F_OPENS": 3},
        {"record_id": 2, "rank": -1, "H5F_OPENS": None},
        {"record_id": 9, "rank": 0, "H5F_OPENS": 1},
    ]
    h5d = [
        {"record_id": 10, "rank": 0, "H5D_READS": 4, "H5D_WRITES": None},
        {"record_id": 11, "rank": 1, "H5D_READS": 1, "H5D_WRITES": 2},
        {"record_id": 12, "rank": 0, "H5D_WRITES": 5},
        {"record_id": 13, "rank": 0, "H5D_WRITES": 6},
        {"record_id": 14, "rank": 0, "H5D_WRITES": 100},
    ]  # no name: not any file's
    a = {
        "posix": _arrow("posix", px),
        "mpiio": _arrow("mpiio", mp),
        "stdio": _arrow("stdio", st),
        "files": _arrow("files", files),
        "h5f": _arrow("h5f", h5f),
        "h5d": _arrow("h5d", h5d),
        "jobs": _arrow("jobs", [{"jobid": 7, "nprocs": 4}]),
    }
    # B: a Recorder trace whose H5F calls mark file 5; no files or jobs rows
    ops = [
        {
            "source": "RECORDER",
            "record_id": 5,
            "rank": 0,
            "seq": 0,
            "op": "meta",
            "func": "H5Fopen",
        },
        {
            "source": "RECORDER",
            "record_id": None,
            "rank": 0,
            "seq": 1,
            "op": "meta",
            "func": "H5Fclose",
        },
        {"source": "RECORDER", "record_id": 6, "rank": 0, "seq": 2, "op": "read", "func": "pread"},
    ]
    b = {
        "posix": _arrow("posix", px[-1:]),
        "io_ops": _arrow("io_ops", ops),
        "stdio": _arrow("stdio", st[-1:]),
    }
    return {"A": a, "B": b, "C": {"jobs": a["jobs"]}}


def test_rollups_of_crafted_logs_equal_the_spark_pass(spark):
    rows = _compare(spark, _crafted())
    by = {(r[0][1], r[2][1]): dict(zip(ROLLUP_COLUMNS, r)) for r in rows}
    assert set(by) == {
        ("A", 1),
        ("A", 2),
        ("A", 3),
        ("A", 4),
        ("A", 5),
        ("A", 6),
        ("B", 5),
        ("B", 6),
    }
    a1 = by[("A", 1)]
    # what the rules give, by hand: tied counts (5, 5) take the larger size, here the first row's; NaN first
    # write passes `> 0` and is the only candidate; the slowest rank time is NaN
    assert a1["px_access1"] == ("v", 8192) and a1["px_first_write"] == ("nan",)
    assert a1["px_first_read"] == ("f", (1.25).hex()) and a1["px_slowest"] == ("nan",)
    assert (
        a1["px_writes"] == ("v", None) and a1["px_syncs"] == ("v", 3) and a1["px_ranks"] == ("v", 2)
    )
    assert (a1["is_h5"], a1["h5_opens"], a1["h5_rw"]) == (("v", True), ("v", 5), ("v", 7))
    # `^(.*):/` is greedy: "/scratch/b.h5:/z:/w" is a dataset of "/scratch/b.h5:/z", so b.h5 has none
    assert by[("A", 2)]["h5_rw"] == ("v", None) and by[("A", 2)]["h5_opens"] == ("v", None)
    assert by[("B", 5)]["is_h5"] == ("v", True) and by[("B", 6)]["is_h5"] == ("v", None)


def _decoded(paths) -> dict:
    from readers.darshan import decode_darshan

    return {Path(p).name: decode_darshan(str(p)) for p in paths}


def test_rollups_of_pydarshans_example_logs_equal_the_spark_pass(spark):
    import darshan

    logs = sorted((Path(darshan.__file__).parent).rglob("*.darshan"))
    rows = _compare(spark, _decoded(logs))
    assert len(rows) > 50


@pytest.mark.slow
def test_rollups_of_the_shared_logs_equal_the_spark_pass(spark):
    root = shared_path("darshan")
    need(root.is_dir(), f"{root} is absent: the shared Darshan logs")
    logs = sorted(p for p in root.rglob("*") if p.is_file() and ".darshan" in p.name)
    decoded = {}
    for p in logs:
        try:
            decoded[str(p.relative_to(root))] = _decoded([p])[p.name]
        except Exception:  # a corrupt log is the quarantine's case, not this one's
            continue
    rows = _compare(spark, decoded)
    assert len(decoded) > 100 and len(rows) > 1000


def _stacked_equals_each(logs: dict) -> int:
    """`file_rollups_of` over every log's tables stacked (each log twice, under two codes, so equal records
    of two logs sit side by side) gives each log exactly `log_file_rollups` of its own tables."""
    import numpy as np
    import pyarrow as pa

    from features.file_rollups import INPUTS as TABLES
    from features.file_rollups import file_rollups_of

    names = [*logs, *(f"{k}-twin" for k in logs)]
    own = {**logs, **{f"{k}-twin": v for k, v in logs.items()}}
    stacked, codes = {}, {}
    for t in TABLES:
        parts = [
            (k, own[name][t])
            for k, name in enumerate(names)
            if own[name].get(t) is not None and own[name][t].num_rows
        ]
        if parts:
            schema = BRONZE[t].decoded_arrow_schema
            stacked[t] = pa.concat_tables([p.select(schema.names).cast(schema) for _, p in parts])
            codes[t] = np.repeat([k for k, _ in parts], [p.num_rows for _, p in parts])
    got, at = file_rollups_of(stacked, codes)
    total = 0
    for k, name in enumerate(names):
        want = log_file_rollups(own[name])
        mine = got.filter(pa.array(at == k))
        assert mine.schema == want.schema
        assert [tuple(map(_key, r.values())) for r in mine.to_pylist()] == [
            tuple(map(_key, r.values())) for r in want.to_pylist()
        ], name
        total += want.num_rows
    assert total == got.num_rows
    return total


def test_rollups_of_many_logs_at_once_are_each_logs_own():
    import darshan

    assert _stacked_equals_each(_crafted()) == 16
    logs = sorted((Path(darshan.__file__).parent).rglob("*.darshan"))
    assert _stacked_equals_each(_decoded(logs)) > 100
