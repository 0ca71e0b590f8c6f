"""Where an incremental stage's new logs can be (`iolake.lake.changes`): the months the commits
since the stage's mark touched, on real Delta tables written by Spark.

Each test builds a `from` table and a `done` table partitioned by job_month (logs of three
months, all done), sets the mark a successful run would set, then commits what a night (or an
operator) would, and checks both the months the next run looks in and that the anti-join over
those months finds exactly the logs the whole-table anti-join finds.
"""

from __future__ import annotations

import pyspark.sql.types as T
import pytest
from delta.tables import DeltaTable

from iolake.lake import changes, unprocessed_logs
from schemas import OPS, TableSpec

STRUCT = T.StructType(
    [T.StructField("log_id", T.StringType(), False), T.StructField("job_month", T.StringType())]
)
SOURCE = TableSpec("src", "bronze", STRUCT, ("log_id",))
DONE = TableSpec("done", "silver", STRUCT, ("log_id",))
EMPTY = OPS["empty_logs"]
MONTHS = ("2025-01", "2025-02", "2025-03")
STAGE = "probe"


def _append(spark, spec: TableSpec, lake: str, rows: list[tuple]) -> None:
    df = spark.createDataFrame(rows, STRUCT)
    df.write.format("delta").mode("append").partitionBy("job_month").save(spec.path(lake))


def _logs(month: str, n: int, first: int = 0) -> list[tuple]:
    return [(f"{month}-log{i}", month) for i in range(first, first + n)]


@pytest.fixture()
def lake(spark, tmp_path):
    """A `from` and a `done` table of 3 months x 4 logs, every log done, and the mark set."""
    root = str(tmp_path / "lake")
    every = [log for month in MONTHS for log in _logs(month, 4)]
    _append(spark, SOURCE, root, every)
    _append(spark, DONE, root, every)
    _mark(spark, root)
    return root


def _mark(spark, lake: str) -> dict:
    _, mark = changes.months_to_check(spark, SOURCE, DONE, EMPTY, lake, STAGE, 240)
    changes.write_mark(spark, DONE, lake, STAGE, changes.completed(spark, mark, DONE, EMPTY, lake))
    return mark


def _check(spark, lake: str) -> list | None:
    """The months the next run looks in; and the logs it finds there are every new log."""
    months, _ = changes.months_to_check(spark, SOURCE, DONE, EMPTY, lake, STAGE, 240)
    everywhere = unprocessed_logs(spark, SOURCE, DONE, lake, STAGE)
    found = unprocessed_logs(spark, SOURCE, DONE, lake, STAGE, months)
    assert sorted(map(tuple, found.collect())) == sorted(map(tuple, everywhere.collect()))
    return months


def test_no_mark_means_every_month_and_a_set_mark_means_none(spark, tmp_path):
    root = str(tmp_path / "lake")
    _append(spark, SOURCE, root, _logs("2025-01", 2))
    _append(spark, DONE, root, _logs("2025-01", 2))
    assert _check(spark, root) is None  # no mark yet: the whole anti-join
    mark = _mark(spark, root)
    assert mark["from"] == "bronze/src" and mark["from_version"] == 0
    assert changes.read_mark(spark, DONE, root, STAGE)["done_id"] == mark["done_id"]
    assert _check(spark, root) == []


def test_a_night_is_looked_for_in_its_months_only(spark, lake):
    _append(spark, SOURCE, lake, _logs("2025-03", 2, first=4) + _logs("2025-04", 3))
    assert _check(spark, lake) == ["2025-03", "2025-04"]
    found = unprocessed_logs(spark, SOURCE, DONE, lake, STAGE, ["2025-03", "2025-04"])
    assert found.count() == 5


def test_a_mark_the_caller_read_is_used_as_read(spark, lake):
    _append(spark, SOURCE, lake, _logs("2025-04", 1))
    old = changes.read_mark(spark, DONE, lake, STAGE)
    args = (spark, SOURCE, DONE, EMPTY, lake, STAGE, 240)
    assert changes.months_to_check(*args, old=old)[0] == ["2025-04"]
    assert changes.months_to_check(*args, old=None)[0] is None  # no mark: every month


def test_an_unchanged_mark_is_not_committed_again(spark, lake):
    before = DeltaTable.forPath(spark, DONE.path(lake)).history(1).first()["version"]
    assert not changes.write_mark(
        spark, DONE, lake, STAGE, changes.read_mark(spark, DONE, lake, STAGE)
    )
    assert DeltaTable.forPath(spark, DONE.path(lake)).history(1).first()["version"] == before


def test_rows_removed_from_done_make_their_month_new_work_again(spark, lake):
    DeltaTable.forPath(spark, DONE.path(lake)).delete("log_id = '2025-02-log1'")
    assert _check(spark, lake) == ["2025-02"]
    found = unprocessed_logs(spark, SOURCE, DONE, lake, STAGE, ["2025-02"])
    assert [r.log_id for r in found.collect()] == ["2025-02-log1"]


def test_compaction_widens_nothing(spark, lake):
    for spec in (SOURCE, DONE):
        DeltaTable.forPath(spark, spec.path(lake)).optimize().executeCompaction()
    assert _check(spark, lake) == []


def test_a_null_month_is_looked_for_as_null(spark, lake):
    _append(spark, SOURCE, lake, [("no-month-log", None)])
    assert _check(spark, lake) == [None]


def test_a_rebuilt_source_means_every_month(spark, lake, tmp_path):
    import shutil

    shutil.rmtree(SOURCE.path(lake))
    _append(spark, SOURCE, lake, [log for month in MONTHS for log in _logs(month, 4)])
    assert _check(spark, lake) is None


def test_a_rebuilt_done_table_has_no_mark(spark, lake):
    import shutil

    shutil.rmtree(DONE.path(lake))
    _append(spark, DONE, lake, _logs("2025-01", 4))
    assert changes.read_mark(spark, DONE, lake, STAGE) is None
    assert _check(spark, lake) is None


def test_a_removal_from_empty_logs_means_every_month(spark, lake):
    row = {
        "stage": STAGE,
        "done_table": "silver/done",
        "done_table_id": "x",
        "log_id": "2025-01-log0",
        "job_month": "2025-01",
        "run_id": "r",
    }
    spark.createDataFrame([row], EMPTY.struct).write.format("delta").save(EMPTY.path(lake))
    assert _check(spark, lake) == []  # an insert into ops/empty_logs frees no log
    DeltaTable.forPath(spark, EMPTY.path(lake)).delete("log_id = '2025-01-log0'")
    assert _check(spark, lake) is None


def test_past_the_action_budget_every_month_is_read(spark, lake, monkeypatch):
    _append(spark, SOURCE, lake, _logs("2025-04", 2))
    assert _check(spark, lake) == ["2025-04"]
    monkeypatch.setattr(changes, "MAX_ACTIONS", 0)
    assert _check(spark, lake) is None


def test_more_months_than_the_runner_prunes_by_means_every_month(spark, lake):
    _append(spark, SOURCE, lake, _logs("2025-04", 1) + _logs("2025-05", 1))
    months, _ = changes.months_to_check(spark, SOURCE, DONE, EMPTY, lake, STAGE, 1)
    assert months is None


def test_commits_gone_from_the_log_mean_every_month(spark, lake):
    """A stage not run for longer than the log's retention: the commits since its mark were
    cleaned up (here deleted after a checkpoint), so where the new logs are cannot be told."""
    from pathlib import Path

    for i in range(4, 7):
        _append(spark, SOURCE, lake, _logs("2025-04", 1, first=i))
    log = changes.delta_log(spark, SOURCE.path(lake))
    log.checkpoint()
    mark_version = changes.read_mark(spark, DONE, lake, STAGE)["from_version"]
    for f in Path(SOURCE.path(lake), "_delta_log").glob("*.json"):
        if int(f.stem) <= mark_version + 2:
            f.unlink()
    assert _check(spark, lake) is None
