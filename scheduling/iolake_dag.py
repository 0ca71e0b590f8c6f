"""Airflow DAG `iolake`: the pipeline nightly, one `spark-submit` task per stage of pipeline.yaml.

Copy (or symlink) this file into Airflow's `dags/` folder on a host where the project is
installed. Each task spark-submits one stage through the cluster entry
`cluster/pipeline_main.py stage NAME` (it checks the executors can import the project, then runs
the stage module's `main`; submitting `jobs/<stage>.py` itself would let `jobs/` shadow the
`features` package) with `--env cluster --lake LAKE`; `ingest` reads the day's drop folder
`DROP/{{ ds }}` (Airflow's logical date: the day that just ended). Edges follow the stages' `depends_on`, so `covering`
runs beside `features`, and `tags`/`labels` beside each other.

Settings (environment of the Airflow scheduler and workers):
  IOLAKE_HOME         the project folder on the workers (default: this file's parent's parent)
  IOLAKE_LAKE         lake root (default hdfs:///iolake)
  IOLAKE_DROP         folder of the day folders (default hdfs:///darshan; ingest reads DROP/<ds>)
  IOLAKE_ENV          conf overlay (default cluster)
  IOLAKE_SPARK_SUBMIT spark-submit command (default spark-submit)
  IOLAKE_SUBMIT_ARGS  extra spark-submit arguments, e.g. "--master yarn --archives
                      iolake_app.tar.gz#iolake_app --conf spark.executorEnv.PYTHONPATH=iolake_app"
                      (docs/running-nightly.md)
  IOLAKE_SCHEDULE     cron schedule (default "30 2 * * *", 02:30 every night)

A task's exit code is the stage's: 0 ok, 2 usage or configuration, 3 a data-quality gate
stopped a commit (nothing committed; retrying will not help), 1 anything else.

The task graph and commands come from `build_tasks()`, a pure function (no Airflow import), so
the file imports and is tested without Airflow; the DAG object is built only when Airflow is
importable.
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAY = "{{ ds }}"
ENTRY = (
    "cluster/pipeline_main.py"  # spark-submit entry: `stage NAME <the stage module's arguments>`
)

if str(ROOT) not in sys.path:  # the DAG folder is not the project: make `iolake` importable
    sys.path.insert(0, str(ROOT))


def default_submit_args() -> list[str]:
    """Delta on the JVM's class path, as docs/running-nightly.md shows, plus IOLAKE_SUBMIT_ARGS."""
    from iolake.spark import DELTA_PACKAGE, DELTA_SQL

    args = ["--packages", DELTA_PACKAGE]
    for k, v in DELTA_SQL.items():
        args += ["--conf", f"{k}={v}"]
    return args + shlex.split(os.environ.get("IOLAKE_SUBMIT_ARGS", ""))


def build_tasks(
    lake: str,
    drop: str,
    env: str = "cluster",
    project: str | Path = ROOT,
    spark_submit: str = "spark-submit",
    submit_args: list[str] | None = None,
    day: str = DAY,
    pipeline: str | Path | None = None,
) -> list[dict]:
    """One task per pipeline.yaml stage, in order: task_id, depends_on, module, script, args,
    stage_args, argv, bash_command.

    `args` follow the entry script on the spark-submit line (`stage NAME` + `stage_args`);
    `stage_args` are what the stage module's argparse sees; `bash_command` is the whole line,
    with `day` (Airflow's `{{ ds }}`) left for Airflow to render.
    """
    from iolake.pipeline import PIPELINE_FILE, load_pipeline

    submit_args = default_submit_args() if submit_args is None else list(submit_args)
    tasks = []
    for stage in load_pipeline(pipeline or PIPELINE_FILE):
        script = f"{Path(project)}/{ENTRY}"
        stage_args = ([f"{drop.rstrip('/')}/{day}"] if stage.name == "ingest" else []) + [
            "--env",
            env,
            "--lake",
            lake,
        ]
        args = ["stage", stage.name, *stage_args]
        argv = [
            *shlex.split(spark_submit),
            *submit_args,
            "--name",
            f"iolake-{stage.name}",
            script,
            *args,
        ]
        tasks.append(
            {
                "task_id": stage.name,
                "depends_on": list(stage.depends_on),
                "module": stage.module,
                "script": script,
                "args": args,
                "stage_args": stage_args,
                "argv": argv,
                "bash_command": shlex.join(argv),
            }
        )
    return tasks


def make_dag():  # pragma: no cover - needs Airflow
    from airflow import DAG

    try:
        from airflow.providers.standard.operators.bash import BashOperator  # Airflow 3
    except ImportError:
        from airflow.operators.bash import BashOperator  # Airflow 2

    tasks = build_tasks(
        lake=os.environ.get("IOLAKE_LAKE", "hdfs:///iolake"),
        drop=os.environ.get("IOLAKE_DROP", "hdfs:///darshan"),
        env=os.environ.get("IOLAKE_ENV", "cluster"),
        project=os.environ.get("IOLAKE_HOME", str(ROOT)),
        spark_submit=os.environ.get("IOLAKE_SPARK_SUBMIT", "spark-submit"),
    )
    with DAG(
        dag_id="iolake",
        schedule=os.environ.get("IOLAKE_SCHEDULE", "30 2 * * *"),
        start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        max_active_runs=1,  # runs never overlap (ingest is exactly once anyway)
        default_args={"retries": 1, "retry_delay": dt.timedelta(minutes=10)},
        tags=["iolake"],
        doc_md=__doc__,
    ) as dag:
        ops = {
            t["task_id"]: BashOperator(
                task_id=t["task_id"],
                bash_command=t["bash_command"],
                cwd=os.environ.get("IOLAKE_HOME", str(ROOT)),
            )
            for t in tasks
        }
        for t in tasks:
            for dep in t["depends_on"]:
                ops[dep] >> ops[t["task_id"]]
    return dag


try:  # Airflow is optional: without it this file only offers build_tasks()
    import airflow  # noqa: F401
except ImportError:
    dag = None
else:  # pragma: no cover - needs Airflow
    dag = make_dag()
