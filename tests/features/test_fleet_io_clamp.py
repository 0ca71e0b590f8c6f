"""A job's I/O core-hours are cut at its core-hours (features/fleet.py `io_core_hours_col`,
decision 0032): concurrent calls of one process's threads on different files add up past its
wall time in Darshan's per-record times.

Literal rows worked out by hand, and the real log that showed it: pydarshan's example
`dxt.darshan` (uid 8699, one process, a 1,469 s run) whose POSIX_F_META_TIME over 214 records
sums to 11,217.8 s (8 named pipes a COMPSs worker's threads each waited ~1,462 s to open), an
I/O share of 764% before the cut.
"""

from __future__ import annotations

import datetime as dt

import pytest

from features import fleet
from tests.support.frames import frame

START = dt.datetime(2024, 1, 10, 3, 0, tzinfo=dt.UTC)


def _io_core_hours(spark, rows: dict) -> dict:
    jf = None
    for log, r in rows.items():
        df = frame(
            spark,
            "job_features",
            [dict(r, program="x", uid=1, start_time=START, file_count=1, shared_file_count=0,
                  bytes_read=0, bytes_written=0,
                  read_requests=1, write_requests=1)],
            log_id=log,
        )  # fmt: skip
        jf = df if jf is None else jf.unionByName(df)
    keys = spark.createDataFrame([(k, "x|1") for k in rows], "log_id string, app string")
    return {r.log_id: (r.io_core_hours, r.core_hours) for r in fleet.fleet_jobs(jf, keys).collect()}


def test_io_core_hours_are_cut_at_core_hours(spark):
    rows = {
        # one process, 1,469 s: 11,217.8 s of metadata calls -> 1,469 s (0.408 h), share 100%
        "threads": dict(nprocs=1, run_time_s=1469.0, read_time_s=0.4, write_time_s=0.0,
                        meta_time_s=11217.4, suspect=False),
        # 4 processes x 100 s = 400 process-s; 50 + 30 + 20 = 100 s stays 100 s
        "under": dict(nprocs=4, run_time_s=100.0, read_time_s=50.0, write_time_s=30.0,
                      meta_time_s=20.0, suspect=False),
        # exactly at the bound: 2 x 10 s = 20 s of I/O stays 20 s
        "at": dict(nprocs=2, run_time_s=10.0, read_time_s=20.0, write_time_s=None,
                   meta_time_s=None, suspect=False),
        # no run time: no bound, the sum stands (7,200 s = 2 h); core-hours unknown
        "no_time": dict(nprocs=1, run_time_s=None, read_time_s=7200.0, write_time_s=0.0,
                        meta_time_s=0.0, suspect=False),
        # run time 0: no bound either
        "zero": dict(nprocs=3, run_time_s=0.0, read_time_s=36.0, write_time_s=0.0,
                     meta_time_s=0.0, suspect=False),
        # suspect: no I/O core-hours at all
        "suspect": dict(nprocs=1, run_time_s=10.0, read_time_s=5.0, write_time_s=0.0,
                        meta_time_s=0.0, suspect=True),
    }  # fmt: skip
    got = _io_core_hours(spark, rows)
    assert got["threads"][0] == pytest.approx(1469.0 / 3600)
    assert got["threads"][0] == pytest.approx(got["threads"][1])
    assert got["under"][0] == pytest.approx(100.0 / 3600)
    assert got["at"][0] == pytest.approx(20.0 / 3600)
    assert got["no_time"] == (pytest.approx(2.0), None)
    assert got["zero"][0] == pytest.approx(0.01) and got["zero"][1] == 0.0
    assert got["suspect"][0] is None


@pytest.mark.slow
def test_the_764_percent_job_is_cut_to_its_run_time(spark, tmp_path):
    """The real log through ingest and features: its job_features times are Darshan's (the
    11,218 s sum pydarshan's counters give), its I/O core-hours its 1,469 process-seconds."""
    import pyspark.sql.functions as F

    from iolake.config import load_config
    from iolake.lake import read_table
    from jobs import features, ingest
    from readers.fsio import content_hash
    from schemas import SILVER
    from tests.support.data import shared_path

    log = shared_path(
        "darshan", "darshan", "darshan-util", "pydarshan", "darshan", "examples",
        "example_logs", "dxt.darshan",
    )  # fmt: skip
    conf = load_config(
        "local", overrides={"lake": {"root": str(tmp_path / "lake")}, "gates": {"enabled": False}}
    )
    quiet = dict(echo=lambda *_: None)
    ingest.run(spark, conf, [str(log)], **quiet)
    features.run(spark, conf, **quiet)
    log_id = content_hash(str(log), "darshan")
    jf = read_table(spark, SILVER["job_features"], conf.lake.root).where(F.col("log_id") == log_id)
    (r,) = jf.collect()
    # pydarshan 3.5.0 on this log: uid 8699, nprocs 1, run_time 1469.0; the POSIX records'
    # F_READ_TIME + F_WRITE_TIME + F_META_TIME sum to 0.43136 + 0.02011 + 11217.79535 s
    assert (r.uid, r.nprocs, r.run_time_s) == (8699, 1, 1469.0)
    assert not r.suspect
    total = (r.read_time_s or 0) + (r.write_time_s or 0) + (r.meta_time_s or 0)
    assert total == pytest.approx(11218.2468, abs=0.01)
    assert total / (r.nprocs * r.run_time_s) == pytest.approx(7.637, abs=0.001)  # the 764%
    keys = jf.select("log_id", F.lit("app").alias("app"))
    (j,) = fleet.fleet_jobs(jf, keys).collect()
    assert j.core_hours == pytest.approx(1469.0 / 3600)
    assert j.io_core_hours == pytest.approx(1469.0 / 3600)  # share 100%, not 764%
