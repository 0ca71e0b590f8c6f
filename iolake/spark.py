"""The one place a SparkSession is built: Delta enabled, lean for one machine, same for tests.

Under `spark-submit` the JVM already exists: Delta must then come from `--packages`
(see docs/running-nightly.md, "spark-submit on any cluster"), and this only sets SQL extensions if they are missing.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

DELTA_PACKAGE = "io.delta:delta-spark_4.2_2.13:4.4.0"
DELTA_SQL = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def _python_env() -> None:
    # Executors must run the same interpreter (and venv) as the driver (STACK.md gotcha 2).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


LOG_FILE_KEY = "spark.iolake.logFile"  # set on a session whose JVM logs go to a file
LOG4J2 = """# written by iolake/spark.py: Spark's log lines go to this run's file, not the console
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""


def build_session(
    app_name: str = "iolake",
    master: str | None = None,
    extra: dict | None = None,
    log_file: str | None = None,
    packages: list[str] | None = None,
):
    """The SparkSession (the active one if there is one). With `log_file`, a new local JVM writes
    its log lines (and what it prints while starting: Ivy's resolution report) to that file.
    `packages`: Maven coordinates added to Delta's (ignored under spark-submit: `--packages`)."""
    from pyspark.sql import SparkSession

    _python_env()
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    props = dict(DELTA_SQL)
    props.update(extra or {})
    quiet = log_file is not None and not _running_under_submit()
    if quiet:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        cfg = Path(log_file).with_suffix(".log4j2.properties")
        cfg.write_text(LOG4J2.format(path=log_file))
        opts = props.get("spark.driver.extraJavaOptions", "")
        props["spark.driver.extraJavaOptions"] = (
            f"{opts} -Dlog4j.configurationFile=file:{cfg}".strip()
        )
        props[LOG_FILE_KEY] = log_file
    for k, v in props.items():
        builder = builder.config(k, v)
    if not _running_under_submit():
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(builder, extra_packages=packages or None)
    if quiet:
        with _output_to(log_file):
            session = builder.getOrCreate()
    else:
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("WARN")
    return session


@contextlib.contextmanager
def _output_to(path: str):
    """Point this process's stdout/stderr file descriptors at `path` (the JVM it starts inherits them)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def spark_log_file(conf, run_id: str | None) -> str | None:
    """Where a run's Spark log goes: LAKE/_logs/spark-RUN_ID.log for a local lake; for a lake on
    an object store, the machine's temporary folder (iolake-logs/), as a log is written line by
    line and an object store has no append. None under spark-submit (the cluster's logs)."""
    import tempfile

    root = conf.lake.root
    if run_id is None or _running_under_submit():
        return None
    folder = Path(tempfile.gettempdir(), "iolake-logs") if "://" in root else Path(root, "_logs")
    return str(folder / f"spark-{run_id}.log")


def log_file_of(spark) -> str | None:
    """The file this session's JVM logs to, or None when they go to the console."""
    return spark.conf.get(LOG_FILE_KEY, None)


def _running_under_submit() -> bool:
    # spark-submit starts the JVM first and tells the Python side through this variable.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_from_config(conf, log_file: str | None = None) -> object:
    """The session for `conf`; a lake on S3 adds the S3A connector and its settings
    (`iolake/lake/objectstore.py`) under the configured properties, which win."""
    from iolake.lake import objectstore

    props, packages = dict(conf.spark.properties), []
    if objectstore.is_s3(conf.lake.root):
        props = {**objectstore.spark_properties(), **props}
        packages = [objectstore.HADOOP_AWS]
    return build_session(conf.spark.app_name, conf.spark.master, props, log_file, packages)


ROWS_PER_TASK = 2_000  # rows of a driver-built frame per task (`local_frame`, decision 0040)


def local_frame(spark, rows, schema, rows_per_task: int = ROWS_PER_TASK):
    """A DataFrame of `rows` (tuples in `schema`'s order) built on the driver, in slices of at most
    `rows_per_task` rows.

    `createDataFrame` of a Python list parallelizes it into the session's default parallelism
    (2 tasks on local[2]), and each task carries its slice inside itself, serialized whole by the
    driver when the task is sent. A promotion night's advice rows made one task too large for the
    driver's heap (decision 0040). Here a task carries at most `rows_per_task` rows, however many
    rows there are."""
    rows = list(rows)
    slices = max(1, -(-len(rows) // rows_per_task))
    if slices == 1:
        return spark.createDataFrame(rows, schema)
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, slices), schema)
