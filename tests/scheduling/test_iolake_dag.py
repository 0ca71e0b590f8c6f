"""scheduling/: the Airflow DAG's task graph and commands (without Airflow), and the cron example."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
import yaml

from iolake.cli import parser as iolake_parser

ROOT = Path(__file__).resolve().parents[2]
SCHED = ROOT / "scheduling"

# The task graph, written out: stage order and depends_on edges (pipeline.yaml must say the same).
STAGES = [
    "ingest",
    "features",
    "covering",
    "tags",
    "watch",
    "labels",
    "train",
    "score",
    "advise",
    "fleet",
]
EDGES = {
    "ingest": [],
    "features": ["ingest"],
    "covering": ["ingest"],
    "tags": ["features"],
    "watch": ["features"],
    "labels": ["features"],
    "train": ["labels", "watch"],
    "score": ["train"],
    "advise": ["watch", "score", "tags"],
    "fleet": ["watch", "tags", "score", "advise"],
}


@pytest.fixture(scope="module")
def dag_module():
    spec = importlib.util.spec_from_file_location("iolake_dag", SCHED / "iolake_dag.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # must import without Airflow
    return mod


def test_iolake_dag_imports_without_airflow(dag_module):
    if importlib.util.find_spec("airflow") is None:
        assert dag_module.dag is None
    else:  # pragma: no cover - Airflow installed: the DAG object is built
        assert dag_module.dag is not None and dag_module.dag.dag_id == "iolake"


def test_iolake_dag_pipeline_yaml_declares_the_graph():
    """pipeline.yaml read as plain YAML (not through iolake.pipeline): the stages and edges above."""
    raw = yaml.safe_load((ROOT / "pipeline.yaml").read_text())["stages"]
    assert [s["name"] for s in raw] == STAGES
    assert {s["name"]: list(s.get("depends_on") or []) for s in raw} == EDGES


def test_iolake_dag_tasks_follow_the_stage_graph(dag_module):
    tasks = dag_module.build_tasks(lake="hdfs:///iolake", drop="hdfs:///darshan/")
    assert [t["task_id"] for t in tasks] == STAGES
    assert {t["task_id"]: list(t["depends_on"]) for t in tasks} == EDGES


def test_iolake_dag_commands_are_spark_submits_of_the_cluster_entry(dag_module):
    tasks = dag_module.build_tasks(
        lake="hdfs:///iolake",
        drop="hdfs:///darshan/",
        env="cluster",
        project="/opt/iolake",
        spark_submit="/opt/spark/bin/spark-submit",
        submit_args=["--master", "yarn"],
    )
    entry = "/opt/iolake/cluster/pipeline_main.py"
    assert (ROOT / "cluster" / "pipeline_main.py").is_file()
    for t in tasks:
        name = t["task_id"]
        day = (
            ["hdfs:///darshan/{{ ds }}"] if name == "ingest" else []
        )  # one slash, whatever `drop` ends with
        assert t["argv"] == [
            "/opt/spark/bin/spark-submit",
            "--master",
            "yarn",
            "--name",
            f"iolake-{name}",
            entry,
            "stage",
            name,
            *day,
            "--env",
            "cluster",
            "--lake",
            "hdfs:///iolake",
        ], name
        assert shlex.split(t["bash_command"]) == t["argv"]
        # the entry hands its arguments to the `iolake` command: `iolake stage NAME ...` must accept them
        args = iolake_parser().parse_args(t["argv"][t["argv"].index(entry) + 1 :])
        assert (args.cmd, args.stage, args.env, args.lake) == (
            "stage",
            name,
            "cluster",
            "hdfs:///iolake",
        )
        assert getattr(args, "inputs", []) == day
    # Airflow renders {{ ds }} into the day's folder
    ingest = tasks[0]["bash_command"].replace("{{ ds }}", "2026-11-21")
    assert "hdfs:///darshan/2026-11-21" in shlex.split(ingest)


def test_iolake_dag_default_submit_args_put_delta_on_the_class_path(dag_module, monkeypatch):
    monkeypatch.setenv("IOLAKE_SUBMIT_ARGS", "--master spark://head:7077")
    (t, *_) = dag_module.build_tasks(lake="/l", drop="/d")
    argv = t["argv"]
    assert re.fullmatch(
        r"io\.delta:delta-spark_[\d.]+_2\.13:[\d.]+", argv[argv.index("--packages") + 1]
    )
    assert argv[argv.index("--master") + 1] == "spark://head:7077"
    confs = {argv[i + 1] for i, a in enumerate(argv) if a == "--conf"}
    assert {
        "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
    } <= confs


def test_iolake_dag_crontab_runs_locked_and_logged():
    lines = [
        ln
        for ln in (SCHED / "crontab.example").read_text().splitlines()
        if ln.strip() and not ln.lstrip().startswith("#") and "=" not in ln.split()[0]
    ]
    run = next(ln for ln in lines if "iolake run" in ln)
    fields = run.split(None, 5)
    assert len(fields) == 6 and all(re.fullmatch(r"[\d*/,-]+", f) for f in fields[:5])
    assert "flock -n" in run and ">>" in run and "2>&1" in run
    # the iolake arguments (shell substitutions aside) are accepted by the iolake parser
    cmd = run.split("iolake run", 1)[1].split(">>")[0]
    cmd = re.sub(r'"\$\(date[^)]*\)"|\$\(date[^)]*\)', "20260101", cmd)
    argv = shlex.split(
        cmd.replace('"$IOLAKE_DROP/20260101"', "/data/darshan/2026/01/01").replace(
            '"$IOLAKE_LAKE"', "/data/iolake"
        )
    )
    args = iolake_parser().parse_args(["run", *argv])
    assert args.env == "cluster" and args.lake == "/data/iolake" and len(args.inputs) == 1
    maintain = next(ln for ln in lines if "iolake maintain" in ln)
    assert "flock" in maintain
    margv = shlex.split(
        maintain.split("iolake maintain", 1)[1].split(">>")[0].replace('"$IOLAKE_LAKE"', "/l")
    )
    assert iolake_parser().parse_args(["maintain", *margv]).env == "cluster"
