"""Where the advise stage looks for jobs to advise (`jobs.advise.months_to_look_in`): the months
committed since its last run, and a new champion's newest months. Real Delta tables (Spark)."""

from __future__ import annotations

import pytest

from iolake.config import load_config
from iolake.runinfo import RunInfo
from iolake.runner import StageContext, set_mark, stage_by_name
from jobs.advise import months_to_look_in
from schemas import GOLD, SILVER
from tests.support.frames import append_rows, month_jobs

JF, OUT = SILVER["job_features"], GOLD["tuning_advice"]


def _advice(jobs: list[dict], champion: str) -> list[dict]:
    return [{**j, "kind": "none", "item": "", "advised_with": champion} for j in jobs]


@pytest.fixture()
def ctx(spark, tmp_path):
    """A lake of 4 months x 2 jobs, every job advised by champion 1, the mark set as a run would."""
    conf = load_config("local", overrides={"lake": {"root": str(tmp_path / "lake")}})
    c = StageContext(spark, conf, stage_by_name("advise"), RunInfo("r", "sha", "digest", "models"))
    jobs = [j for m in ("2025-01", "2025-02", "2025-03", "2025-04") for j in month_jobs(m, 2)]
    append_rows(spark, JF, conf.lake.root, jobs)
    append_rows(spark, OUT, conf.lake.root, _advice(jobs, "1"))
    months, mark, _ = months_to_look_in(c, "1", 2)
    assert months is None  # no mark yet: every month
    set_mark(spark, conf, "advise", OUT, mark)
    return c


def test_the_same_champion_with_nothing_committed_looks_nowhere(ctx):
    months, mark, lake_months = months_to_look_in(ctx, "1", 2)
    assert months == [] and mark["advised_with"] == "1"
    assert lake_months == ["2025-01", "2025-02", "2025-03", "2025-04"]


def test_a_night_is_looked_for_in_its_months_only(spark, ctx):
    root = ctx.conf.lake.root
    append_rows(spark, JF, root, month_jobs("2025-02", 1, first=5) + month_jobs("2025-05", 3))
    months, _, lake_months = months_to_look_in(ctx, "1", 2)
    assert months == ["2025-02", "2025-05"] and lake_months[-1] == "2025-05"


def test_advice_deleted_makes_its_month_work_again(spark, ctx):
    root = ctx.conf.lake.root
    spark.sql(f"DELETE FROM delta.`{OUT.path(root)}` WHERE job_month = '2025-01'")
    assert months_to_look_in(ctx, "1", 2)[0] == ["2025-01"]


def test_a_new_champion_looks_in_the_newest_months_too(spark, ctx):
    root = ctx.conf.lake.root
    assert months_to_look_in(ctx, "2", 2)[0] == ["2025-03", "2025-04"]
    append_rows(spark, JF, root, month_jobs("2025-01", 1, first=5))
    assert months_to_look_in(ctx, "2", 2)[0] == ["2025-01", "2025-03", "2025-04"]
    assert months_to_look_in(ctx, "2", 0)[0] is None  # every month is advised again


def test_the_mark_set_after_a_run_moves_the_search_on(spark, ctx):
    root = ctx.conf.lake.root
    append_rows(spark, JF, root, month_jobs("2025-05", 2))
    months, mark, _ = months_to_look_in(ctx, "2", 2)
    assert months == ["2025-04", "2025-05"]
    set_mark(spark, ctx.conf, "advise", OUT, mark)  # what a run that advised them sets
    assert months_to_look_in(ctx, "2", 2)[0] == []
    assert months_to_look_in(ctx, "1", 2)[0] == ["2025-04", "2025-05"]  # champion 1 again
