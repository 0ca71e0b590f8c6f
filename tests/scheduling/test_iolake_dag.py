"""scheduling/: the Airflow DAG's task graph and commands (without Airflow), and the cron example."""
from __future__ import annotations

import importlib
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from iolake.cli import parser as iolake_parser
from iolake.cli import stage_parser
from iolake.pipeline import load_pipeline

ROOT = Path(__file__).resolve().parents[2]
SCHED = ROOT / "scheduling"


@pytest.fixture(scope="module")
def dag_module():
    spec = importlib.util.spec_from_file_location("iolake_dag", SCHED / "iolake_dag.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # must import without Airflow
    return mod


def test_imports_without_airflow(dag_module):
    if importlib.util.find_spec("airflow") is None:
        assert dag_module.dag is None


def test_tasks_follow_pipeline(dag_module):
    tasks = dag_module.build_tasks(lake="hdfs:///iolake", drop="hdfs:///darshan/")
    stages = load_pipeline()
    assert [t["task_id"] for t in tasks] == [s.name for s in stages]
    assert {t["task_id"]: t["depends_on"] for t in tasks} == {s.name: list(s.depends_on) for s in stages}
    ids = [t["task_id"] for t in tasks]
    for t in tasks:  # edges only point backwards: a DAG in pipeline order
        assert all(ids.index(d) < ids.index(t["task_id"]) for d in t["depends_on"])


def test_commands_are_accepted_by_the_stage_parsers(dag_module):
    tasks = dag_module.build_tasks(lake="hdfs:///iolake", drop="hdfs:///darshan", env="cluster",
                                   project="/opt/iolake", spark_submit="/opt/spark/bin/spark-submit",
                                   submit_args=["--master", "yarn"])
    stages = {s.name: s for s in load_pipeline()}
    for t in tasks:
        argv = shlex.split(t["bash_command"])
        assert argv == t["argv"] and argv[0] == "/opt/spark/bin/spark-submit"
        script = t["script"]
        assert argv[argv.index(script) + 1:] == t["args"]  # spark-submit passes these to the script
        assert (ROOT / Path(script).relative_to("/opt/iolake")).is_file()
        # the entry runs `stage NAME` as the pipeline's module for NAME, with the rest as its argv
        assert t["args"][:2] == ["stage", t["task_id"]] and t["args"][2:] == t["stage_args"]
        assert t["module"] == stages[t["task_id"]].module
        mod = importlib.import_module(t["module"])
        assert callable(getattr(mod, "main", None))
        if t["task_id"] == "ingest":
            args = mod.parser().parse_args(t["stage_args"])
            assert args.inputs == ["hdfs:///darshan/{{ ds }}"]
            # the same arguments work for the `iolake ingest` command
            cli = iolake_parser().parse_args(["ingest", *t["stage_args"]])
            assert (cli.env, cli.lake, cli.inputs) == ("cluster", "hdfs:///iolake", args.inputs)
        else:
            args = stage_parser(t["task_id"], mod.__doc__ or "").parse_args(t["stage_args"])
        assert (args.env, args.lake) == ("cluster", "hdfs:///iolake")
    # Airflow renders {{ ds }} into the day's folder
    ingest = tasks[0]["bash_command"].replace("{{ ds }}", "2026-11-21")
    assert "hdfs:///darshan/2026-11-21" in shlex.split(ingest)


def test_default_submit_args_put_delta_on_the_class_path(dag_module, monkeypatch):
    from iolake.spark import DELTA_PACKAGE

    monkeypatch.setenv("IOLAKE_SUBMIT_ARGS", "--master spark://head:7077")
    (t, *_) = dag_module.build_tasks(lake="/l", drop="/d")
    argv = t["argv"]
    assert argv[argv.index("--packages") + 1] == DELTA_PACKAGE
    assert argv[argv.index("--master") + 1] == "spark://head:7077"
    assert "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in argv


def test_crontab_runs_locked_and_logged():
    lines = [ln for ln in (SCHED / "crontab.example").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#") and "=" not in ln.split()[0]]
    run = next(ln for ln in lines if "iolake run" in ln)
    fields = run.split(None, 5)
    assert len(fields) == 6 and all(re.fullmatch(r"[\d*/,-]+", f) for f in fields[:5])
    assert "flock -n" in run and ">>" in run and "2>&1" in run
    # the iolake arguments (shell substitutions aside) are accepted by the iolake parser
    cmd = run.split("iolake run", 1)[1].split(">>")[0]
    cmd = re.sub(r'"\$\(date[^)]*\)"|\$\(date[^)]*\)', "20260101", cmd)
    argv = shlex.split(cmd.replace('"$IOLAKE_DROP/20260101"', "/data/darshan/2026/01/01")
                       .replace('"$IOLAKE_LAKE"', "/data/iolake"))
    args = iolake_parser().parse_args(["run", *argv])
    assert args.env == "cluster" and args.lake == "/data/iolake" and len(args.inputs) == 1
    maintain = next(ln for ln in lines if "iolake maintain" in ln)
    assert "flock" in maintain
    margv = shlex.split(maintain.split("iolake maintain", 1)[1].split(">>")[0].replace('"$IOLAKE_LAKE"', "/l"))
    assert iolake_parser().parse_args(["maintain", *margv]).env == "cluster"
