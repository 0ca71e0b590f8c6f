"""watch stage on a small lake of literal silver rows: one gold/app_runs row per job with its key,
the regressed application flagged, a re-run adds no rows, new jobs add theirs, and the lake's
history exported as a CSV gives the same alarms through `iolake watch --history`."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from iolake.config import load_config
from iolake.lake import read_table, table_version
from iolake.lake.writer import write
from jobs import watch
from schemas import GOLD, SILVER
from tests.support.frames import frame

pytestmark = pytest.mark.slow

T0 = dt.datetime(2024, 1, 1, 2, 0, tzinfo=dt.UTC)
WOBBLE = [1.0, 1.12, 0.9, 1.05, 0.93, 1.08, 0.88, 1.02, 0.97, 1.1]
# (exe, uid, nprocs, mount of its data file, read?, shared?) -> the key the stage must build, by hand
APPS = {
    "A": (
        ("ior", 1000, 2048, "/scratch1", False, True),
        "ior|1000|2048-8191|/scratch1|write|shared",
    ),
    "B": (("vpic", 1001, 64, "/scratch1", False, False), "vpic|1001|32-127|/scratch1|write|fpp"),
    "C": (("hacc", 1002, 512, "/scratch1", True, False), "hacc|1002|512-2047|/scratch1|read|fpp"),
    "D": (("bdcats", 1003, 8, "/scratch2", True, True), "bdcats|1003|8-31|/scratch2|read|shared"),
}
DROP_AT = 30  # app A runs at half speed from its run 30 on


def _job(app: str, i: int, bw: float, start=True):
    (exe, uid, nprocs, mount, read, shared), _ = APPS[app]
    log_id = f"{app}{i:03d}"
    moved = 1 << 30
    io_time = moved / 1048576.0 / bw
    jf = {
        "jobid": i,
        "uid": uid,
        "program": exe,
        "nprocs": nprocs,
        "start_time": T0 + dt.timedelta(days=i, minutes=5 * "ABCD".index(app)) if start else None,
        "file_count": 1,
        "shared_file_count": 1 if shared else 0,
        "read_requests": 10,
        "write_requests": 10,
        "bytes_read": moved if read else 0,
        "bytes_written": 0 if read else moved,
        "io_time_s": io_time,
        "meta_time_s": 0.1 * io_time,
        "meta_time_share": 0.1,
        "throughput_mib_s": bw,
        "suspect": False,
    }
    ff = [
        {
            "record_id": rid,
            "file_name": name,
            "mount_point": mnt,
            "tier": "pfs",
            "interface": "POSIX",
            "n_ranks": nprocs,
            "file_per_process": False,
            "unique_dir": False,
            "collective": False,
            "file_view": False,
            "fsync": False,
            "fsync_per_write": False,
            "preallocate": False,
            "opens": 1,
            "reads": 1,
            "writes": 1,
            "io_type": "WO",
            "io_type_source": "counters",
            "random_access": False,
            "bytes_read": b,
            "bytes_written": 0,
        }
        for rid, name, mnt, b in (
            (1, f"{mount}/data", mount, moved),
            (2, "/home/u/small", "/home", 1000),
            (3, "<STDOUT>", None, 10 * moved),
        )
    ]
    return log_id, jf, ff


def _bw(app: str, i: int) -> float:
    base = {"A": 20000.0, "B": 3000.0, "C": 9000.0, "D": 500.0}[app] * WOBBLE[
        (i + 3 * "ABCD".index(app)) % 10
    ]
    return base * (0.5 if app == "A" and i >= DROP_AT else 1.0)


def _write_jobs(spark, conf, jobs):
    jf = [{"log_id": log_id, **j} for log_id, j, _ in jobs]
    ff = [{"log_id": log_id, **f} for log_id, _, files in jobs for f in files]
    write(
        spark,
        conf,
        SILVER["file_features"],
        frame(spark, "file_features", ff, job_month="2024-01").coalesce(1),
    )
    write(
        spark,
        conf,
        SILVER["job_features"],
        frame(spark, "job_features", jf, job_month="2024-01").coalesce(1),
    )


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("watch") / "lake"
    conf = load_config("local", overrides={"lake": {"root": str(root)}})
    jobs = [_job(app, i, _bw(app, i)) for app in APPS for i in range(45)]
    jobs.append(_job("B", 99, 1.0, start=False))  # no start time: no place in a history
    _write_jobs(spark, conf, jobs)
    first = watch.run(spark, conf, echo=lambda *_: None)
    runs = read_table(spark, GOLD["app_runs"], conf.lake.root).toPandas()
    regs = read_table(spark, GOLD["regressions"], conf.lake.root).toPandas()
    return conf, first, runs, regs


def test_app_runs_one_row_per_job_with_its_key(lake):
    conf, first, runs, _ = lake
    assert len(runs) == 4 * 45 and runs.log_id.is_unique and "B099" not in set(runs.log_id)
    for app, (_, key) in APPS.items():
        mine = runs[runs.log_id.str.startswith(app)]
        assert set(mine.app) == {key}
    a5 = runs.set_index("log_id").loc["A005"]
    assert (
        a5.fs == "/scratch1"
    )  # the data file's mount, not /home, not the (bigger) stdout without a mount
    assert a5.bandwidth_mib_s == pytest.approx(_bw("A", 5)) and a5.bytes == 1 << 30
    assert a5.io_time_s == pytest.approx((1 << 30) / 1048576.0 / _bw("A", 5))


def test_the_regressed_application_is_flagged_and_only_it(lake):
    conf, first, runs, regs = lake
    assert set(regs.app) == {APPS["A"][1]}
    r = regs.sort_values("start").iloc[0]
    run_of = {row.log_id: int(row.log_id[1:]) for row in runs.itertuples()}
    assert DROP_AT <= run_of[r.log_id] < DROP_AT + 5
    assert r.metric == "bandwidth_mib_s" and r.change < -0.3 and r.rule in conf.watch.rules
    assert r.baseline_runs >= conf.watch.min_history
    # A's peers on /scratch1 (B, C) ran that day and did not drop: the application, not the weather
    assert r.weather == False and r.weather_peers == 2 and r.weather_dropped == 0  # noqa: E712
    assert first["runs"] == 4 * 45 and first["regressions"] == len(regs)


def test_a_rerun_adds_no_rows(spark, lake):
    conf, _, runs, regs = lake
    v_runs, v_regs = (
        table_version(spark, GOLD[t], conf.lake.root) for t in ("app_runs", "regressions")
    )
    again = watch.run(spark, conf, echo=lambda *_: None)
    assert again["logs"] in (0, 1)  # B099 (no start) may be looked at again; it adds nothing
    assert read_table(spark, GOLD["app_runs"], conf.lake.root).count() == len(runs)
    assert read_table(spark, GOLD["regressions"], conf.lake.root).count() == len(regs)
    assert table_version(spark, GOLD["app_runs"], conf.lake.root) == v_runs
    assert table_version(spark, GOLD["regressions"], conf.lake.root) == v_regs


def test_external_history_gives_the_same_alarms_as_the_lake(lake, tmp_path):
    from apps.watch import watch as watch_cmd

    conf, _, runs, regs = lake
    csv = tmp_path / "history.csv"
    ext = runs[["app", "start", "bandwidth_mib_s", "fs", "log_id"]].copy()
    ext["start"] = pd.to_datetime(ext["start"], utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    ext.sample(frac=1.0, random_state=1).to_csv(csv, index=False)  # any row order
    got = watch_cmd(conf, str(csv))
    cols = ["app", "log_id", "metric", "rule", "value", "baseline", "baseline_runs", "weather"]
    a = regs[cols].sort_values(["app", "log_id"]).reset_index(drop=True)
    b = got[cols].sort_values(["app", "log_id"]).reset_index(drop=True)
    assert len(a) >= 1
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    # and the lake read without Spark (the default of `iolake watch`) agrees too
    c = watch_cmd(conf)[cols].sort_values(["app", "log_id"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, c, check_dtype=False)


def test_new_jobs_are_added_and_a_new_regression_found(spark, lake):
    conf, _, runs, regs = lake
    more = [_job("D", i, _bw("D", i) * 0.4) for i in range(45, 55)]  # D drops by 60%
    _write_jobs(spark, conf, more)
    summary = watch.run(spark, conf, echo=lambda *_: None)
    assert summary["runs"] == 10
    after = read_table(spark, GOLD["regressions"], conf.lake.root).toPandas()
    assert read_table(spark, GOLD["app_runs"], conf.lake.root).count() == len(runs) + 10
    assert set(after.app) == {APPS["A"][1], APPS["D"][1]}
    d = after[after.app == APPS["D"][1]]
    assert len(d) == 1 and d.iloc[0].log_id in {f"D{i:03d}" for i in range(45, 50)}
    assert d.iloc[0].weather_peers == 0 and d.iloc[0].weather == False  # noqa: E712 - alone on /scratch2
