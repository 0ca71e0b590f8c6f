"""examples/: Spark SQL (spark_sql.py) and DuckDB over delta-rs (without_spark.py, run with no Java
reachable) give the same answers, and those of a direct Spark DataFrame computation, on a lake
built from real logs (tests/support/lakes.py); delta-rs reads every table of it as Spark writes
it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pyspark.sql.functions as F
import pytest

from tests.support.lakes import report_lake

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TOP = 5


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    return report_lake(spark, tmp_path_factory)


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _plain(x):
    return json.loads(json.dumps(x, default=str))


def _direct(spark, lake: str) -> dict:
    """The three results from DataFrame operations (no SQL text shared with the examples)."""

    def read(t):
        return spark.read.format("delta").load(f"{lake}/{t}")

    io = (
        read("bronze/posix")
        .select(
            "log_id", F.col("POSIX_BYTES_READ").alias("r"), F.col("POSIX_BYTES_WRITTEN").alias("w")
        )
        .unionByName(
            read("bronze/stdio").select(
                "log_id",
                F.col("STDIO_BYTES_READ").alias("r"),
                F.col("STDIO_BYTES_WRITTEN").alias("w"),
            )
        )
    )
    per = io.groupBy("log_id").agg(
        F.sum("r").alias("bytes_read"), F.sum("w").alias("bytes_written")
    )
    top = (
        read("bronze/jobs")
        .join(per, "log_id", "left")
        .na.fill(0, ["bytes_read", "bytes_written"])
        .select(
            "log_id",
            "jobid",
            F.coalesce("exe", F.lit("")).alias("exe"),
            "nprocs",
            F.col("bytes_read").cast("long").alias("bytes_read"),
            F.col("bytes_written").cast("long").alias("bytes_written"),
            (F.col("bytes_read") + F.col("bytes_written")).cast("long").alias("total_bytes"),
        )
        .orderBy(F.desc("total_bytes"), "log_id")
        .limit(TOP)
    )
    quarantined = (
        read("bronze/logs")
        .where(F.col("status") == "quarantined")
        .select("source_uri", F.coalesce("reason", F.lit("")).alias("reason"), "size_bytes")
        .orderBy("source_uri")
    )
    tags = (
        read("silver/bottleneck_tags")
        .where(F.col("tag") != "no_issue")
        .join(
            read("silver/job_features").select(
                "log_id", F.coalesce("program", F.lit("")).alias("program")
            ),
            "log_id",
        )
        .groupBy("program", "tag", "severity")
        .agg(F.countDistinct("log_id").alias("jobs"))
        .orderBy("program", F.desc("jobs"), "tag", "severity")
    )
    return {
        "top_jobs": [r.asDict() for r in top.collect()],
        "quarantined": [r.asDict() for r in quarantined.collect()],
        "tags_per_program": [r.asDict() for r in tags.collect()],
    }


def _no_java_env(tmp_path) -> dict:
    # nothing that could start a JVM: no java on PATH, a JAVA_HOME that does not exist
    return {"PATH": "/nonexistent", "JAVA_HOME": str(tmp_path / "no-java"), "HOME": str(tmp_path)}


def test_examples_agree_with_each_other_and_with_spark_dataframes(spark, lake, tmp_path, capsys):
    duck = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "without_spark.py"),
            "--lake",
            lake["lake"],
            "--top",
            str(TOP),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=_no_java_env(tmp_path),
        cwd=tmp_path,
    )
    assert duck.returncode == 0, duck.stderr[-3000:]
    without_spark = json.loads(duck.stdout)

    returned = _module("spark_sql").main(["--lake", lake["lake"], "--top", str(TOP), "--json"])
    with_spark = json.loads(capsys.readouterr().out)
    assert with_spark == _plain(returned)

    direct = _plain(_direct(spark, lake["lake"]))
    assert without_spark == with_spark == direct
    # the lake is non-trivial: every decoded job ranked, the truncated log quarantined, findings per program
    jobs = spark.read.format("delta").load(f"{lake['lake']}/bronze/jobs").count()
    assert len(direct["top_jobs"]) == min(TOP, jobs) == 2
    assert direct["top_jobs"][0]["total_bytes"] >= direct["top_jobs"][1]["total_bytes"] > 0
    assert [Path(q["source_uri"]).name for q in direct["quarantined"]] == ["truncated.darshan"]
    assert direct["quarantined"][0]["reason"]
    assert len({t["program"] for t in direct["tags_per_program"]}) == 2


def test_without_spark_prints_readable_tables(lake, tmp_path):
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "without_spark.py"), "--lake", lake["lake"]],
        capture_output=True,
        text=True,
        timeout=120,
        env=_no_java_env(tmp_path),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for header in ("== top_jobs", "== quarantined", "== tags_per_program"):
        assert header in out.stdout
    assert lake["dxt"][:20] in out.stdout and "truncated.darshan" in out.stdout


def test_delta_rs_reads_every_table_as_spark_wrote_it(spark, lake):
    from iolake.lake import arrow
    from schemas import TABLES

    seen = 0
    for name, spec in TABLES.items():
        if not arrow.exists(lake["lake"], spec):
            continue
        seen += 1
        keys = [(k, "ascending") for k in spec.keys]
        mine = arrow.read(lake["lake"], spec).select(spec.columns).sort_by(keys)
        theirs = (
            spark.read.format("delta").load(spec.path(lake["lake"])).toArrow().select(spec.columns)
        )
        assert mine.num_rows == theirs.num_rows > 0, name
        assert mine.equals(theirs.cast(mine.schema).sort_by(keys)), name
    on_disk = {p.parent for p in Path(lake["lake"]).glob("*/*/_delta_log")}
    assert seen == len(on_disk) >= 13  # bronze (jobs and files updated in place), silver, gold
