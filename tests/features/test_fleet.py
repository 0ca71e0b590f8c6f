"""features/fleet.py on tiny literal jobs whose figures are worked out by hand below: core-hours,
I/O core-hours, suspect jobs left out of I/O figures, exact percentiles, tag runs, the tag cost
ledger with its what-if estimate, and drift."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from features import fleet
from tests.support.frames import frame

NOW = dt.datetime(2024, 2, 1, tzinfo=dt.UTC)
START = dt.datetime(2024, 1, 10, 3, 0, tzinfo=dt.UTC)


def _jobs(spark):
    # A: 4 procs x 1 h = 4 core-hours; 1800 + 1800 s of I/O = 1 I/O core-hour; 10 MiB/s
    # B: 2 procs x 0.5 h = 1 core-hour; 360 + 360 s = 0.2 I/O core-hours; 30 MiB/s
    # C: suspect, 1 proc x 1 h = 1 core-hour; its 7200 s of reads and 1000 MiB/s do not count
    rows = {
        "A": dict(nprocs=4, run_time_s=3600.0, read_time_s=1800.0, write_time_s=1800.0,
                  meta_time_s=None, throughput_mib_s=10.0, bytes_read=100, bytes_written=50,
                  suspect=False),
        "B": dict(nprocs=2, run_time_s=1800.0, read_time_s=360.0, write_time_s=0.0,
                  meta_time_s=360.0, throughput_mib_s=30.0, bytes_read=1, bytes_written=2,
                  suspect=False),
        "C": dict(nprocs=1, run_time_s=3600.0, read_time_s=7200.0, write_time_s=0.0,
                  meta_time_s=0.0, throughput_mib_s=1000.0, bytes_read=10**15, bytes_written=0,
                  suspect=True),
    }  # fmt: skip
    jf = None
    for log, r in rows.items():
        df = frame(
            spark,
            "job_features",
            [dict(r, program="ior", uid=7, start_time=START, file_count=1, shared_file_count=0,
                  read_requests=1, write_requests=1)],
            log_id=log,
        )  # fmt: skip
        jf = df if jf is None else jf.unionByName(df)
    keys = spark.createDataFrame([(k, "ior|7") for k in rows], "log_id string, app string")
    return jf, fleet.fleet_jobs(jf, keys)


def _tags(spark):
    rows = [("A", "small_writes"), ("A", "small_reads"), ("B", "small_writes"), ("C", "no_issue")]
    out = None
    for log, tag in rows:
        df = frame(spark, "bottleneck_tags", [dict(tag=tag, severity="high", metric="m",
                                                   evidence=[], message="")], log_id=log)  # fmt: skip
        out = df if out is None else out.unionByName(df)
    return out


def test_app_month_by_hand(spark):
    _, jobs = _jobs(spark)
    regs = frame(
        spark,
        "regressions",
        [
            dict(app="ior|7", start=START, metric="bandwidth_mib_s", value=1.0, baseline=2.0,
                 change=-0.5, rule="r", threshold_name="t", threshold=1.0, baseline_runs=5,
                 baseline_first=START, baseline_last=START),
            dict(app="ior|7", start=START + dt.timedelta(days=40), metric="io_time_s", value=1.0,
                 baseline=2.0, change=-0.5, rule="r", threshold_name="t", threshold=1.0,
                 baseline_runs=5, baseline_first=START, baseline_last=START),
        ],
    )  # fmt: skip
    rows = fleet.app_month(jobs, _tags(spark), regs, True, NOW).collect()
    assert len(rows) == 1
    r = rows[0]
    assert (r.app, r.month, r.exe_name, r.uid) == ("ior|7", "2024-01", "ior", 7)
    assert (r.runs, r.suspect_runs) == (3, 1)
    assert r.core_hours == pytest.approx(6.0) and r.io_core_hours == pytest.approx(1.2)
    assert r.io_share == pytest.approx(0.2)
    assert (r.bytes_read, r.bytes_written) == (101, 52)
    # 10 and 30 MiB/s: linear interpolation gives 12, 20, 28
    assert r.throughput_p10_mib_s == pytest.approx(12.0)
    assert r.throughput_p50_mib_s == pytest.approx(20.0)
    assert r.throughput_p90_mib_s == pytest.approx(28.0)
    assert dict(r.tag_runs) == {"small_writes": 2, "small_reads": 1}
    assert r.regressions == 1  # the other one starts in February
    assert fleet.app_month(jobs, _tags(spark), regs, False, NOW).first().uid is None


ADVICE = dict(evidence=[], message="", advised_with="1", advised_at=NOW)


def test_tag_cost_by_hand(spark):
    _, jobs = _jobs(spark)
    advice = frame(
        spark,
        "tuning_advice",
        [
            dict(ADVICE, kind="what_if", item="1", predicted_speedup=2.0),
            dict(ADVICE, kind="what_if", item="2", predicted_speedup=4.0),
            dict(ADVICE, kind="what_if", item="3", predicted_speedup=0.5),
            dict(ADVICE, kind="stripe", item="4", predicted_speedup=8.0),
        ],
        log_id="A",
    )
    advice = advice.unionByName(
        frame(spark, "tuning_advice", [dict(ADVICE, kind="stripe", item="1", predicted_speedup=3.0)],
              log_id="B")
    )  # fmt: skip
    codes = {"small_writes": "IO02", "small_reads": "IO01"}
    rows = {r.tag: r for r in fleet.tag_cost(jobs, _tags(spark), advice, codes, NOW).collect()}
    assert set(rows) == {"small_writes", "small_reads"}  # no_issue is no cost
    w, rd = rows["small_writes"], rows["small_reads"]
    assert (w.jobs, w.code, w.uid) == (2, "IO02", 7)
    assert w.io_core_hours == pytest.approx(1.2) and w.core_hours == pytest.approx(5.0)
    # only A has a what-if >= 1: its largest, 4x, recovers 1 * (1 - 1/4) = 0.75 I/O core-hours
    assert w.recoverable_io_core_hours == pytest.approx(0.75) and w.recoverable_source == "what_if"
    assert rd.jobs == 1 and rd.io_core_hours == pytest.approx(1.0)
    assert rd.recoverable_io_core_hours == pytest.approx(0.75)
    none = fleet.tag_cost(jobs, _tags(spark), advice.where("kind = 'stripe'"), codes, NOW)
    assert all(
        r.recoverable_io_core_hours is None and r.recoverable_source is None for r in none.collect()
    )


def test_tag_cost_uses_a_precedent_where_no_what_if_and_says_so(spark):
    _, jobs = _jobs(spark)
    rows = [
        ("A", dict(ADVICE, kind="what_if", item="1", predicted_speedup=4.0, precedent_speedup=9.0)),
        (
            "B",
            dict(ADVICE, kind="tag", item="small_writes", precedent_speedup=2.0, precedent_runs=3),
        ),
        ("B", dict(ADVICE, kind="stripe", item="job", precedent_speedup=0.5, precedent_runs=1)),
    ]
    advice = None
    for log, r in rows:
        df = frame(spark, "tuning_advice", [r], log_id=log)
        advice = df if advice is None else advice.unionByName(df)
    codes = {"small_writes": "IO02", "small_reads": "IO01"}
    got = {r.tag: r for r in fleet.tag_cost(jobs, _tags(spark), advice, codes, NOW).collect()}
    w, rd = got["small_writes"], got["small_reads"]
    # A keeps its what-if (4x, not its precedent's 9x): 1 * (1 - 1/4) = 0.75; B has no what-if, its
    # largest precedent >= 1 is 2x: 0.2 * (1 - 1/2) = 0.1; together 0.85 from both sources
    assert w.recoverable_io_core_hours == pytest.approx(0.85)
    assert w.recoverable_source == "what_if+precedent"
    assert (rd.recoverable_io_core_hours, rd.recoverable_source) == (pytest.approx(0.75), "what_if")
    only_b = fleet.tag_cost(jobs, _tags(spark), advice.where("log_id = 'B'"), codes, NOW)
    b = {r.tag: r for r in only_b.collect()}["small_writes"]
    assert (b.recoverable_io_core_hours, b.recoverable_source) == (pytest.approx(0.1), "precedent")


def test_drift_by_hand(spark):
    rows = [
        dict(throughput_mib_s=m, predicted_throughput_mib_s=p, model_name="job", model_version="1",
             scored_at=NOW)
        for m, p in ((10.0, 10.0), (10.0, 20.0), (10.0, 40.0), (0.0, 5.0), (5.0, None))
    ]  # fmt: skip
    jp = frame(spark, "job_bandwidth_predictions", rows)
    fp = frame(spark, "bandwidth_predictions", [])
    (r,) = fleet.drift(jp, fp, NOW).collect()
    assert (r.model_name, r.model_version, r.month, r.n) == ("job", "1", "2024-01", 3)
    # ratios 1, 2, 4: median 2; |log10| 0, 0.301, 0.602: median log10(2); 2 of 3 within 2x
    assert r.median_ratio == pytest.approx(2.0)
    assert r.median_abs_log10_error == pytest.approx(math.log10(2))
    assert r.within_2x_share == pytest.approx(2 / 3)
