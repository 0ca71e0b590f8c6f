"""The five fleet marts (docs/fleet.md, "The marts") written with delta-rs into a lake folder laid out
as the real one (LAKE/gold/fleet_app_month, ...), in the marts' fixed column types, partitioned by
`month` as the fleet stage writes them (fs_day by its day's month, health by its night's), from
chosen rows.

`small(lake)` writes a handful of hand-chosen rows (and the watch's gold/regressions and
gold/app_runs, `watch_tables`, unless `skip` names "watch") whose page figures tests/apps/test_fleet_page.py
works out by hand (the numbers are in that file's comments); `centre(lake)` writes a plausible
centre's six months (a dozen applications, a few users, three mounts, nightly health, two model
versions) from a seeded generator, for the screenshots in docs/images/fleet*.png and for timing.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path

import pyarrow as pa

LONG, DOUBLE, STRING = pa.int64(), pa.float64(), pa.string()
COUNTS = pa.map_(pa.string(), pa.int64())
STAMP = pa.timestamp("us", tz="UTC")

SCHEMAS = {
    "fleet_app_month": pa.schema(
        [
            ("app", STRING), ("month", STRING), ("exe_name", STRING), ("uid", LONG),
            ("runs", LONG), ("suspect_runs", LONG), ("core_hours", DOUBLE),
            ("io_core_hours", DOUBLE), ("io_share", DOUBLE), ("bytes_read", LONG),
            ("bytes_written", LONG), ("throughput_p10_mib_s", DOUBLE),
            ("throughput_p50_mib_s", DOUBLE), ("throughput_p90_mib_s", DOUBLE),
            ("tag_runs", COUNTS), ("regressions", LONG), ("efficiency_p50", DOUBLE),
            ("efficiency_runs", LONG), ("updated_at", STAMP),
        ]
    ),
    "fleet_tag_cost": pa.schema(
        [
            ("month", STRING), ("tag", STRING), ("code", STRING), ("app", STRING), ("uid", LONG),
            ("jobs", LONG), ("io_core_hours", DOUBLE), ("core_hours", DOUBLE),
            ("recoverable_io_core_hours", DOUBLE), ("recoverable_source", STRING),
            ("updated_at", STAMP),
        ]
    ),
    "fleet_fs_day": pa.schema(
        [
            ("day", pa.date32()), ("mount_point", STRING), ("fs_type", STRING), ("jobs", LONG),
            ("bytes_read", LONG), ("bytes_written", LONG), ("reads", LONG), ("writes", LONG),
            ("opens", LONG), ("meta_time_s", DOUBLE), ("io_time_s", DOUBLE), ("updated_at", STAMP),
            ("month", STRING),
        ]
    ),
    "fleet_health": pa.schema(
        [
            ("night", pa.date32()), ("logs", LONG), ("ok", LONG), ("partial", LONG),
            ("quarantined", LONG), ("suspect", LONG), ("quarantine_reasons", COUNTS),
            ("runs", LONG), ("failed_runs", LONG), ("run_seconds", DOUBLE), ("lag", COUNTS),
            ("updated_at", STAMP), ("month", STRING),
        ]
    ),
    "fleet_drift": pa.schema(
        [
            ("model_name", STRING), ("model_version", STRING), ("month", STRING), ("n", LONG),
            ("median_ratio", DOUBLE), ("median_abs_log10_error", DOUBLE),
            ("within_2x_share", DOUBLE), ("updated_at", STAMP),
        ]
    ),
}  # fmt: skip
PARTITION = {
    name: ["month"] for name in SCHEMAS
}  # fs_day by its day's month, health by its night's
UPDATED = dt.datetime(2026, 4, 1, 2, 30, tzinfo=dt.UTC)
GIB, MIB = 2**30, 2**20


def write(lake: Path, name: str, rows: list[dict]) -> None:
    """Write `rows` as the mart `name` at LAKE/gold/<name> (missing columns null, updated_at set)."""
    from deltalake import write_deltalake

    schema = SCHEMAS[name]
    day = {"fleet_fs_day": "day", "fleet_health": "night"}.get(name)
    if day:  # the stage's partition column: the day's (night's) month
        rows = [r | {"month": r[day].strftime("%Y-%m")} for r in rows]
    cols = {
        f.name: [r.get(f.name, UPDATED if f.name == "updated_at" else None) for r in rows]
        for f in schema
    }
    table = pa.table(cols, schema=schema)
    write_deltalake(
        str(Path(lake) / "gold" / name), table, partition_by=PARTITION.get(name), mode="overwrite"
    )


def _app(app, month, exe, uid, runs, core, io, **kw) -> dict:
    return {
        "app": app, "month": month, "exe_name": exe, "uid": uid, "runs": runs,
        "suspect_runs": kw.pop("suspect", 0), "core_hours": core, "io_core_hours": io,
        "io_share": io / core, "bytes_read": kw.pop("read", 0), "bytes_written": kw.pop("written", 0),
        "tag_runs": list(kw.pop("tags", {}).items()), "regressions": kw.pop("regressions", 0),
        **kw,
    }  # fmt: skip


HOSTILE = "<script>alert(1)</script>"


def small(lake: Path, skip: tuple[str, ...] = ()) -> Path:
    """The hand-chosen marts (all five but those in `skip`)."""
    lake = Path(lake)
    marts = {
        "fleet_app_month": [
            _app("alpha", "2026-01", "alpha.x", 100, 4, 100.0, 10.0, suspect=1, read=GIB, written=2 * GIB,
                 throughput_p10_mib_s=50.0, throughput_p50_mib_s=100.0, throughput_p90_mib_s=200.0,
                 tags={"small_writes": 2}, regressions=1, efficiency_p50=0.4, efficiency_runs=3),
            _app("alpha", "2026-02", "alpha.x", 100, 2, 50.0, 20.0, read=GIB, written=0,
                 throughput_p10_mib_s=40.0, throughput_p50_mib_s=80.0, throughput_p90_mib_s=90.0,
                 tags={"small_writes": 1, "metadata_heavy": 1}, efficiency_p50=0.1, efficiency_runs=2),
            _app(HOSTILE, "2026-01", "<script>", 200, 1, 10.0, 5.0),
            _app(HOSTILE, "2026-03", "<script>", 200, 3, 30.0, 1.0, regressions=2),
            _app("gamma", "2026-02", "gamma", None, 5, 40.0, 8.0, throughput_p50_mib_s=12.5,
                 efficiency_p50=0.25, efficiency_runs=5),
            _app("delta", "2026-03", "delta", 100, 1, 4.0, 0.5),
        ],
        "fleet_tag_cost": [
            dict(month="2026-01", tag="small_writes", code="IO02", app="alpha", uid=100, jobs=2,
                 io_core_hours=6.0, core_hours=60.0, recoverable_io_core_hours=3.0, recoverable_source="what_if"),
            dict(month="2026-02", tag="small_writes", code="IO02", app="alpha", uid=100, jobs=1,
                 io_core_hours=12.0, core_hours=30.0),
            dict(month="2026-02", tag="metadata_heavy", code="IO12", app="alpha", uid=100, jobs=1,
                 io_core_hours=12.0, core_hours=30.0, recoverable_io_core_hours=4.0, recoverable_source="what_if"),
            dict(month="2026-03", tag="small_writes", code="IO02", app=HOSTILE, uid=200, jobs=1,
                 io_core_hours=0.5, core_hours=10.0),
        ],
        "fleet_fs_day": [
            dict(day=dt.date(2026, 1, 5), mount_point="/scratch", fs_type="lustre", jobs=3, bytes_read=2 * GIB,
                 bytes_written=GIB, reads=100, writes=50, opens=10, meta_time_s=360.0, io_time_s=3600.0),
            dict(day=dt.date(2026, 1, 6), mount_point="/scratch", fs_type="lustre", jobs=2, bytes_read=GIB,
                 bytes_written=0, reads=20, writes=0, opens=4, meta_time_s=0.0, io_time_s=1800.0),
            dict(day=dt.date(2026, 2, 1), mount_point="/home", fs_type="nfs", jobs=1, bytes_read=MIB,
                 bytes_written=MIB, reads=1, writes=1, opens=2, meta_time_s=7200.0, io_time_s=7200.0),
            dict(day=dt.date(2026, 3, 1), mount_point="(none)", fs_type=None, jobs=1, bytes_read=10,
                 bytes_written=0, reads=1, writes=0, opens=1, meta_time_s=0.0, io_time_s=0.0),
        ],
        "fleet_health": [
            dict(night=dt.date(2026, 1, 5), logs=10, ok=7, partial=2, quarantined=1, suspect=1,
                 quarantine_reasons=[("truncated log", 1)], runs=1, failed_runs=0, run_seconds=120.0,
                 lag=[("gold/app_runs", 0), ("silver/bottleneck_tags", 3)]),
            dict(night=dt.date(2026, 2, 1), logs=5, ok=5, partial=0, quarantined=0, suspect=0,
                 quarantine_reasons=[], runs=2, failed_runs=1, run_seconds=60.0, lag=[]),
        ],
        "fleet_drift": [
            dict(model_name="iolake-bandwidth", model_version="1", month="2026-01", n=10, median_ratio=1.5,
                 median_abs_log10_error=0.18, within_2x_share=0.8),
            dict(model_name="iolake-bandwidth", model_version="2", month="2026-02", n=20, median_ratio=0.9,
                 median_abs_log10_error=0.05, within_2x_share=1.0),
            dict(model_name="iolake-job-bandwidth", model_version="1", month="2026-03", n=4, median_ratio=3.0,
                 median_abs_log10_error=0.48, within_2x_share=0.25),
        ],
    }  # fmt: skip
    for name, rows in marts.items():
        if name not in skip:
            write(lake, name, rows)
    if "watch" not in skip:
        watch_tables(lake)
    return lake


def _t(day: int, month: int = 1, hour: int = 10) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, tzinfo=dt.UTC)


# gold/regressions of `small`: alpha's one in 2026-01 and HOSTILE's two in 2026-03, as
# gold/fleet_app_month counts them; one per kind of weather verdict.
SMALL_REGRESSIONS = [
    dict(app="alpha", start=_t(20), log_id="a3", metric="bandwidth_mib_s", value=40.0,
         baseline=100.0, change=-0.6, rule="sma", threshold_name="watch.sma.drop", threshold=0.3,
         score=-0.6, since=_t(18, hour=0), baseline_runs=3, baseline_first=_t(2),
         baseline_last=_t(15), fs="/scratch", weather=False, weather_peers=4, weather_dropped=1),
    dict(app=HOSTILE, start=_t(5, 3), log_id="h1", metric="io_time_s", value=30.0, baseline=10.0,
         change=2.0, rule="robust_z", threshold_name="watch.robust_z.z", threshold=3.5, score=6.1,
         since=_t(5, 3), baseline_runs=5, baseline_first=_t(3), baseline_last=_t(28, 2),
         fs="/home", weather=True, weather_peers=3, weather_dropped=3),
    dict(app=HOSTILE, start=_t(6, 3), log_id="h2", metric="bandwidth_mib_s", value=5.0,
         baseline=20.0, change=-0.75, rule="cusum", threshold_name="watch.cusum.h", threshold=5.0,
         score=None, since=_t(5, 3), baseline_runs=5, baseline_first=_t(3), baseline_last=_t(28, 2),
         fs=None, weather=None, weather_peers=None, weather_dropped=None),
]  # fmt: skip
# gold/app_runs of `small`: alpha's runs (a3 is the flagged one) and HOSTILE's
SMALL_RUNS = [
    dict(log_id=f"a{i}", job_month=m, app="alpha", start=t, nprocs=8, bandwidth_mib_s=bw,
         io_time_s=io, bytes=b)
    for i, (m, t, bw, io, b) in enumerate([
        ("2026-01", _t(2), 110.0, 10.0, 1100 * MIB),
        ("2026-01", _t(9), 95.0, 12.0, 1140 * MIB),
        ("2026-01", _t(15), 100.0, 11.0, 1100 * MIB),
        ("2026-01", _t(20), 40.0, 30.0, 1200 * MIB),
        ("2026-02", _t(3, 2), 80.0, 14.0, 1120 * MIB),
        ("2026-02", _t(10, 2), None, None, 0),
    ])
] + [
    dict(log_id=f"h{i}", job_month=m, app=HOSTILE, start=t, nprocs=1, bandwidth_mib_s=bw,
         io_time_s=io, bytes=b)
    for i, (m, t, bw, io, b) in enumerate([
        ("2026-01", _t(3), 20.0, 10.0, 200 * MIB),
        ("2026-03", _t(5, 3), 18.0, 30.0, 540 * MIB),
        ("2026-03", _t(6, 3), 5.0, 12.0, 60 * MIB),
        ("2026-03", _t(7, 3), 19.0, 9.0, 171 * MIB),
    ])
]  # fmt: skip
# silver/bottleneck_tags of `small` (log_id, tag, job_month): alpha's runs a0, a1, a3, a4 and a
# hostile run's; x9 has no gold/app_runs row. alpha's most frequent: small_writes on 3 runs
# (a0, a1, a3), metadata_heavy on 2 (a1, a4; a4's twice), rank0_heavy on 1 (a3)
SMALL_RUN_TAGS = [
    ("a0", "small_writes", "2026-01"), ("a1", "small_writes", "2026-01"),
    ("a1", "metadata_heavy", "2026-01"), ("a3", "small_writes", "2026-01"),
    ("a3", "rank0_heavy", "2026-01"), ("a4", "metadata_heavy", "2026-02"),
    ("a4", "metadata_heavy", "2026-02"), ("h1", "stdio_heavy", "2026-03"),
    ("a5", "no_issue", "2026-02"), ("x9", "small_writes", "2026-01"),
]  # fmt: skip
WATCH_SCHEMAS = {
    "regressions": pa.schema(
        [
            ("app", STRING), ("start", STAMP), ("log_id", STRING), ("metric", STRING),
            ("value", DOUBLE), ("baseline", DOUBLE), ("change", DOUBLE), ("rule", STRING),
            ("threshold_name", STRING), ("threshold", DOUBLE), ("score", DOUBLE),
            ("since", STAMP), ("baseline_runs", LONG), ("baseline_first", STAMP),
            ("baseline_last", STAMP), ("fs", STRING), ("weather", pa.bool_()),
            ("weather_peers", LONG), ("weather_dropped", LONG),
        ]
    ),
    "app_runs": pa.schema(
        [
            ("log_id", STRING), ("job_month", STRING), ("app", STRING), ("exe", STRING),
            ("uid", LONG), ("nprocs", LONG), ("nprocs_bucket", STRING), ("fs", STRING),
            ("direction", STRING), ("layout", STRING), ("start", STAMP),
            ("bandwidth_mib_s", DOUBLE), ("io_time_s", DOUBLE), ("meta_time_share", DOUBLE),
            ("bytes", LONG),
        ]
    ),
}  # fmt: skip


def watch_tables(
    lake: Path, regressions=SMALL_REGRESSIONS, runs=SMALL_RUNS, tags=SMALL_RUN_TAGS
) -> None:
    """gold/regressions and gold/app_runs (the watch stage's tables, schemas/regressions.py and
    schemas/app_runs.py) from rows, laid out as the stage writes them (app_runs by job_month),
    and the runs' tags (silver/bottleneck_tags in its spec's columns, the others null)."""
    from deltalake import write_deltalake

    from schemas import TABLES

    tag_rows = [dict(zip(("log_id", "tag", "job_month"), t)) for t in tags]
    for layer, name, rows, parts in (
        ("gold", "regressions", regressions, None),
        ("gold", "app_runs", runs, ["job_month"]),
        ("silver", "bottleneck_tags", tag_rows, ["job_month"]),
    ):
        schema = WATCH_SCHEMAS.get(name) or pa.schema(
            [f.with_nullable(True) for f in TABLES[name].arrow_schema]
        )
        cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
        write_deltalake(
            str(Path(lake) / layer / name),
            pa.table(cols, schema=schema),
            partition_by=parts,
            mode="overwrite",
        )


CENTRE_APPS = [  # name, program, uid, runs per month, processes, hours per run, I/O share, MiB/s
    ("e3sm|1000|2048|/lus/eagle|write|shared", "e3sm.exe", 1000, 120, 2048, 3.0, 0.12, 2400.0),
    ("lammps|1001|512|/lus/eagle|write|fpp", "lmp_mpi", 1001, 300, 512, 1.5, 0.05, 900.0),
    ("nwchem|1002|128|/gpfs/alpine|read|shared", "nwchem", 1002, 200, 128, 2.0, 0.22, 350.0),
    ("warpx|1003|8192|/lus/eagle|write|shared", "warpx.3d", 1003, 20, 8192, 4.0, 0.08, 8000.0),
    ("hacc_io|1004|2048|/lus/eagle|write|fpp", "hacc_io", 1004, 60, 2048, 0.5, 0.45, 5200.0),
    ("vasp|1005|128|/home|read|fpp", "vasp_std", 1005, 500, 128, 1.0, 0.03, 120.0),
    ("cosmoflow|1006|32|/lus/grand|read|fpp", "python3", 1006, 400, 32, 2.0, 0.35, 600.0),
    ("h5bench|1007|512|/lus/eagle|write|shared", "h5bench_write", 1007, 80, 512, 0.3, 0.6, 1500.0),
    ("gromacs|1008|256|/gpfs/alpine|write|fpp", "gmx_mpi", 1008, 250, 256, 1.2, 0.02, 300.0),
    ("nek5000|1009|2048|/lus/grand|write|shared", "nek5000", 1009, 40, 2048, 2.5, 0.1, 3100.0),
    ("qmcpack|1001|1024|/lus/eagle|read|shared", "qmcpack", 1001, 90, 1024, 1.8, 0.07, 1100.0),
    ("openfoam|1010|64|/home|write|fpp", "simpleFoam", 1010, 150, 64, 3.5, 0.28, 80.0),
    ("ior|1011|128|/lus/eagle|write|shared", "ior", 1011, 30, 128, 0.1, 0.9, 4000.0),
    ("python-postproc|1012|1|/home|read|fpp", "python3", 1012, 800, 1, 0.2, 0.5, 40.0),
]  # fmt: skip
CENTRE_MONTHS = ["2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06"]
CENTRE_TAGS = {
    "small_writes": "IO02", "small_reads": "IO01", "metadata_heavy": "IO12",
    "no_collective_shared_writes": "IO29", "random_reads": "IO05", "rank0_heavy": "IO10",
    "single_stripe_shared": "IO14", "stdio_heavy": "IO13",
}  # fmt: skip
MOUNTS = [
    ("/lus/eagle", "lustre"),
    ("/lus/grand", "lustre"),
    ("/gpfs/alpine", "gpfs"),
    ("/home", "nfs"),
]


def centre(lake: Path, seed: int = 40, apps=CENTRE_APPS, months=CENTRE_MONTHS) -> Path:
    """A centre's marts: every application of `apps` over `months`, trends and noise from `seed`."""
    rng = random.Random(seed)
    lake = Path(lake)
    am, tc = [], []
    for app, exe, uid, runs, procs, hours, share, mibs in apps:
        drift = rng.uniform(-0.12, 0.15)  # the application's monthly trend in I/O share
        for k, month in enumerate(months):
            if rng.random() < 0.08:
                continue  # a month without runs
            n = max(1, int(runs * rng.uniform(0.6, 1.4)))
            core = n * procs * hours * rng.uniform(0.8, 1.2)
            io_share = min(0.95, max(0.005, share * (1 + drift) ** k * rng.uniform(0.85, 1.15)))
            io = core * io_share
            p50 = mibs * rng.uniform(0.8, 1.2) / (1 + drift) ** k
            moved = int(p50 * MIB * io * 3600 / procs / 20)
            write_share = 0.8 if "|write|" in app else 0.2
            tags = {t: int(n * rng.uniform(0.05, 0.7)) for t in rng.sample(sorted(CENTRE_TAGS), 3)}
            am.append(
                _app(
                    app,
                    month,
                    exe,
                    uid,
                    n,
                    core,
                    io,
                    suspect=int(n * 0.01 * rng.random() * 3),
                    read=int(moved * (1 - write_share)),
                    written=int(moved * write_share),
                    throughput_p10_mib_s=p50 * 0.4,
                    throughput_p50_mib_s=p50,
                    throughput_p90_mib_s=p50 * 1.7,
                    tags=tags,
                    regressions=int(rng.random() < 0.15) * rng.randint(1, 4),
                )
            )
            for tag, jobs in tags.items():
                frac = jobs / n
                speedup = rng.uniform(1.1, 3.0) if rng.random() < 0.6 else None
                tc.append(
                    dict(
                        month=month,
                        tag=tag,
                        code=CENTRE_TAGS[tag],
                        app=app,
                        uid=uid,
                        jobs=jobs,
                        io_core_hours=io * frac,
                        core_hours=core * frac,
                        recoverable_io_core_hours=io * frac * (1 - 1 / speedup) * 0.7
                        if speedup
                        else None,
                        recoverable_source="what_if" if speedup else None,
                    )
                )
    first = dt.date.fromisoformat(months[0] + "-01")
    last = dt.date.fromisoformat(months[-1] + "-28")
    days = [first + dt.timedelta(d) for d in range((last - first).days + 1)]
    fs, health = [], []
    for d in days:
        weekend = 0.5 if d.weekday() >= 5 else 1.0
        for j, (mount, kind) in enumerate(MOUNTS):
            scale = (
                (4.0, 2.0, 1.5, 0.3)[j]
                * weekend
                * rng.uniform(0.6, 1.4)
                * (1 + 0.004 * (d - first).days)
            )
            fs.append(
                dict(
                    day=d,
                    mount_point=mount,
                    fs_type=kind,
                    jobs=int(80 * scale),
                    bytes_read=int(3e12 * scale * rng.random()),
                    bytes_written=int(2e12 * scale * rng.random()),
                    reads=int(4e7 * scale),
                    writes=int(2e7 * scale),
                    opens=int((9e5 if kind == "nfs" else 2e5) * scale),
                    meta_time_s=(5e4 if kind == "nfs" else 8e3) * scale,
                    io_time_s=6e4 * scale,
                )
            )
        logs = int(900 * weekend * rng.uniform(0.7, 1.3))
        q = rng.choice([0, 0, 0, 1, 2, 5])
        partial = rng.choice([0, 1, 3])
        reasons = [
            r for r in [("truncated log", q - q // 3), ("not a Darshan log", q // 3)] if r[1]
        ]
        lagging = [("gold/app_runs", rng.choice([12, 40, 250])), ("silver/bottleneck_tags", 0)]
        health.append(
            dict(
                night=d,
                logs=logs,
                ok=logs - q - partial,
                partial=partial,
                quarantined=q,
                suspect=rng.choice([0, 0, 1]),
                quarantine_reasons=reasons,
                runs=1,
                failed_runs=int(rng.random() < 0.05),
                run_seconds=rng.uniform(600, 1200),
                lag=lagging if d > last - dt.timedelta(3) else [],
            )
        )
    drift = []
    for name, versions in (("iolake-bandwidth", ("1", "2")), ("iolake-job-bandwidth", ("1",))):
        for v in versions:
            for k, month in enumerate(months):
                if v == "2" and k < 3:
                    continue
                base = 1.9 if (v == "1" and name == "iolake-bandwidth") else 1.05
                ratio = base * (1 + 0.12 * k if v == "1" else 1) * rng.uniform(0.9, 1.1)
                drift.append(
                    dict(
                        model_name=name,
                        model_version=v,
                        month=month,
                        n=rng.randint(300, 2000),
                        median_ratio=ratio,
                        median_abs_log10_error=abs(math.log10(ratio)) + 0.05,
                        within_2x_share=max(0.05, min(0.98, 1.0 - abs(ratio - 1) * 0.35)),
                    )
                )
    for name, rows in (
        ("fleet_app_month", am),
        ("fleet_tag_cost", tc),
        ("fleet_fs_day", fs),
        ("fleet_health", health),
        ("fleet_drift", drift),
    ):
        write(lake, name, rows)
    return lake


def jobs_table(lake: Path, log_ids: list[str]) -> None:
    """bronze/jobs rows for `log_ids` (one process, 2026-01-20, 60 s; the schema of
    schemas/jobs.py), so that `iolake report` can build those jobs' pages from this lake."""
    from deltalake import write_deltalake

    from schemas import TABLES

    spec = TABLES["jobs"]
    start = int(_t(20).timestamp())
    rows = [
        dict(log_id=i, job_month="2026-01", jobid=1000 + k, uid=100, nprocs=1,
             start_time_sec=start, end_time_sec=start + 60, run_time_s=60.0,
             exe=f"/bin/app-{i}", metadata=[], log_ver="3.41", mounts=[])
        for k, i in enumerate(log_ids)
    ]  # fmt: skip
    cols = {f.name: [r.get(f.name) for r in rows] for f in spec.arrow_schema}
    write_deltalake(
        spec.path(str(lake)),
        pa.table(cols, schema=spec.arrow_schema),
        partition_by=list(spec.partition_by),
        mode="overwrite",
    )
