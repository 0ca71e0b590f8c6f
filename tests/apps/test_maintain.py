"""`iolake maintain` on a small lake of many small files (one ingest per log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.maintain import disk_files, run
from iolake.cli import main
from iolake.config import ConfigError, load_config
from schemas import BRONZE
from tests.support.data import shared_path

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`

# three small real logs of one month (2024-12): one ingest each leaves several files per partition
DLIO = "darshan-logs/darshan_logs/dlio_logs"
LOGS = [
    "snyder_python3_id3116902-2110365_12-19-66957-188958432683465822_1.darshan",
    "snyder_python3_id3116902-2110366_12-19-66957-4077632997277538683_1.darshan",
    "snyder_python3_id3116902-2110367_12-19-66957-18280558790378981665_1.darshan",
]
TABLES = ["posix", "jobs", "logs"]


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory) -> str:
    from jobs.ingest import run as ingest

    lake = str(tmp_path_factory.mktemp("maintain") / "lake")
    # gates off: they are not what is tested here, and they cost a Spark job per expectation
    conf = load_config("local", overrides={"lake": {"root": lake}, "gates": {"enabled": False}})
    root = shared_path("darshan", DLIO)
    for name in LOGS:  # one commit (and at least one file) per log and table
        ingest(spark, conf, [str(root / name)], echo=lambda *_: None)
    return lake


def _snapshot(spark, path: str):
    df = spark.read.format("delta").load(path)
    return df, df.count()


def _comparable(df):
    """Set operations refuse map columns: compare them as sorted (key, value) arrays."""
    import pyspark.sql.functions as F
    from pyspark.sql import types as T

    return df.select(
        *[
            F.array_sort(F.map_entries(f.name)).alias(f.name)
            if isinstance(f.dataType, T.MapType)
            else F.col(f.name)
            for f in df.schema.fields
        ]
    )


def _same(spark, a, path: str) -> bool:
    a, b = _comparable(a), _comparable(spark.read.format("delta").load(path))
    return a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


def test_short_retention_is_a_config_error_naming_file_and_key(tmp_path, capsys):
    with pytest.raises(
        ConfigError, match=r"command line: maintain\.vacuum_retention_hours: 0 h is below"
    ):
        load_config("local", overrides={"maintain": {"vacuum_retention_hours": 0}})
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    base = (Path(__file__).resolve().parents[2] / "conf" / "base.yaml").read_text()
    (conf_dir / "base.yaml").write_text(base)
    (conf_dir / "local.yaml").write_text("maintain:\n  vacuum_retention_hours: 24\n")
    assert main(["maintain", "--conf-dir", str(conf_dir), "--lake", str(tmp_path / "lake")]) == 2
    err = capsys.readouterr().err
    assert f"{conf_dir / 'local.yaml'}: maintain.vacuum_retention_hours" in err
    assert "maintain.allow_short_retention" in err


def test_unknown_table_is_a_usage_error(tmp_path, capsys):
    assert main(["maintain", "--table", "posixx", "--lake", str(tmp_path / "lake")]) == 2
    assert "unknown table 'posixx'" in capsys.readouterr().err


def test_dry_run_changes_nothing(spark, lake, capsys):
    path = BRONZE["posix"].path(lake)
    before, _ = _snapshot(spark, path)
    v0 = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count()
    files0 = disk_files(path)
    assert main(["maintain", "--dry-run", "--table", "posix", "--lake", lake]) == 0
    out = capsys.readouterr().out
    assert "VACUUM RETAIN 168 HOURS DRY RUN" in out and "OPTIMIZE ZORDER" not in out
    assert spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count() == v0
    assert disk_files(path) == files0


def test_optimize_zorder_then_vacuum(spark, lake, capsys):
    before = {}
    for t in TABLES:
        path = BRONZE[t].path(lake)
        df, n = _snapshot(spark, path)
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
        before[t] = (df.localCheckpoint(), n, detail.numFiles)
    assert before["posix"][2] >= len(LOGS)  # many small files to start with

    # default retention (168 h): compaction happens, the replaced files stay on storage
    conf = load_config("local", overrides={"lake": {"root": lake}})
    reports = {r.table: r for r in run(spark, conf, TABLES, echo=print)}
    out = capsys.readouterr().out
    assert "[maintain] bronze/posix: OPTIMIZE ZORDER BY (log_id, record_id)" in out
    assert set(reports) == {f"bronze/{t}" for t in TABLES}
    for t in TABLES:
        r, (df, n, files) = reports[f"bronze/{t}"], before[t]
        path = BRONZE[t].path(lake)
        assert r.files_before == files and r.rows == n
        assert spark.read.format("delta").load(path).count() == n
        assert r.files_after <= files
        assert r.vacuum_files == 0 and r.disk_files_after >= r.files_after
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
        assert (r.version, r.files_after, r.bytes) == (
            spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()[0].version,
            detail.numFiles,
            detail.sizeInBytes,
        )
        assert _same(spark, df, path)
    for t in TABLES:  # one partition (2024-12) or none: every table had one file per ingest
        assert reports[f"bronze/{t}"].files_after < reports[f"bronze/{t}"].files_before, t
    posix = reports["bronze/posix"]
    assert (
        posix.partitions
        == spark.read.format("delta")
        .load(BRONZE["posix"].path(lake))
        .select("job_month")
        .distinct()
        .count()
    )
    hist = spark.sql(f"DESCRIBE HISTORY delta.`{BRONZE['posix'].path(lake)}`").collect()
    opt = [h for h in hist if h.operation == "OPTIMIZE"]
    assert opt and json.loads(opt[0].operationParameters["zOrderBy"]) == ["log_id", "record_id"]
    assert json.loads(opt[0].userMetadata)["stage"] == "maintain"
    jobs_opt = [
        h
        for h in spark.sql(f"DESCRIBE HISTORY delta.`{BRONZE['jobs'].path(lake)}`").collect()
        if h.operation == "OPTIMIZE"
    ]
    assert jobs_opt and json.loads(jobs_opt[0].operationParameters["zOrderBy"]) == [
        "log_id",
        "jobid",
        "exe",
    ]

    # retention 0 through the explicit override: unreferenced files go, the tables read the same
    short = load_config(
        "local",
        overrides={
            "lake": {"root": lake},
            "maintain": {"vacuum_retention_hours": 0, "allow_short_retention": True},
        },
    )
    reports = {r.table: r for r in run(spark, short, TABLES, echo=print)}
    out = capsys.readouterr().out
    assert "WARNING retention 0 h is below Delta's safety limit" in out
    for t in TABLES:
        r, (df, n, _) = reports[f"bronze/{t}"], before[t]
        path = BRONZE[t].path(lake)
        assert r.disk_files_after == r.files_after == disk_files(path)
        assert r.rows == n and _same(spark, df, path)
    assert reports["bronze/posix"].vacuum_files > 0
    # the check is back on for everyone else
    assert spark.conf.get("spark.databricks.delta.retentionDurationCheck.enabled") == "true"


def test_the_ledger_is_sorted_by_log_id_so_one_look_up_reads_one_row_group(spark, lake, capsys):
    """bronze/logs (`sorted_by` log_id) is rewritten sorted through delta-rs, not Z-ordered by
    Spark: Spark reads the same rows after it, the commit carries the run's metadata, and each
    log's row lies in one row group whose min/max statistics exclude every other log."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    from iolake.lake.layout import sort_rewrite

    path = BRONZE["logs"].path(lake)
    df, n = _snapshot(spark, path)
    df = df.localCheckpoint()
    conf = load_config("local", overrides={"lake": {"root": lake}})
    (report,) = run(spark, conf, ["logs"], echo=print)
    out = capsys.readouterr().out
    assert "[maintain] bronze/logs: sorted by log_id in row groups of 8,192 rows (delta-rs)" in out
    assert report.rows == n == len(LOGS) and report.files_after == 1 and _same(spark, df, path)
    hist = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    sort = min((h for h in hist if h.version > report.version_before), key=lambda h: h.version)
    assert sort.operation == "OPTIMIZE" and json.loads(sort.userMetadata)["stage"] == "maintain"

    sort_rewrite(path, "log_id", row_group_rows=1)  # one row per group: the pruning is visible
    assert _same(spark, df, path)
    ids = sorted(r.log_id for r in df.select("log_id").collect())
    (live,) = DeltaTable(path).file_uris()
    meta = pq.ParquetFile(live).metadata
    col = meta.schema.names.index("log_id")
    ranges = [
        (meta.row_group(g).column(col).statistics.min, meta.row_group(g).column(col).statistics.max)
        for g in range(meta.num_row_groups)
    ]
    assert ranges == [(i, i) for i in ids]  # in log_id order, one log per row group
    for i in ids:
        assert sum(lo <= i <= hi for lo, hi in ranges) == 1


def test_declared_table_properties_are_set_on_an_older_table(spark, tmp_path, capsys):
    """A table created before its spec declared a property (io_ops's stats columns) gets it."""
    import dataclasses

    from iolake.lake import ensure_table
    from schemas._spec import DEFAULT_PROPERTIES

    lake = str(tmp_path / "lake")
    spec = BRONZE["io_ops"]
    key = "delta.dataSkippingStatsColumns"
    assert key in spec.properties
    ensure_table(
        spark, dataclasses.replace(spec, properties=dict(DEFAULT_PROPERTIES)), lake
    )  # the older table

    def props():
        return dict(spark.sql(f"DESCRIBE DETAIL delta.`{spec.path(lake)}`").first()["properties"])

    assert key not in props()
    conf = load_config("local", overrides={"lake": {"root": lake}})
    (dry,) = run(spark, conf, ["io_ops"], dry_run=True, echo=print)
    assert dry.properties_set == {key: spec.properties[key]} and key not in props()
    assert "would set declared table properties" in capsys.readouterr().out
    (done,) = run(spark, conf, ["io_ops"], echo=print)
    assert done.properties_set == {key: spec.properties[key]}
    assert props()[key] == spec.properties[key]
    (again,) = run(spark, conf, ["io_ops"], echo=print)
    assert again.properties_set == {}


def test_maintain_never_says_an_older_ledger_has_its_jobids():
    """bronze/logs declares `iolake.ledger.jobidFilled`, but only the ingest that fills the
    jobids may set it (decision 0042): maintain's property sync leaves `iolake.` keys alone."""
    from apps.maintain import property_drift
    from schemas._spec import DEFAULT_PROPERTIES
    from schemas.logs import JOBID_FILLED

    spec = BRONZE["logs"]
    assert spec.properties[JOBID_FILLED] == "true"
    assert property_drift(spec, dict(DEFAULT_PROPERTIES)) == {}
    older = {k: v for k, v in DEFAULT_PROPERTIES.items() if k != "delta.appendOnly"}
    assert property_drift(spec, older) == {"delta.appendOnly": "false"}
