"""Table creation under concurrency: the loser of a create race waits for the winner's commit.

While one run creates a table, the table's folder already holds `_delta_log/` but no commit;
a second run that tries to create the table then meets Delta's "non-empty location" refusal.
The test stages exactly that moment: an empty `_delta_log/`, whose first commit (the winner's,
written by a real Delta create elsewhere) appears a moment later.
"""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from iolake.lake import ensure_table, read_table
from schemas import BRONZE

JOBS = BRONZE["jobs"]


@pytest.mark.slow  # two threads racing to create a table: 8 s, make test only
def test_create_waits_for_a_concurrent_creator(spark, tmp_path):
    winner, lake = str(tmp_path / "winner"), str(tmp_path / "lake")
    ensure_table(spark, JOBS, winner)  # the commit the concurrent creator is about to write
    log_dir = tmp_path / "lake" / JOBS.layer / JOBS.name / "_delta_log"
    log_dir.mkdir(parents=True)  # ...its folder exists already, its first commit is being written
    src = sorted((tmp_path / "winner" / JOBS.layer / JOBS.name / "_delta_log").glob("*.json"))
    for f in src:  # Delta's log store writes a hidden temporary file, then renames it
        shutil.copy(f, log_dir / f".{f.name}.tmp")

    def commit_later():
        time.sleep(1.5)
        for f in src:
            (log_dir / f".{f.name}.tmp").rename(log_dir / f.name)

    t = threading.Thread(target=commit_later)
    t.start()
    try:
        ensure_table(spark, JOBS, lake, retries=8)
    finally:
        t.join()
    got = read_table(spark, JOBS, lake)
    assert [f.name for f in got.schema.fields] == [f.name for f in JOBS.struct.fields]
    assert got.count() == 0


def test_create_over_foreign_files_names_the_folder(spark, tmp_path):
    lake = tmp_path / "lake"
    folder = lake / JOBS.layer / JOBS.name
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("not a table")
    with pytest.raises(RuntimeError) as e:
        ensure_table(spark, JOBS, str(lake), retries=1)
    msg = str(e.value)
    assert str(folder) in msg and "not a Delta table" in msg
    assert (folder / "notes.txt").read_text() == "not a table"  # nothing of the user's is touched


def test_a_tables_id_is_describe_details_and_read_without_a_spark_job(spark, tmp_path):
    """`table_id` (the build of a stage's done table that ops/empty_logs records) is the id
    `DESCRIBE DETAIL` gives, for a new table and for a re-created one, and reading it runs no
    Spark job (DESCRIBE DETAIL computes the table's state with one)."""
    from iolake.lake import table_id

    lake = str(tmp_path / "lake")
    tracker = spark.sparkContext.statusTracker()
    assert table_id(spark, JOBS, lake) is None  # no table yet

    def ids(group: str) -> tuple[str, str, int]:
        spark.sparkContext.setJobGroup(group, group)
        try:
            mine = table_id(spark, JOBS, lake)
        finally:
            spark.sparkContext.setJobGroup("", "")
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{JOBS.path(lake)}`").first()["id"]
        return mine, detail, len(tracker.getJobIdsForGroup(group))

    ensure_table(spark, JOBS, lake)
    first, detail, jobs = ids("first")
    assert first == detail and jobs == 0
    shutil.rmtree(JOBS.path(lake))  # dropped and created again: another build, another id
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    ensure_table(spark, JOBS, lake)
    second, detail, jobs = ids("second")
    assert second == detail and second != first and jobs == 0
