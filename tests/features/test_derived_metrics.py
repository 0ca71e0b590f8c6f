"""features/derived_metrics.py on literal records, every value worked out by hand from
darshan-util's accumulator (darshan-util/darshan-logutils-accumulator.c)."""

from __future__ import annotations

import pytest

from features.derived_metrics import COLUMNS, derived_metrics
from tests.support.frames import frame

MIB = 1048576.0

# L1, 4 processes. POSIX: file 1 shared (rank -1: only F_SLOWEST_RANK_TIME counts, not the
# meta / read times); file 2 written by ranks 0 and 1 and read by rank 1; file 3 read by rank 1;
# file 4 only opened by rank 2.
POSIX_L1 = [
    {
        "record_id": 1,
        "rank": -1,
        "POSIX_BYTES_READ": 1000,
        "POSIX_MAX_BYTE_READ": 999,
        "POSIX_F_SLOWEST_RANK_TIME": 2.0,
        "POSIX_F_META_TIME": 9.0,
        "POSIX_F_READ_TIME": 9.0,
    },
    {
        "record_id": 2,
        "rank": 0,
        "POSIX_BYTES_WRITTEN": 500,
        "POSIX_MAX_BYTE_WRITTEN": 499,
        "POSIX_F_WRITE_TIME": 1.0,
        "POSIX_F_META_TIME": 0.5,
    },
    {
        "record_id": 2,
        "rank": 1,
        "POSIX_BYTES_READ": 100,
        "POSIX_BYTES_WRITTEN": 300,
        "POSIX_MAX_BYTE_READ": 99,
        "POSIX_MAX_BYTE_WRITTEN": 799,
        "POSIX_F_READ_TIME": 0.25,
        "POSIX_F_WRITE_TIME": 0.5,
        "POSIX_F_META_TIME": 0.25,
    },
    {
        "record_id": 3,
        "rank": 1,
        "POSIX_BYTES_READ": 200,
        "POSIX_MAX_BYTE_READ": 1999,
        "POSIX_F_READ_TIME": 0.5,
        "POSIX_F_META_TIME": 0.25,
    },
    {"record_id": 4, "rank": 2, "POSIX_OPENS": 1, "POSIX_F_META_TIME": 0.125},
]
# MPI-IO reports no byte offsets: its offset counters are -1 and its sizes null
MPIIO_L1 = [
    {"record_id": 2, "rank": 0, "MPIIO_BYTES_WRITTEN": 500, "MPIIO_F_WRITE_TIME": 2.0},
    {"record_id": 2, "rank": 1, "MPIIO_BYTES_WRITTEN": 500, "MPIIO_F_WRITE_TIME": 1.0},
]
# L2, 2 processes. STDIO: ranks 0 and 1 tie at 1 s (the lower rank is the slowest); two unique
# files reach the job's 2 processes (nprocs -1). POSIX: one file opened, no time at all.
STDIO_L2 = [
    {
        "record_id": 5,
        "rank": 0,
        "STDIO_BYTES_WRITTEN": 10,
        "STDIO_MAX_BYTE_WRITTEN": 9,
        "STDIO_F_WRITE_TIME": 1.0,
    },
    {
        "record_id": 6,
        "rank": 1,
        "STDIO_BYTES_READ": 20,
        "STDIO_MAX_BYTE_READ": 19,
        "STDIO_F_READ_TIME": 0.75,
        "STDIO_F_META_TIME": 0.25,
    },
]
POSIX_L2 = [{"record_id": 7, "rank": 0, "POSIX_OPENS": 1}]

ZERO = dict.fromkeys(
    (
        "count",
        "total_read_volume_bytes",
        "total_write_volume_bytes",
        "max_read_volume_bytes",
        "max_write_volume_bytes",
        "total_max_offset_bytes",
        "max_offset_bytes",
        "nprocs",
    ),
    0,
) | {"avg_size_bytes": None, "max_size_bytes": None}


def _cat(count, rd, wr, max_rd, max_wr, tmo, mo, nprocs, avg, size):
    return dict(
        count=count,
        total_read_volume_bytes=rd,
        total_write_volume_bytes=wr,
        max_read_volume_bytes=max_rd,
        max_write_volume_bytes=max_wr,
        total_max_offset_bytes=tmo,
        max_offset_bytes=mo,
        nprocs=nprocs,
        avg_size_bytes=avg,
        max_size_bytes=size,
    )


@pytest.fixture(scope="module")
def rows(spark):
    posix = frame(spark, "posix", POSIX_L1).unionByName(frame(spark, "posix", POSIX_L2, "L2"))
    modules = {
        "posix": posix,
        "mpiio": frame(spark, "mpiio", MPIIO_L1),
        "stdio": frame(spark, "stdio", STDIO_L2, "L2"),
        "h5f": frame(spark, "h5f", [{"record_id": 9, "rank": 0}]),  # not accumulated
    }
    jobs = frame(spark, "jobs", [{"nprocs": 4}]).unionByName(
        frame(spark, "jobs", [{"nprocs": 2}], "L2")
    )
    df = derived_metrics(modules, jobs)
    assert tuple(df.columns) == COLUMNS
    return {(r["log_id"], r["module"]): r.asDict() for r in df.collect()}


def _check(row, want):
    for k, v in want.items():
        if isinstance(v, dict):
            for f, x in v.items():
                assert row[f"{k}_{f}"] == pytest.approx(x) if x else row[f"{k}_{f}"] == x, (k, f)
        else:
            assert row[k] == pytest.approx(v) if isinstance(v, float) else row[k] == v, k


def test_derived_metrics_rows_per_log_and_accumulated_module(rows):
    assert sorted(rows) == [("L1", "MPI-IO"), ("L1", "POSIX"), ("L2", "POSIX"), ("L2", "STDIO")]


def test_derived_metrics_posix_slowest_rank_and_shared_files(rows):
    # bytes 1000 + 500 + 400 + 200; rank 0: 1.5 s, rank 1: 1.0 + 0.75 s (rw 1.25, md 0.5),
    # rank 2: 0.125 s; shared file 1: its slowest rank's 2.0 s
    # files: 1 read-only shared (max offset 999), 2 read-write on 2 ranks (799),
    # 3 read-only unique (1999), 4 neither read nor written, unique (0)
    _check(
        rows[("L1", "POSIX")],
        {
            "nprocs": 4,
            "n_records": 5,
            "total_bytes": 2100,
            "unique_io_total_time_by_slowest": 1.75,
            "unique_rw_only_time_by_slowest": 1.25,
            "unique_md_only_time_by_slowest": 0.5,
            "unique_io_slowest_rank": 1,
            "shared_io_total_time_by_slowest": 2.0,
            "agg_time_by_slowest": 3.75,
            "agg_perf_by_slowest": 2100 / MIB / 3.75,
            # sum of max offsets 999 + 799 + 1999 + 0; avg (3797 + 4) / 4; max 1999 + 1
            "all": _cat(4, 1300, 800, 1000, 800, 3797, 1999, -1, 950.25, 2000),
            "read_only": _cat(2, 1200, 0, 1000, 0, 2998, 1999, -1, 1500.0, 2000),
            "write_only": ZERO,
            "read_write": _cat(1, 100, 800, 100, 800, 799, 799, 2, 800.0, 800),
            "unique": _cat(2, 200, 0, 200, 0, 1999, 1999, 2, 1000.5, 2000),
            "shared": _cat(1, 1000, 0, 1000, 0, 999, 999, -1, 1000.0, 1000),
            "partially_shared": _cat(1, 100, 800, 100, 800, 799, 799, 2, 800.0, 800),
        },
    )


def test_derived_metrics_mpiio_reports_no_offsets(rows):
    wo = _cat(1, 0, 1000, 0, 1000, -1, -1, 2, None, None)
    _check(
        rows[("L1", "MPI-IO")],
        {
            "total_bytes": 1000,
            "unique_io_total_time_by_slowest": 2.0,
            "unique_rw_only_time_by_slowest": 2.0,
            "unique_io_slowest_rank": 0,
            "shared_io_total_time_by_slowest": 0.0,
            "agg_perf_by_slowest": 1000 / MIB / 2.0,
            "all": wo,
            "write_only": wo,
            "partially_shared": wo,
            "read_only": ZERO,
            "unique": ZERO,
        },
    )


def test_derived_metrics_tie_lowest_rank_and_nprocs_reaching_the_job(rows):
    _check(
        rows[("L2", "STDIO")],
        {
            "total_bytes": 30,
            "unique_io_total_time_by_slowest": 1.0,
            "unique_rw_only_time_by_slowest": 1.0,
            "unique_md_only_time_by_slowest": 0.0,
            "unique_io_slowest_rank": 0,
            "agg_time_by_slowest": 1.0,
            "agg_perf_by_slowest": 30 / MIB,
            "all": _cat(2, 20, 10, 20, 10, 28, 19, -1, 15.0, 20),
            "unique": _cat(2, 20, 10, 20, 10, 28, 19, -1, 15.0, 20),
            "read_only": _cat(1, 20, 0, 20, 0, 19, 19, 1, 20.0, 20),
            "write_only": _cat(1, 0, 10, 0, 10, 9, 9, 1, 10.0, 10),
        },
    )


def test_derived_metrics_no_time_gives_zero_rate(rows):
    # darshan-util leaves agg_perf_by_slowest 0 when agg_time_by_slowest is 0
    _check(
        rows[("L2", "POSIX")],
        {
            "total_bytes": 0,
            "agg_time_by_slowest": 0.0,
            "agg_perf_by_slowest": 0.0,
            "unique_io_slowest_rank": 0,
            "all": _cat(1, 0, 0, 0, 0, 0, 0, 1, 1.0, 1),
            "read_only": ZERO,
            "unique": _cat(1, 0, 0, 0, 0, 0, 0, 1, 1.0, 1),
        },
    )
