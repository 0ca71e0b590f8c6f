"""Which jobs the advise stage advises (`jobs.advise.todo_jobs`): a job once per champion, and a
new champion re-advises only the lake's newest `advise.readvise_months` months. Real Spark."""

from __future__ import annotations

import pytest

from jobs.advise import todo_jobs

MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04", "2024-05"]


@pytest.fixture(scope="module")
def lake(spark):
    """Two jobs a month; every job advised by champion v1 but `new`, a 2024-01 job that arrived
    late (never advised), and `a5`, advised by v1 and v2 both."""
    jobs = [(f"{k}{i}", m) for i, m in enumerate(MONTHS, 1) for k in ("a", "b")]
    jobs.append(("new", "2024-01"))
    advice = [(log, m, "1") for log, m in jobs if log != "new"] + [("a5", "2024-05", "2")]
    jf = spark.createDataFrame(jobs, "log_id string, job_month string")
    ta = spark.createDataFrame(advice, "log_id string, job_month string, advised_with string")
    return jf, ta


def _ids(df) -> set[str]:
    return {r.log_id for r in df.collect()}


def test_the_same_champion_advises_only_jobs_it_has_not(lake):
    jf, ta = lake
    assert _ids(todo_jobs(jf, ta, "1", 3)) == {"new"}


def test_a_new_champion_readvises_the_newest_months_and_every_unadvised_job(lake):
    jf, ta = lake
    said = []
    got = _ids(todo_jobs(jf, ta, "2", 2, said.append))
    # 2024-04 and 2024-05 are the newest two months; a5 has v2 rows already; `new` was never advised
    assert got == {"a4", "b4", "b5", "new"}
    assert said and "before 2024-04" in said[0] and "readvise_months 2" in said[0]


def test_readvise_months_0_readvises_every_job(lake):
    jf, ta = lake
    everyone = {f"{k}{i}" for i in range(1, 6) for k in ("a", "b")} | {"new"}
    assert _ids(todo_jobs(jf, ta, "2", 0)) == everyone - {"a5"}


def test_an_empty_lake_has_nothing_to_advise(spark):
    jf = spark.createDataFrame([], "log_id string, job_month string")
    ta = spark.createDataFrame([], "log_id string, job_month string, advised_with string")
    assert _ids(todo_jobs(jf, ta, "1", 3)) == set()
