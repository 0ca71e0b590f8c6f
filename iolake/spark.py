"""The one place a SparkSession is built: Delta enabled, lean for one machine, same for tests.

Under `spark-submit` the JVM already exists: Delta must then come from `--packages`
(see README, "Run on a cluster"), and this only sets SQL extensions if they are missing.
"""
from __future__ import annotations

import os
import sys

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


def build_session(app_name: str = "iolake", master: str | None = None, extra: dict | None = None):
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
    for k, v in props.items():
        builder = builder.config(k, v)
    if not _running_under_submit():
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(builder)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _running_under_submit() -> bool:
    # spark-submit starts the JVM first and tells the Python side through this variable.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_from_config(conf) -> "object":
    return build_session(conf.spark.app_name, conf.spark.master, conf.spark.properties)
