"""`iolake.progress.SparkProgress`: its last line gives the total and rate only when the work ended."""

from __future__ import annotations

import pytest

from iolake.progress import SparkProgress


def test_the_last_line_counts_every_item_when_the_work_ends(spark):
    lines: list[str] = []
    with SparkProgress(
        spark, "decode", total_items=40, unit="logs", every_s=0.05, echo=lines.append
    ):
        assert spark.range(40).repartition(4).count() == 40
    assert lines[-1].startswith("[decode] 40/40 logs in ") and lines[-1].endswith(" logs/s)")


def test_a_failed_block_is_reported_as_failed_not_as_done(spark):
    lines: list[str] = []
    with pytest.raises(RuntimeError, match="a task failed"):
        with SparkProgress(spark, "decode", total_items=40, unit="logs", echo=lines.append):
            spark.range(3).count()
            raise RuntimeError("a task failed")
    assert lines and lines[-1].startswith("[decode] failed after ")
    assert lines[-1].endswith(": RuntimeError")
    assert not any("40/40" in line for line in lines)
