"""`iolake.spark.local_frame`: rows built on the driver reach Spark in bounded slices (decision 0040)."""

from __future__ import annotations

from iolake.spark import local_frame

SCHEMA = "log_id string, n long, message string"


def _rows(n: int) -> list[tuple]:
    return [(f"log{i:06d}", i, "x" * (i % 7)) for i in range(n)]


def test_no_task_carries_more_than_its_slice_of_the_rows(spark):
    rows = _rows(1_050)
    df = local_frame(spark, rows, SCHEMA, rows_per_task=100)
    per_task = df.rdd.glom().map(len).collect()
    assert len(per_task) == 11 and max(per_task) <= 100 and sum(per_task) == 1_050
    assert sorted(tuple(r) for r in df.collect()) == rows


def test_few_rows_make_an_ordinary_frame_and_none_an_empty_one(spark):
    rows = _rows(5)
    assert sorted(tuple(r) for r in local_frame(spark, rows, SCHEMA).collect()) == rows
    empty = local_frame(spark, [], SCHEMA)
    assert empty.count() == 0 and empty.schema.fieldNames() == ["log_id", "n", "message"]
