"""The one writer: gate, then insert once / overwrite / append, on a real Delta table."""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import types as T

from iolake.config import load_config
from iolake.lake import GateFailed
from iolake.lake.writer import write
from iolake.spark import spark_log_file
from schemas import Expectation, TableSpec

STRUCT = T.StructType(
    [
        T.StructField("log_id", T.StringType(), False),
        T.StructField("job_month", T.StringType(), False),
        T.StructField("x", T.LongType(), True),
    ]
)
SPEC = TableSpec(
    "probe",
    "silver",
    STRUCT,
    keys=("log_id",),
    expectations=(Expectation("between", "x", {"min": 0}),),
)


def _conf(tmp_path, **gates):
    return load_config(
        "local",
        overrides={"lake": {"root": str(tmp_path / "lake")}, "gates": gates or {"enabled": True}},
    )


def _rows(spark, tmp_path, spec=SPEC):
    df = spark.read.format("delta").load(spec.path(str(tmp_path / "lake")))
    return sorted((r.log_id, r.job_month, r.x) for r in df.collect())


def test_writer_insert_adds_each_log_once(spark, tmp_path):
    conf = _conf(tmp_path)
    write(
        spark, conf, SPEC, spark.createDataFrame([("a", "2026-01", 1), ("b", "2026-02", 2)], STRUCT)
    )
    # a re-run of the same logs, with one new log: only the new one lands, old rows unchanged
    write(
        spark, conf, SPEC, spark.createDataFrame([("a", "2026-01", 9), ("c", "2026-01", 3)], STRUCT)
    )
    assert _rows(spark, tmp_path) == [("a", "2026-01", 1), ("b", "2026-02", 2), ("c", "2026-01", 3)]


def test_writer_gate_failure_commits_nothing(spark, tmp_path):
    conf = _conf(tmp_path)
    write(spark, conf, SPEC, spark.createDataFrame([("a", "2026-01", 1)], STRUCT))
    bad = spark.createDataFrame([("b", "2026-01", -5)], STRUCT)
    with pytest.raises(GateFailed, match=r"gate silver.probe failed, nothing committed"):
        write(spark, conf, SPEC, bad)
    assert _rows(spark, tmp_path) == [("a", "2026-01", 1)]
    write(spark, _conf(tmp_path, enabled=False), SPEC, bad)  # gates off: the same rows commit
    assert _rows(spark, tmp_path) == [("a", "2026-01", 1), ("b", "2026-01", -5)]


@pytest.mark.slow  # 7 s: make test only, keeping make check under 5 minutes
def test_writer_overwrite_and_append(spark, tmp_path):
    conf = _conf(tmp_path)
    spec = dataclasses.replace(SPEC, partition_by=())
    write(
        spark,
        conf,
        spec,
        spark.createDataFrame([("a", "2026-01", 1), ("b", "2026-01", 2)], STRUCT),
        mode="overwrite",
    )
    write(spark, conf, spec, spark.createDataFrame([("c", "2026-01", 3)], STRUCT), mode="overwrite")
    assert _rows(spark, tmp_path, spec) == [("c", "2026-01", 3)]
    write(spark, conf, spec, spark.createDataFrame([("c", "2026-01", 3)], STRUCT), mode="append")
    assert _rows(spark, tmp_path, spec) == [("c", "2026-01", 3), ("c", "2026-01", 3)]
    with pytest.raises(ValueError, match="write mode must be one of insert, overwrite, append"):
        write(spark, conf, spec, None, mode="upsert")


def test_writer_insert_matches_predictions_on_model_version(spark, tmp_path):
    """A new model version's predictions of the same file land; the same version's do not."""
    struct = T.StructType(STRUCT.fields + [T.StructField("model_version", T.StringType(), False)])
    spec = TableSpec(
        "pred_probe",
        "gold",
        struct,
        keys=("log_id", "model_version"),
        merge_on=("job_month", "log_id", "model_version"),
    )
    conf = _conf(tmp_path)
    write(spark, conf, spec, spark.createDataFrame([("a", "2026-01", 1, "1")], struct))
    write(
        spark,
        conf,
        spec,
        spark.createDataFrame([("a", "2026-01", 7, "1"), ("a", "2026-01", 2, "2")], struct),
    )
    got = spark.read.format("delta").load(spec.path(str(tmp_path / "lake"))).collect()
    assert sorted((r.x, r.model_version) for r in got) == [(1, "1"), (2, "2")]


def test_spark_log_goes_under_a_local_lake_else_the_temporary_folder(tmp_path, monkeypatch):
    local = load_config("local", overrides={"lake": {"root": str(tmp_path / "lake")}})
    assert spark_log_file(local, "R1") == str(tmp_path / "lake" / "_logs" / "spark-R1.log")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    remote = load_config("local", overrides={"lake": {"root": "s3://bucket/lake"}})
    assert spark_log_file(remote, "R1") == str(tmp_path / "tmp" / "iolake-logs" / "spark-R1.log")
