"""Where the advise stage looks for jobs to advise (`jobs.advise.months_to_look_in`): the months
committed since its last run, and a new champion's newest months. Real Delta tables (Spark)."""

from __future__ import annotations

import datetime as dt

import pyspark.sql.types as T
import pytest

from iolake.config import load_config
from iolake.runinfo import RunInfo
from iolake.runner import StageContext, set_mark, stage_by_name
from jobs.advise import months_to_look_in
from schemas import GOLD, SILVER

JF, OUT = SILVER["job_features"], GOLD["tuning_advice"]
DEFAULTS = {
    T.StringType: "",
    T.LongType: 0,
    T.IntegerType: 0,
    T.DoubleType: 0.0,
    T.BooleanType: False,
}


def _rows(spec, values: list[dict]) -> list[tuple]:
    """Rows of the table's schema: the given columns, the rest null (or a default when not nullable)."""
    out = []
    for v in values:
        row = []
        for f in spec.struct.fields:
            if f.name in v:
                row.append(v[f.name])
            elif f.nullable:
                row.append(None)
            elif isinstance(f.dataType, T.TimestampType):
                row.append(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
            elif isinstance(f.dataType, T.ArrayType):
                row.append([])
            else:
                row.append(DEFAULTS[type(f.dataType)])
        out.append(tuple(row))
    return out


def _append(spark, spec, lake: str, values: list[dict]) -> None:
    df = spark.createDataFrame(_rows(spec, values), spec.struct)
    df.write.format("delta").mode("append").partitionBy(*spec.partition_by).save(spec.path(lake))


def _jobs(month: str, n: int, first: int = 0) -> list[dict]:
    return [{"log_id": f"{month}-{i}", "job_month": month} for i in range(first, first + n)]


def _advice(jobs: list[dict], champion: str) -> list[dict]:
    return [{**j, "kind": "none", "item": "", "advised_with": champion} for j in jobs]


@pytest.fixture()
def ctx(spark, tmp_path):
    """A lake of 4 months x 2 jobs, every job advised by champion 1, the mark set as a run would."""
    conf = load_config("local", overrides={"lake": {"root": str(tmp_path / "lake")}})
    c = StageContext(spark, conf, stage_by_name("advise"), RunInfo("r", "sha", "digest", "models"))
    jobs = [j for m in ("2025-01", "2025-02", "2025-03", "2025-04") for j in _jobs(m, 2)]
    _append(spark, JF, conf.lake.root, jobs)
    _append(spark, OUT, conf.lake.root, _advice(jobs, "1"))
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
    _append(spark, JF, root, _jobs("2025-02", 1, first=5) + _jobs("2025-05", 3))
    months, _, lake_months = months_to_look_in(ctx, "1", 2)
    assert months == ["2025-02", "2025-05"] and lake_months[-1] == "2025-05"


def test_advice_deleted_makes_its_month_work_again(spark, ctx):
    root = ctx.conf.lake.root
    spark.sql(f"DELETE FROM delta.`{OUT.path(root)}` WHERE job_month = '2025-01'")
    assert months_to_look_in(ctx, "1", 2)[0] == ["2025-01"]


def test_a_new_champion_looks_in_the_newest_months_too(spark, ctx):
    root = ctx.conf.lake.root
    assert months_to_look_in(ctx, "2", 2)[0] == ["2025-03", "2025-04"]
    _append(spark, JF, root, _jobs("2025-01", 1, first=5))
    assert months_to_look_in(ctx, "2", 2)[0] == ["2025-01", "2025-03", "2025-04"]
    assert months_to_look_in(ctx, "2", 0)[0] is None  # every month is advised again


def test_the_mark_set_after_a_run_moves_the_search_on(spark, ctx):
    root = ctx.conf.lake.root
    _append(spark, JF, root, _jobs("2025-05", 2))
    months, mark, _ = months_to_look_in(ctx, "2", 2)
    assert months == ["2025-04", "2025-05"]
    set_mark(spark, ctx.conf, "advise", OUT, mark)  # what a run that advised them sets
    assert months_to_look_in(ctx, "2", 2)[0] == []
    assert months_to_look_in(ctx, "1", 2)[0] == ["2025-04", "2025-05"]  # champion 1 again
