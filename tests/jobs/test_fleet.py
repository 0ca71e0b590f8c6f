"""The fleet stage (jobs/fleet.py) on the first run's lake (`iolake run` on the wheel's sample logs,
which ends with the fleet stage): every figure of the five marts recomputed here by independent
DuckDB SQL over the bronze/silver/gold Delta tables (read with delta-rs, not with
features/fleet.py) and found equal; the tag cost ledger reconciles; a re-run with no new logs
rewrites nothing; a log the stage has not counted recomputes its months only."""

from __future__ import annotations

import datetime as dt
import math
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

pytestmark = pytest.mark.slow  # the first run's lake: a whole run with training

MARTS = ("fleet_app_month", "fleet_tag_cost", "fleet_fs_day", "fleet_health", "fleet_drift")
SOURCES = (
    "bronze/logs",
    "silver/job_features",
    "silver/file_features",
    "silver/bottleneck_tags",
    "silver/covering_sets",
    "gold/app_runs",
    "gold/regressions",
    "gold/tuning_advice",
    "gold/job_bandwidth_predictions",
    "gold/bandwidth_predictions",
    "ops/runs",
    "ops/empty_logs",
)


@pytest.fixture(scope="module")
def first_run(spark, tmp_path_factory):
    from tests.support.lakes import first_run_lake

    return first_run_lake(tmp_path_factory)


def _arrow(lake: Path, table: str):
    from deltalake import DeltaTable

    return DeltaTable(str(lake / table)).to_pyarrow_table()


def _db(lake: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every source table and mart as a view named like `silver_job_features`."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for t in (*SOURCES, *(f"gold/{m}" for m in MARTS)):
        if (lake / t / "_delta_log").exists():
            con.register(t.replace("/", "_"), _arrow(lake, t))
    return con


def _rows(con, sql: str, key) -> dict:
    rel = con.sql(sql)
    cols = rel.columns
    return {tuple(r[cols.index(k)] for k in key): dict(zip(cols, r)) for r in rel.fetchall()}


def _same(got: dict, want: dict, cols) -> None:
    assert set(got) == set(want)
    assert want, "the oracle found no rows: nothing compared"
    for k in want:
        for c in cols:
            a, b = got[k][c], want[k][c]
            if isinstance(b, float) and b is not None and a is not None:
                assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (k, c)
            elif isinstance(a, dict) or isinstance(b, dict):
                assert dict(a or {}) == dict(b or {}), (k, c)
            else:
                assert a == b, (k, c, a, b)


# the jobs the marts count: those with an application key in gold/app_runs, and the suspect jobs
# (which have no app_runs row) with the watch's key built here by hand from conf watch.key_parts'
# documented parts (schemas/app_runs.py): exe|uid|process-count bucket|fs|direction|layout
JOBS_SQL = """
with fs as (  -- the mount of the job's file with the most bytes moved; ties: the smaller mount
  select log_id, mount_point as fs from (
    select log_id, mount_point, row_number() over (
      partition by log_id order by b desc, mount_point) as r
    from (select log_id, mount_point,
                 sum(coalesce(bytes_read, 0) + coalesce(bytes_written, 0)) as b
          from silver_file_features where mount_point is not null group by all)
    where b > 0)
  where r = 1),
sk as (
  select jf.log_id, concat_ws('|', coalesce(jf.program, '-'), coalesce(cast(jf.uid as varchar), '-'),
    coalesce(BUCKET, '-'), coalesce(fs.fs, '-'),
    case when jf.bytes_read > jf.bytes_written then 'read' else 'write' end,
    case when jf.shared_file_count > 0 then 'shared' else 'fpp' end) as app
  from silver_job_features jf left join fs using (log_id)
  where jf.suspect and jf.start_time is not null),
keyed as (
  select log_id, app from gold_app_runs
  union all select log_id, app from sk where log_id not in (select log_id from gold_app_runs))
select jf.log_id, jf.job_month as month, k.app, jf.program, jf.uid, jf.suspect,
  jf.nprocs * jf.run_time_s / 3600.0 as ch,
  -- I/O seconds cut at nprocs * run time when that is > 0 (decision 0032)
  case when not jf.suspect then (case
       when jf.nprocs * jf.run_time_s > 0 and coalesce(jf.read_time_s, 0)
            + coalesce(jf.write_time_s, 0) + coalesce(jf.meta_time_s, 0)
            > jf.nprocs * jf.run_time_s then jf.nprocs * jf.run_time_s
       else coalesce(jf.read_time_s, 0) + coalesce(jf.write_time_s, 0)
            + coalesce(jf.meta_time_s, 0) end) / 3600.0 end as ioch,
  case when not jf.suspect then jf.bytes_read end as br,
  case when not jf.suspect then jf.bytes_written end as bw,
  case when not jf.suspect then jf.throughput_mib_s end as tp
from silver_job_features jf join keyed k using (log_id)
"""
DEFAULT_KEY = ["exe", "uid", "nprocs_bucket", "fs", "direction", "layout"]


def _bucket_sql(edges: list[int]) -> str:
    """conf watch.nprocs_buckets as a CASE: "lo-hi" (hi = next edge - 1), "lo+" past the last."""
    edges = sorted(edges)
    arms = [
        f"when jf.nprocs >= {lo} and jf.nprocs < {hi} then '{lo}-{hi - 1}'"
        for lo, hi in zip(edges, edges[1:])
    ]
    arms.append(f"when jf.nprocs >= {edges[-1]} then '{edges[-1]}+'")
    return "(case " + " ".join(arms) + " end)"


def _jobs(con):
    from iolake.config import load_config

    watch = load_config("local").watch
    assert list(watch.key_parts) == DEFAULT_KEY, "the oracle builds the default key only"
    jobs = con.sql(JOBS_SQL.replace("BUCKET", _bucket_sql(watch.nprocs_buckets))).df()
    con.register("jobs", jobs)
    return jobs


def test_app_month_equals_independent_sql(first_run):
    from iolake.config import load_config

    lake = Path(first_run["lake"])
    con = _db(lake)
    jobs = _jobs(con)
    has_user = "uid" in load_config("local").watch.key_parts
    want = _rows(
        con,
        f"""
        with tags as (
          select j.app, j.month, t.tag, count(distinct t.log_id) as n from jobs j
          join silver_bottleneck_tags t using (log_id) where t.tag <> 'no_issue'
          group by all),
        tagmap as (select app, month, map(list(tag), list(n)) as tag_runs from tags group by all),
        regs as (select app, strftime(start, '%Y-%m') as month, count(*) as regressions
                 from gold_regressions group by all)
        select j.app, j.month, min(program) as exe_name,
          {"min(uid)" if has_user else "null"} as uid, count(*) as runs,
          count(*) filter (where suspect) as suspect_runs, sum(ch) as core_hours,
          coalesce(sum(ioch), 0) as io_core_hours,
          case when sum(ch) > 0 then coalesce(sum(ioch), 0) / sum(ch) end as io_share,
          coalesce(sum(br), 0) as bytes_read, coalesce(sum(bw), 0) as bytes_written,
          quantile_cont(tp, 0.1) as throughput_p10_mib_s,
          quantile_cont(tp, 0.5) as throughput_p50_mib_s,
          quantile_cont(tp, 0.9) as throughput_p90_mib_s,
          any_value(tm.tag_runs) as tag_runs, coalesce(any_value(r.regressions), 0) as regressions
        from jobs j left join tagmap tm using (app, month) left join regs r using (app, month)
        group by j.app, j.month
        """,
        ("app", "month"),
    )
    got = _rows(con, "select * from gold_fleet_app_month", ("app", "month"))
    _same(got, want, [c for c in next(iter(want.values())) if c not in ("app", "month")])
    assert sum(r["runs"] for r in got.values()) == len(jobs)
    # no month spends more than its core-hours in I/O (the cut of decision 0032)
    assert all(r["io_share"] is None or r["io_share"] <= 1 + 1e-12 for r in got.values())


def test_tag_cost_equals_independent_sql_and_reconciles(first_run):
    from schemas.bottleneck_tags import CATALOG

    lake = Path(first_run["lake"])
    con = _db(lake)
    _jobs(con)
    con.register(
        "codes",
        pa.table({"tag": list(CATALOG), "code": [t.code for t in CATALOG.values()]}),
    )
    want = _rows(
        con,
        """
        with m as (select log_id, max(predicted_speedup) as s from gold_tuning_advice
                   where kind = 'what_if' and predicted_speedup >= 1 group by log_id),
        p as (select log_id, max(precedent_speedup) as s from gold_tuning_advice
              where precedent_speedup >= 1 and log_id not in (select log_id from m)
              group by log_id),
        s as (select log_id, s, 'what_if' as src from m
              union all select log_id, s, 'precedent' as src from p),
        fired as (select distinct log_id, tag from silver_bottleneck_tags where tag <> 'no_issue')
        select j.month, f.tag, c.code, j.app, j.uid, count(*) as jobs,
          coalesce(sum(ioch), 0) as io_core_hours, sum(ch) as core_hours,
          sum(ioch * (1 - 1 / s.s)) as recoverable_io_core_hours,
          case count(distinct case when ioch * (1 - 1 / s.s) is not null then s.src end)
            when 0 then null when 2 then 'what_if+precedent'
            else max(case when ioch * (1 - 1 / s.s) is not null then s.src end)
          end as recoverable_source
        from jobs j join fired f using (log_id) left join s using (log_id)
        left join codes c using (tag)
        group by all
        """,
        ("month", "tag", "app", "uid"),
    )
    got = _rows(con, "select * from gold_fleet_tag_cost", ("month", "tag", "app", "uid"))
    _same(
        got,
        want,
        [
            "code",
            "jobs",
            "io_core_hours",
            "core_hours",
            "recoverable_io_core_hours",
            "recoverable_source",
        ],
    )
    # the ledger reconciles: tags overlap (a job counts in each tag that fired on it), so per
    # (month, app, uid) the tags' job counts sum to at least the distinct tagged jobs, and no tag's
    # I/O core-hours exceed the (month, app, uid) total of its jobs
    check = con.sql(
        """
        with tot as (select month, app, uid, coalesce(sum(ioch), 0) as ioch from jobs group by all),
        tagged as (select j.month, j.app, j.uid, count(distinct j.log_id) as n from jobs j
                   join silver_bottleneck_tags t using (log_id) where t.tag <> 'no_issue'
                   group by all),
        sums as (select month, app, uid, sum(jobs) as jobs, max(io_core_hours) as top
                 from gold_fleet_tag_cost group by all)
        select s.jobs, tg.n, s.top, tot.ioch from sums s
        join tagged tg on s.month = tg.month and s.app = tg.app and s.uid is not distinct from tg.uid
        join tot on s.month = tot.month and s.app = tot.app and s.uid is not distinct from tot.uid
        """
    ).fetchall()
    assert check
    for jobs_sum, distinct, top, total in check:
        assert jobs_sum >= distinct and top <= total * (1 + 1e-12)
    rec = con.sql(
        "select count(*) from gold_fleet_tag_cost where recoverable_io_core_hours > io_core_hours"
    ).fetchall()[0]
    assert rec[0] == 0


def test_fs_day_equals_independent_sql(first_run):
    lake = Path(first_run["lake"])
    con = _db(lake)
    want = _rows(
        con,
        """
        select cast(jf.start_time as date) as day, coalesce(ff.mount_point, '(none)') as mount_point,
          max(ff.fs_type) as fs_type, count(distinct ff.log_id) as jobs,
          sum(ff.bytes_read) as bytes_read, sum(ff.bytes_written) as bytes_written,
          sum(ff.reads) as reads, sum(ff.writes) as writes, sum(ff.opens) as opens,
          sum(coalesce(ff.meta_time_s, 0)) as meta_time_s,
          sum(coalesce(ff.read_time_s, 0) + coalesce(ff.write_time_s, 0)
              + coalesce(ff.meta_time_s, 0)) as io_time_s,
          strftime(cast(jf.start_time as date), '%Y-%m') as month
        from silver_file_features ff join silver_job_features jf using (log_id)
        where jf.start_time is not null and not jf.suspect
        group by all
        """,
        ("day", "mount_point"),
    )
    got = _rows(con, "select * from gold_fleet_fs_day", ("day", "mount_point"))
    _same(
        got,
        want,
        [
            "fs_type",
            "jobs",
            "bytes_read",
            "bytes_written",
            "reads",
            "writes",
            "opens",
            "meta_time_s",
            "io_time_s",
            "month",
        ],
    )


def test_health_equals_independent_sql(first_run):
    lake = Path(first_run["lake"])
    con = _db(lake)
    lag_tables = {
        "silver/job_features": "features",
        "silver/covering_sets": "covering",
        "silver/bottleneck_tags": "tags",
        "gold/app_runs": "watch",
    }
    empty = (
        "(select log_id, stage, done_table from ops_empty_logs)"
        if (lake / "ops/empty_logs/_delta_log").exists()
        else "(select null::varchar as log_id, null::varchar as stage, null::varchar as done_table where false)"
    )
    lag_cols = ", ".join(
        f"""count(*) filter (where l.status in ('ok', 'partial') and l.log_id not in (
              select log_id from {t.replace("/", "_")} union all
              select log_id from {empty} where stage = '{s}' and done_table = '{t}')) as "{t}" """
        for t, s in lag_tables.items()
    )
    base = con.sql(
        f"""
        select cast(l.ingested_at as date) as night, count(*) as logs,
          count(*) filter (where status = 'ok') as ok,
          count(*) filter (where status = 'partial') as partial,
          count(*) filter (where status = 'quarantined') as quarantined,
          count(*) filter (where l.log_id in (select log_id from silver_job_features where suspect))
            as suspect,
          {lag_cols}
        from bronze_logs l group by all
        """
    ).df()
    runs = con.sql("select cast(started as date) as night, status, finished from ops_runs").df()
    got = _rows(con, "select * from gold_fleet_health", ("night",))
    assert set(got) == {(n.date() if hasattr(n, "date") else n,) for n in base.night}
    for _, b in base.iterrows():
        night = b.night.date() if hasattr(b.night, "date") else b.night
        g = got[(night,)]
        for c in ("logs", "ok", "partial", "quarantined", "suspect"):
            assert g[c] == b[c], c
        assert dict(g["lag"]) == {t: int(b[t]) for t in lag_tables}
        # ops/runs as the stage saw it: the runs that finished before it (the run that built the
        # marts is recorded in ops/runs after them)
        seen = runs[(runs.night == b.night) & (runs.finished < g["updated_at"])]
        assert g["runs"] == len(seen)
        assert g["failed_runs"] == int((seen.status != "succeeded").sum())
        # quarantine reasons: none in the sample logs
        assert dict(g["quarantine_reasons"]) == {}
        assert g["month"] == str(night)[:7]


def test_drift_equals_independent_sql(first_run):
    lake = Path(first_run["lake"])
    con = _db(lake)
    want = _rows(
        con,
        """
        with p as (
          select model_name, model_version, job_month as month,
                 predicted_throughput_mib_s / throughput_mib_s as r
          from gold_job_bandwidth_predictions
          where throughput_mib_s > 0 and predicted_throughput_mib_s > 0
          union all
          select model_name, model_version, job_month,
                 predicted_bandwidth_mib_s / bandwidth_mib_s
          from gold_bandwidth_predictions
          where bandwidth_mib_s > 0 and predicted_bandwidth_mib_s > 0)
        select model_name, model_version, month, count(*) as n, quantile_cont(r, 0.5) as median_ratio,
          quantile_cont(abs(log10(r)), 0.5) as median_abs_log10_error,
          avg(case when r between 0.5 and 2 then 1.0 else 0.0 end) as within_2x_share
        from p group by all
        """,
        ("model_name", "model_version", "month"),
    )
    got = _rows(con, "select * from gold_fleet_drift", ("model_name", "model_version", "month"))
    _same(got, want, ["n", "median_ratio", "median_abs_log10_error", "within_2x_share"])
    assert all(not math.isnan(r["median_ratio"]) for r in got.values())


@pytest.fixture(scope="module")
def copy_lake(first_run, tmp_path_factory):
    """The first run's lake copied (the stage runs on the copy; the other tests read the original)."""
    dest = tmp_path_factory.mktemp("fleet") / "lake"
    shutil.copytree(first_run["lake"], dest)
    return dest


def _versions(lake: Path) -> dict:
    from deltalake import DeltaTable

    return {m: DeltaTable(str(lake / "gold" / m)).version() for m in MARTS}


def _append(spark, lake: Path, table: str, rows: list[dict]) -> None:
    from pyspark.sql.types import MapType

    from schemas import TABLES

    spec = TABLES[table.split("/")[1]]
    maps = [f.name for f in spec.struct.fields if isinstance(f.dataType, MapType)]
    rows = [{**r, **{m: dict(r[m] or []) for m in maps}} for r in rows]  # Arrow gives maps as pairs
    df = spark.createDataFrame(rows, schema=spec.struct)
    df.write.format("delta").mode("append").save(str(lake / table))


def _key(row: dict) -> list:
    return sorted((k, str(v)) for k, v in row.items())


# a recomputed row's columns that may change: its updated_at, and health's runs, which now also
# count the first run itself (recorded in ops/runs after it built the marts)
MOVING = {"updated_at", "runs", "failed_runs", "run_seconds"}


def _stable(row: dict) -> list:
    return sorted((k, str(v)) for k, v in row.items() if k not in MOVING)


def test_rerun_without_new_logs_rewrites_nothing_and_a_new_log_only_its_months(spark, copy_lake):
    from delta.tables import DeltaTable as SparkDelta

    from iolake.config import load_config
    from jobs import fleet

    conf = load_config("local", overrides={"lake": {"root": str(copy_lake)}})
    before = _versions(copy_lake)
    lines: list[str] = []
    s = fleet.run(spark, conf, echo=lines.append)
    assert s["logs"] == 0 and "[fleet] no new logs" in lines
    assert _versions(copy_lake) == before

    # a log the stage has not counted (its ops/fleet_done row deleted) comes back as new: its month
    # is recomputed (and, for fleet_health, its ingest night and the newest night the table holds),
    # every other month (night) keeps its rows and updated_at
    rows = _arrow(copy_lake, "ops/fleet_done").to_pylist()
    months = sorted({r["job_month"] for r in rows})
    assert len(months) > 1, "the sample logs span several months"
    log = next(r for r in rows if r["job_month"] == months[0])
    ledger = _arrow(copy_lake, "bronze/logs").to_pylist()
    night = next(r["ingested_at"] for r in ledger if r["log_id"] == log["log_id"]).date()
    health = _arrow(copy_lake, "gold/fleet_health").to_pylist()
    nights = {night, max(r["night"] for r in health)}
    # a night earlier than any the ledger has, in the same month where the calendar allows: a
    # per-month replace would drop its row (no log of the ledger is of that night), a per-night
    # replace keeps it
    earlier = min(nights) - dt.timedelta(days=1 if min(nights).day > 1 else 0)
    if earlier not in nights:
        fake = dict(next(r for r in health if r["night"] == min(nights)))
        fake.update(night=earlier, month=f"{earlier:%Y-%m}")
        _append(spark, copy_lake, "gold/fleet_health", [fake])
    old = {m: _arrow(copy_lake, f"gold/{m}").to_pylist() for m in MARTS}
    SparkDelta.forPath(spark, str(copy_lake / "ops/fleet_done")).delete(
        f"log_id = '{log['log_id']}'"
    )
    lines.clear()
    s = fleet.run(spark, conf, echo=lines.append)
    assert s["logs"] == 1 and s["months"] == 1
    new = {m: _arrow(copy_lake, f"gold/{m}").to_pylist() for m in MARTS}

    def redone(m: str, r: dict) -> bool:
        return r["night"] in nights if m == "fleet_health" else r["month"] == log["job_month"]

    for m in MARTS:
        keep_old = [r for r in old[m] if not redone(m, r)]
        keep_new = [r for r in new[m] if not redone(m, r)]
        assert sorted(map(_key, keep_new)) == sorted(map(_key, keep_old)), m
        redone_old = [r for r in old[m] if redone(m, r)]
        redone_new = [r for r in new[m] if redone(m, r)]
        assert sorted(map(_stable, redone_new)) == sorted(map(_stable, redone_old)), m
        if redone_new:
            assert all(r["updated_at"] > max(o["updated_at"] for o in old[m]) for r in redone_new)
    if earlier not in nights:
        assert any(r["night"] == earlier for r in new["fleet_health"]), "an untouched night kept"
    assert _versions(copy_lake) != before
