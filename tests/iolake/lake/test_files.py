"""Ingest's staged Parquet files committed as they are (`iolake.lake.files`), on a real Delta table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as T

from iolake.config import load_config
from iolake.lake.files import STATS_KEY, arrow_stats, month_of
from iolake.lake.writer import write
from schemas import Expectation, TableSpec

STRUCT = T.StructType(
    [
        T.StructField("log_id", T.StringType(), False),
        T.StructField("job_month", T.StringType(), False),
        T.StructField("x", T.LongType(), True),
        T.StructField("t", T.DoubleType(), True),
    ]
)
SPEC = TableSpec(
    "probe",
    "bronze",
    STRUCT,
    keys=("log_id", "x"),
    expectations=(Expectation("between", "x", {"min": 0}),),
)
ARROW = pa.schema(
    [
        ("log_id", pa.string(), False),
        ("job_month", pa.string(), False),
        ("x", pa.int64()),
        ("t", pa.float64()),
    ]
)


def _stage(folder: Path, name: str, rows: list[tuple]) -> str:
    """One staged file as a decode task writes it: under job_month=<M>/, its statistics in the footer."""
    month = rows[0][1]
    t = pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in rows], schema=ARROW)
    path = folder / "probe" / f"job_month={month}" / f"{name}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        t.replace_schema_metadata({STATS_KEY: arrow_stats(t, ["log_id", "x", "t"]).encode()}), path
    )
    return str(path)


def _commit(spark, conf, files: list[str]):
    rows = spark.read.schema(STRUCT).parquet(*files)
    ids = spark.createDataFrame(
        [(r.log_id,) for r in rows.select("log_id").distinct().collect()], "log_id string"
    )
    said = []
    write(spark, conf, SPEC, rows, mode="files", files=files, log_ids=ids, echo=said.append)
    return said[0]


def _table(spark, lake: Path):
    df = spark.read.format("delta").load(SPEC.path(str(lake)))
    return sorted((r.log_id, r.job_month, r.x) for r in df.collect())


def _history(lake: Path) -> list[dict]:
    logs = sorted(Path(SPEC.path(str(lake)), "_delta_log").glob("*.json"))
    return [json.loads(line) for f in logs for line in f.read_text().splitlines() if line.strip()]


def test_staged_files_become_the_tables_files_once_and_a_held_log_falls_back_to_merge(
    spark, tmp_path
):
    lake = tmp_path / "lake"
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    staging = tmp_path / "staging"
    first = [
        _stage(staging, "a", [("a", "2026-01", 1, 0.5), ("a", "2026-01", 2, 1.5)]),
        _stage(staging, "b", [("b", "2026-02", 3, 2.0)]),
    ]
    said = _commit(spark, conf, first)
    assert "add 2 files" in said
    assert _table(spark, lake) == [("a", "2026-01", 1), ("a", "2026-01", 2), ("b", "2026-02", 3)]
    assert not any(Path(f).exists() for f in first)  # moved, not copied
    adds = [a["add"] for a in _history(lake) if "add" in a]
    assert sorted(a["partitionValues"]["job_month"] for a in adds) == ["2026-01", "2026-02"]
    stats = {a["partitionValues"]["job_month"]: json.loads(a["stats"]) for a in adds}
    assert stats["2026-01"]["numRecords"] == 2 and stats["2026-01"]["minValues"]["x"] == 1
    assert stats["2026-01"]["maxValues"]["t"] == 1.5 and stats["2026-02"]["nullCount"]["x"] == 0

    # a re-run after a kill between this table's commit and the ledger's: log a is here already
    again = [
        _stage(staging, "a2", [("a", "2026-01", 1, 0.5), ("a", "2026-01", 2, 1.5)]),
        _stage(staging, "c", [("c", "2026-01", 4, None)]),
    ]
    said = _commit(spark, conf, again)
    assert "merge (the table held some of these logs)" in said
    assert _table(spark, lake) == [
        ("a", "2026-01", 1),
        ("a", "2026-01", 2),
        ("b", "2026-02", 3),
        ("c", "2026-01", 4),
    ]
    ops = [a["commitInfo"]["operation"] for a in _history(lake) if "commitInfo" in a]
    assert ops[-2:] == ["WRITE", "MERGE"]
    referenced = {a["add"]["path"] for a in _history(lake) if "add" in a}
    on_disk = {
        str(p.relative_to(SPEC.path(str(lake))))
        for p in Path(SPEC.path(str(lake))).rglob("*.parquet")
    }
    assert on_disk == referenced  # the fallback's moved files were removed, nothing orphaned


def test_a_tables_file_count_comes_from_its_checksum_without_a_spark_job(spark, tmp_path):
    """Before it looks for the batch's logs in a table, the commit asks whether the table holds any
    file: from the version's `.crc`, which Delta writes after each commit, with no Spark job; from
    the snapshot's state (a job) when the `.crc` is gone. Both give the files the log adds."""
    from iolake.lake.delta import delta_log, ensure_table
    from iolake.lake.files import _file_count

    lake = tmp_path / "lake"
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    jvm, tracker = spark._jvm, spark.sparkContext.statusTracker()

    def count(group: str) -> tuple[int, int]:
        jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
        snapshot = delta_log(spark, SPEC.path(str(lake))).startTransaction().snapshot()
        spark.sparkContext.setJobGroup(group, group)
        try:
            n = _file_count(snapshot)
        finally:
            spark.sparkContext.setJobGroup("", "")
        return n, len(tracker.getJobIdsForGroup(group))

    ensure_table(spark, SPEC, str(lake))
    assert count("empty") == (0, 0)
    staging = tmp_path / "staging"
    _commit(
        spark, conf, [_stage(staging, f"f{i}", [(f"{i}", "2026-01", i, 0.0)]) for i in range(3)]
    )
    added = [a for a in _history(lake) if "add" in a]
    assert count("crc") == (len(added), 0) and len(added) == 3
    for crc in Path(SPEC.path(str(lake)), "_delta_log").glob("*.crc"):
        crc.unlink()
    n, jobs = count("state")
    assert n == 3 and jobs > 0


def test_a_gate_failure_leaves_the_staged_files_where_they_were(spark, tmp_path):
    lake = tmp_path / "lake"
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    bad = [_stage(tmp_path / "staging", "bad", [("a", "2026-01", -1, 0.0)])]
    with pytest.raises(Exception, match="gate bronze.probe failed, nothing committed"):
        _commit(spark, conf, bad)
    assert Path(bad[0]).exists()
    with pytest.raises(ValueError, match="needs the staged files and the batch's log_ids"):
        write(spark, conf, SPEC, spark.read.schema(STRUCT).parquet(*bad), mode="files", files=bad)


def test_arrow_stats_keep_only_bounds_data_skipping_can_trust():
    t = pa.table(
        {
            "i": pa.array([3, None, -2]),
            "s": pa.array(["b", "a", None]),
            "f": pa.array([1.0, math.nan, 2.0]),
            "g": pa.array([0.5, 1.5, None]),
            "h": pa.array([1.0, math.inf, 0.0]),
            "n": pa.array([None, None, None], pa.int64()),
            "b": pa.array([True, False, True]),
        }
    )
    s = json.loads(arrow_stats(t, ["i", "s", "f", "g", "h", "n", "b", "missing"]))
    assert s["numRecords"] == 3
    assert (s["minValues"], s["maxValues"]) == (
        {"i": -2, "s": "a", "g": 0.5},
        {"i": 3, "s": "b", "g": 1.5},
    )
    assert s["nullCount"] == {"i": 1, "s": 1, "f": 0, "g": 1, "h": 0, "n": 3, "b": 0}
    assert month_of("/lake/_staging/r/io_ops/job_month=2026-11/part-0.parquet") == "2026-11"
    with pytest.raises(ValueError, match="not under a job_month="):
        month_of("/lake/_staging/r/io_ops/part-0.parquet")
