"""The stage runner holds every stage to its entry in pipeline.yaml."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import yaml

from iolake.config import ConfigError, load_config
from iolake.pipeline import Stage, load_pipeline
from iolake.runinfo import RunInfo
from iolake.runner import StageContext, UndeclaredTable, run_stage
from tests.support.data import ROOT

FEATURES = Stage(
    "features",
    "jobs.features",
    ("bronze/jobs", "bronze/posix"),
    ("silver/file_features",),
    (),
    {},
    {"from": "bronze/jobs", "done": "silver/file_features"},
)


def _ctx(tmp_path, stage=FEATURES):
    conf = load_config("local", overrides={"lake": {"root": str(tmp_path / "lake")}})
    return StageContext(None, conf, stage, RunInfo("r", "sha", "digest", "models"))


def test_runner_refuses_a_read_the_stage_does_not_declare(tmp_path):
    with pytest.raises(
        UndeclaredTable, match=r"stage 'features' reads silver/covering_sets, which pipeline.yaml"
    ):
        _ctx(tmp_path).read("silver/covering_sets")


def test_runner_refuses_a_write_the_stage_does_not_declare(tmp_path):
    with pytest.raises(UndeclaredTable, match=r"stage 'features' writes silver/job_features"):
        _ctx(tmp_path).write("silver/job_features", None)
    with pytest.raises(UndeclaredTable, match="writes bronze/jobs"):  # an input is not an output
        _ctx(tmp_path).write("bronze/jobs", None)


def test_runner_refuses_a_transform_output_the_stage_does_not_declare(spark, tmp_path, monkeypatch):
    (tmp_path / "rogue_stage.py").write_text(
        textwrap.dedent("""
        def transform(inputs, conf):
            jobs = inputs["bronze/jobs"]
            return {"silver/file_features": jobs, "silver/covering_sets": jobs}
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    stage = Stage("rogue", "rogue_stage", ("bronze/jobs",), ("silver/file_features",), (), {})
    conf = load_config("local", overrides={"lake": {"root": str(tmp_path / "lake")}})
    with pytest.raises(UndeclaredTable, match=r"returned silver/covering_sets"):
        run_stage(spark, conf, stage, echo=lambda *_: None)
    assert not (tmp_path / "lake" / "silver").exists()  # nothing was committed


def test_a_pure_stages_output_is_computed_once_and_its_blocks_freed_after_the_commit(
    spark, tmp_path
):
    """commit_outputs materialises each output once: the count, the summary and the write read it
    without running the stage's plan again (the Python UDF below would count a second run), and
    its blocks are gone once the stage has committed."""
    import pyspark.sql.functions as F
    from pyspark.sql import types as T

    from iolake.runner import commit_outputs

    calls = spark.sparkContext.accumulator(0)

    def seen(x):
        calls.add(1)
        return x

    seen_udf = F.udf(seen, T.LongType())
    stage = Stage("pure", "rogue_stage", (), ("silver/file_features",), (), {})
    ctx = _ctx(tmp_path, stage)
    ctx.spark = spark
    written = []
    ctx.write = lambda t, df: written.append((t, df.count(), df.agg(F.sum("x")).first()[0]))
    before = len(spark.sparkContext._jsc.getPersistentRDDs())
    df = spark.range(40, numPartitions=2).select(seen_udf("id").alias("x"))
    summary = commit_outputs(object(), ctx, {"silver/file_features": df})
    assert summary["rows"] == {"silver/file_features": 40}
    assert written == [("silver/file_features", 40, sum(range(40)))]
    assert calls.value == 40  # one pass over the stage's plan, not one per action
    assert len(spark.sparkContext._jsc.getPersistentRDDs()) == before  # blocks freed


def test_pipeline_yaml_names_only_tables_that_exist(tmp_path):
    data = yaml.safe_load((ROOT / "pipeline.yaml").read_text())
    data["stages"][1]["inputs"].append("bronze/postix")
    bad = tmp_path / "pipeline.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError, match=r"stages\[1\] \(features\): 'bronze/postix' is not a table"
    ):
        load_pipeline(bad)


def test_pipeline_new_logs_must_name_an_input_and_an_output(tmp_path):
    data = yaml.safe_load((ROOT / "pipeline.yaml").read_text())
    data["stages"][2]["new_logs"] = {
        "from": "bronze/jobs",
        "done": "silver/job_features",
    }  # covering's
    bad = tmp_path / "pipeline.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError, match=r"\(covering\): new_logs: `from` must be an input and `done` an output"
    ):
        load_pipeline(bad)


@pytest.mark.parametrize(
    "new_logs, says",
    [
        ({"by_month": "yes"}, r"\(covering\): new_logs.by_month: must be true or false"),
        ({"by_mnth": True}, r"\(covering\): new_logs: needs the keys from, done .*by_mnth"),
    ],
)
def test_pipeline_new_logs_by_month_is_checked(tmp_path, new_logs, says):
    data = yaml.safe_load((ROOT / "pipeline.yaml").read_text())
    data["stages"][2]["new_logs"] = {
        "from": "bronze/jobs",
        "done": "silver/covering_sets",
        **new_logs,
    }
    bad = tmp_path / "pipeline.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=says):
        load_pipeline(bad)


def test_only_stages_whose_rows_follow_one_log_run_in_month_batches():
    """A stage that compares a log with others (watch's history, fleet's months) must see its new
    logs at once; features, covering and tags read each log alone."""
    batched = {s.name for s in load_pipeline() if s.by_month}
    assert batched == {"features", "covering", "tags"}


def test_month_batches_pack_whole_months_in_order_up_to_the_cap():
    from iolake.runner import month_batches

    counts = {"2024-03": 40, "2024-01": 70, "2024-02": 30, "2024-04": 150, "2024-05": 10, None: 5}
    assert month_batches(counts, 100) == [
        ["2024-01", "2024-02"],  # 70 + 30 = 100: at the cap, not over it
        ["2024-03"],  # 40 + 150 would be over
        ["2024-04"],  # over the cap alone: a month is never split
        ["2024-05"],
        [None],  # logs without a month: a batch of their own
    ]
    assert month_batches({"2024-01": 3, "2024-02": 4}, 10) == [["2024-01", "2024-02"]]
    assert month_batches({"2024-01": 3}, 1) == [["2024-01"]]


def test_batch_summaries_add_up():
    from iolake.runner import add_summaries

    a = {"logs": 3, "rows": {"silver/x": 10}, "tagged": 2, "empty_logs": 0}
    b = {"logs": 4, "rows": {"silver/x": 5, "silver/y": 1}, "tagged": 1, "empty_logs": 1}
    assert add_summaries(add_summaries({}, a), b) == {
        "logs": 7,
        "rows": {"silver/x": 15, "silver/y": 1},
        "tagged": 3,
        "empty_logs": 1,
    }


# What a stage module would call to reach the lake behind the runner's back.
DIRECT_LAKE_ACCESS = {
    "read_table",
    "read_or_empty",
    "merge_new_logs",
    "ensure_table",
    "table_exists",
    "table_version",
    "unprocessed_logs",
    "write",
    "gate_and_merge",
}


@pytest.mark.parametrize("stage", [s.name for s in load_pipeline()])
def test_stage_modules_reach_the_lake_only_through_the_runner(stage):
    """A stage that imported the lake helpers could read or write tables pipeline.yaml does not
    declare without the runner noticing; every stage module must go through its StageContext."""
    module = next(s.module for s in load_pipeline() if s.name == stage)
    tree = ast.parse(Path(ROOT, *module.split(".")).with_suffix(".py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("iolake.lake")
        ):
            imported |= {a.name for a in node.names}
        if isinstance(node, ast.ImportFrom) and node.module == "schemas":
            imported |= {
                a.name
                for a in node.names
                if a.name in ("BRONZE", "SILVER", "GOLD", "TABLES") and stage != "ingest"
            }  # ingest reads schemas to stage its decoded Parquet
    assert not imported & DIRECT_LAKE_ACCESS, (
        f"{module} imports {sorted(imported & DIRECT_LAKE_ACCESS)}"
    )
    assert not imported & {"SILVER", "GOLD", "TABLES"}, (
        f"{module} imports table specs: {sorted(imported)}"
    )


def test_every_stage_module_has_one_entry_point():
    """`transform` (pure) or `execute(ctx)`, plus `run` and `main` that go through the runner.

    (ingest wraps its `run` to take INPUT as its third argument, as it always has.)"""
    import importlib

    for s in load_pipeline():
        mod = importlib.import_module(s.module)
        assert hasattr(mod, "transform") or hasattr(mod, "execute"), s.module
        assert callable(mod.run) and callable(mod.main), s.module
        src = Path(mod.__file__).read_text()
        assert f'main = entry_points("{s.name}")' in src, (
            s.module
        )  # run and main come from the runner


def test_shuffle_partitions_grow_with_the_new_logs_only_past_the_configured_count():
    from iolake.runner import shuffle_partitions_for

    assert shuffle_partitions_for(100_000, 3000, 4) == 34  # ceil(100,000 / 3,000)
    assert (
        shuffle_partitions_for(10_000, 3000, 4) == 4
    )  # 4 > ceil(3.3): the configured count stands
    assert shuffle_partitions_for(12_001, 3000, 4) == 5
    assert shuffle_partitions_for(100_000, 3000, 200) == 200  # a cluster's count stands
    assert shuffle_partitions_for(100_000, 0, 4) == 4  # off
    assert shuffle_partitions_for(None, 3000, 4) == 4  # a stage that is not incremental by log


def test_the_local_driver_exits_when_out_of_heap_rather_than_hang(spark):
    """On a 659,000-log lake a driver out of heap (serializing a 165 MB task in advise) killed one
    of Spark's scheduler threads and the run waited 50 minutes with no task running: the local
    configuration's JVM is started with -XX:+ExitOnOutOfMemoryError, so such a run fails."""
    mx = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert "-XX:+ExitOnOutOfMemoryError" in list(mx.getInputArguments())
    assert (
        "-XX:+ExitOnOutOfMemoryError"
        in load_config("local").spark.properties["spark.driver.extraJavaOptions"].split()
    )


def test_a_stage_narrowed_to_its_work_reads_only_those_logs_and_their_months(spark, tmp_path):
    """`StageContext.narrow` (the advise stage, which finds its own jobs): its reads are the jobs'
    rows of their months' partitions, as an incremental stage's are; `whole` reads the table."""
    import datetime as dt

    from iolake.pipeline import table_spec

    spec = table_spec("gold/app_runs")
    ctx = _ctx(tmp_path, Stage("probe", "jobs.advise", ("gold/app_runs",), (), (), {}))
    ctx.spark = spark
    names = spec.struct.fieldNames()
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    rows = [
        tuple(
            {"log_id": f"{m}-{i}", "job_month": m, "app": "a", "start": start}.get(c) for c in names
        )
        for m in ("2025-01", "2025-02", "2025-03")
        for i in range(3)
    ]
    path = spec.path(ctx.conf.lake.root)
    spark.createDataFrame(rows, spec.struct).write.format("delta").partitionBy("job_month").save(
        path
    )
    todo = spark.createDataFrame(
        [("2025-02-0", "2025-02"), ("2025-02-2", "2025-02")], "log_id string, job_month string"
    )
    ctx.narrow(todo, 2)
    assert ctx.todo_months == ["2025-02"]
    narrowed = ctx.read("gold/app_runs")
    assert sorted(r.log_id for r in narrowed.collect()) == ["2025-02-0", "2025-02-2"]
    plan = narrowed._jdf.queryExecution().executedPlan().toString()
    assert "PartitionFilters: [" in plan and "2025-02" in plan.split("PartitionFilters: [", 1)[1]
    assert ctx.read("gold/app_runs", whole=True).count() == 9


def test_a_local_run_outlasts_a_stop_longer_than_sparks_heartbeat_timeout(spark):
    """A local run stopped for 213 s (SIGSTOP, as a scheduler suspends a batch job) lost its one
    executor on resuming under Spark's 120 s `spark.network.timeout` (its timeout check ran before
    the next heartbeat) and failed with an internal error: the local configuration's timeout is a
    day (the executor is the run's own process)."""

    def seconds(v: str) -> int:
        return int(v[:-1]) if v.endswith("s") else int(v)

    assert seconds(spark.sparkContext.getConf().get("spark.network.timeout")) >= 86400
    assert seconds(load_config("local").spark.properties["spark.network.timeout"]) >= 86400
