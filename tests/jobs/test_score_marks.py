"""Where the score stage looks for rows to score (`jobs.score.months_to_score`): the months committed
to its source since its last run with the same model version; every month for another version.
Real Delta tables (Spark)."""

from __future__ import annotations

import pytest

from iolake.config import load_config
from iolake.runinfo import RunInfo
from iolake.runner import StageContext, set_mark, stage_by_name
from jobs.score import FF, mark_name, months_to_score
from schemas import GOLD, SILVER
from tests.support.frames import append_rows, month_jobs

PRED = "gold/placement_predictions"
FILES, OUT = SILVER["file_features"], GOLD["placement_predictions"]


def _files(jobs: list[dict]) -> list[dict]:
    return [{**j, "record_id": 1} for j in jobs]


def _scored(jobs: list[dict], version: str) -> list[dict]:
    return [
        {**j, "record_id": 1, "model_name": "iolake-placement", "model_version": version}
        for j in jobs
    ]


@pytest.fixture()
def ctx(spark, tmp_path):
    """A lake of 3 months x 2 files, every file scored by version 1, the mark set as a run would."""
    conf = load_config("local", overrides={"lake": {"root": str(tmp_path / "lake")}})
    c = StageContext(spark, conf, stage_by_name("score"), RunInfo("r", "sha", "digest", "models"))
    jobs = [j for m in ("2025-01", "2025-02", "2025-03") for j in month_jobs(m, 2)]
    append_rows(spark, FILES, conf.lake.root, _files(jobs))
    append_rows(spark, OUT, conf.lake.root, _scored(jobs, "1"))
    months, mark = months_to_score(c, FF, PRED, "1")
    assert months is None and mark["model_version"] == "1"  # no mark yet: every month
    set_mark(spark, conf, mark_name(PRED), OUT, mark)
    return c


def test_the_same_version_with_nothing_committed_looks_nowhere(ctx):
    assert months_to_score(ctx, FF, PRED, "1")[0] == []


def test_a_night_is_scored_in_its_months_only(spark, ctx):
    append_rows(
        spark,
        FILES,
        ctx.conf.lake.root,
        _files(month_jobs("2025-02", 1, 5) + month_jobs("2025-04", 3)),
    )
    assert months_to_score(ctx, FF, PRED, "1")[0] == ["2025-02", "2025-04"]


def test_predictions_deleted_make_their_month_work_again(spark, ctx):
    spark.sql(f"DELETE FROM delta.`{OUT.path(ctx.conf.lake.root)}` WHERE job_month = '2025-01'")
    assert months_to_score(ctx, FF, PRED, "1")[0] == ["2025-01"]


def test_a_new_version_scores_every_month_until_its_mark_is_set(spark, ctx):
    months, mark = months_to_score(ctx, FF, PRED, "2")
    assert months is None
    set_mark(spark, ctx.conf, mark_name(PRED), OUT, mark)  # what a run that scored them sets
    assert months_to_score(ctx, FF, PRED, "2")[0] == []
    assert months_to_score(ctx, FF, PRED, "1")[0] is None  # version 1 back: every month again


def test_each_table_keeps_its_own_mark(spark, ctx):
    assert (
        months_to_score(ctx, "silver/job_features", "gold/job_bandwidth_predictions", "1")[0]
        is None
    )
