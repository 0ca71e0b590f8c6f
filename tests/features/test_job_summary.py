"""features/job_summary.py on literal records: both executors (the Spark views and the report's
pandas frames) against values worked out by hand from pydarshan's definitions (the module
docstring names each source file)."""

from __future__ import annotations

import pandas as pd
import pytest

from features import job_summary as js
from tests.support.frames import frame

# one job of 4 processes; POSIX record 1 is shared (rank -1) and counts as one record
POSIX = [
    {
        "record_id": 1,
        "rank": -1,
        "POSIX_READS": 10,
        "POSIX_BYTES_READ": 1000,
        "POSIX_MAX_BYTE_READ": 999,
        "POSIX_F_READ_TIME": 8.0,
        "POSIX_F_META_TIME": 4.0,
        "POSIX_SIZE_READ_0_100": 10,
        "POSIX_ACCESS1_ACCESS": 100,
        "POSIX_ACCESS1_COUNT": 10,
        "POSIX_FSYNCS": 1,
        "POSIX_FDSYNCS": 2,
    },
    {
        "record_id": 2,
        "rank": 0,
        "POSIX_WRITES": 5,
        "POSIX_BYTES_WRITTEN": 500,
        "POSIX_MAX_BYTE_WRITTEN": 1499,
        "POSIX_F_WRITE_TIME": 2.0,
        "POSIX_SIZE_WRITE_100_1K": 5,
        "POSIX_ACCESS1_ACCESS": 100,
        "POSIX_ACCESS1_COUNT": 3,
        "POSIX_ACCESS2_ACCESS": 200,
        "POSIX_ACCESS2_COUNT": 2,
    },
    {
        "record_id": 2,
        "rank": 1,
        "POSIX_READS": 1,
        "POSIX_BYTES_READ": 50,
        "POSIX_MAX_BYTE_READ": 49,
        "POSIX_F_READ_TIME": 0.5,
        "POSIX_SIZE_READ_0_100": 1,
        "POSIX_ACCESS1_ACCESS": 50,
        "POSIX_ACCESS1_COUNT": 1,
        "POSIX_ACCESS2_ACCESS": 300,
        "POSIX_ACCESS2_COUNT": 2,
    },
]
STDIO = [
    {
        "record_id": 3,
        "rank": 0,
        "STDIO_WRITES": 4,
        "STDIO_BYTES_WRITTEN": 20,
        "STDIO_MAX_BYTE_WRITTEN": 19,
        "STDIO_F_WRITE_TIME": 0.25,
    }
]
H5F = [{"record_id": 4, "rank": 0, "H5F_OPENS": 2, "H5F_F_META_TIME": 1.0}]
H5D = [
    {
        "record_id": 5,
        "rank": 0,
        "H5D_WRITES": 3,
        "H5D_OPENS": 1,
        "H5D_BYTES_WRITTEN": 300,
        "H5D_F_WRITE_TIME": 2.0,
        "H5D_F_META_TIME": 1.0,
    }
]
FILES = [
    {"record_id": 1, "name": "/scratch/a/x"},
    {"record_id": 2, "name": "/home/u/y"},
    {"record_id": 3, "name": "<STDOUT>"},
    {"record_id": 4, "name": "/home/u/f.h5"},
    {"record_id": 5, "name": "/dset"},
]


@pytest.fixture(scope="module")
def both(spark):
    """{section: (rows from the Spark view, rows from the pandas executor)}, rows as dicts."""
    sdf = {
        "POSIX": frame(spark, "posix", POSIX),
        "STDIO": frame(spark, "stdio", STDIO),
        "H5F": frame(spark, "h5f", H5F),
        "H5D": frame(spark, "h5d", H5D),
    }
    pdf = {m: df.toPandas() for m, df in sdf.items()}
    jobs = frame(spark, "jobs", [{"nprocs": 4}])
    files = frame(spark, "files", FILES)

    def rows(df):
        return (
            df.toPandas().to_dict("records")
            if not isinstance(df, pd.DataFrame)
            else (df.to_dict("records"))
        )

    return {
        "io_cost": (rows(js.io_cost(sdf, jobs)), rows(js.pd_io_cost(pdf, {"L1": 4}))),
        "file_categories": (rows(js.file_categories(sdf)), rows(js.pd_file_categories(pdf))),
        "access_sizes": (rows(js.access_sizes(sdf)), rows(js.pd_access_sizes(pdf))),
        "common": (rows(js.common_access_sizes(sdf)), rows(js.pd_common_access_sizes(pdf))),
        "op_counts": (rows(js.op_counts(sdf)), rows(js.pd_op_counts(pdf))),
        "roots": (
            rows(js.data_access_by_root(sdf, files)),
            rows(js.pd_data_access_by_root(pdf, files.toPandas())),
        ),
    }


def _by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


@pytest.mark.parametrize("executor", [0, 1], ids=["spark", "pandas"])
def test_io_cost_is_time_per_process_and_merges_hdf5(both, executor):
    got = _by(both["io_cost"][executor], "module")
    assert sorted(got) == [("HDF5",), ("POSIX",), ("STDIO",)]
    want = {
        "POSIX": (2.125, 0.5, 1.0, 0.0, 1050, 500),  # (8 + 0.5) / 4, 2 / 4, 4 / 4
        "STDIO": (0.0, 0.0625, 0.0, 0.0, 0, 20),
        "HDF5": (0.0, 0.5, 0.5, 0.0, 0, 300),  # H5F's meta time joins H5D's; bytes from H5D
    }
    for m, w in want.items():
        r = got[(m,)]
        assert tuple(r[c] for c in js.IO_COST_COLUMNS) == pytest.approx(w), m


@pytest.mark.parametrize("executor", [0, 1], ids=["spark", "pandas"])
def test_file_categories_with_sizes_from_offsets(both, executor):
    got = _by(both["file_categories"][executor], "module", "category")
    cols = ("files", "bytes_read", "bytes_written", "avg_size_bytes", "max_size_bytes")

    def row(k):
        return tuple(None if pd.isna(got[k][c]) else got[k][c] for c in cols)

    # file 1: read only, offset 999; file 2: read and written by two ranks, offset 1499
    assert row(("POSIX", "all")) == (2, 1050, 500, 1250.0, 1500)
    assert row(("POSIX", "read_only")) == (1, 1000, 0, 1000.0, 1000)
    assert row(("POSIX", "write_only")) == (0, 0, 0, None, None)
    assert row(("POSIX", "read_write")) == (1, 50, 500, 1500.0, 1500)
    assert row(("STDIO", "write_only")) == (1, 0, 20, 20.0, 20)
    assert len(got) == 8  # four categories of POSIX and STDIO; H5F/H5D have none


@pytest.mark.parametrize("executor", [0, 1], ids=["spark", "pandas"])
def test_access_sizes_sum_every_record(both, executor):
    got = _by(both["access_sizes"][executor], "module", "direction", "bin")
    assert {m for m, _, _ in got} == {"POSIX", "H5D"}
    assert got[("POSIX", "read", 0)]["count"] == 11
    assert got[("POSIX", "read", 0)]["bin_label"] == "0-100"
    assert got[("POSIX", "write", 1)]["count"] == 5
    assert got[("POSIX", "write", 1)]["bin_label"] == "101-1K"
    assert sum(r["count"] for r in got.values()) == 16
    assert len(got) == 40


@pytest.mark.parametrize("executor", [0, 1], ids=["spark", "pandas"])
def test_common_access_sizes_combined_and_ranked(both, executor):
    got = sorted(
        (r["module"], r["rank"], r["access_size"], r["count"]) for r in both["common"][executor]
    )
    # 100: 10 + 3; sizes 200 and 300 tie at 2 (the smaller first); H5D's empty slots dropped
    assert got == [
        ("POSIX", 1, 100, 13),
        ("POSIX", 2, 200, 2),
        ("POSIX", 3, 300, 2),
        ("POSIX", 4, 50, 1),
    ]


@pytest.mark.parametrize("executor", [0, 1], ids=["spark", "pandas"])
def test_op_counts_in_pydarshans_bar_order(both, executor):
    rows = both["op_counts"][executor]
    got = {}
    for r in sorted(rows, key=lambda r: (r["module"], r["position"])):
        got.setdefault(r["module"], []).append((r["operation"], r["count"]))
    assert got["POSIX"] == [
        ("Read", 11),
        ("Write", 5),
        ("Open", 0),
        ("Stat", 0),
        ("Seek", 0),
        ("Mmap", 0),
        ("Fsync", 3),
    ]
    assert [c for _, c in got["STDIO"]] == [0, 4, 0, 0, 0]
    assert [c for _, c in got["H5F"]] == [0, 0, 0, 0, 2, 0]
    assert [c for _, c in got["H5D"]] == [0, 3, 1, 0, 2, 0]  # H5F's opens in H5D's figure
    assert set(got) == {"POSIX", "STDIO", "H5F", "H5D"}


@pytest.mark.parametrize("executor", [0, 1], ids=["spark", "pandas"])
def test_data_access_by_root(both, executor):
    got = _by(both["roots"][executor], "filesystem_root")
    cols = ("bytes_read", "bytes_written", "files_read", "files_written", "files")
    assert {k: tuple(r[c] for c in cols) for (k,), r in got.items()} == {
        "/scratch": (1000, 0, 1, 0, 1),
        "/home": (50, 500, 1, 1, 1),
        "<STDOUT>": (0, 20, 0, 1, 1),
    }
    if executor == 1:  # the report's order: most traffic first
        assert [r["filesystem_root"] for r in both["roots"][1]] == ["/scratch", "/home", "<STDOUT>"]


def test_filesystem_root_follows_pydarshans_rule():
    f = js.filesystem_root
    assert f("/scratch/a/b") == "/scratch"
    assert f("/") == "/"
    assert f("<STDERR>") == "<STDERR>"
    assert f("//scratch/x") == "/"  # a path starting // (root-mounted files)
    assert f("12345") == "anonymized (12345)"
    assert f("rel/dir/f") == "reldir"  # pydarshan joins a relative path's first two parts
    assert f(None) is None
