"""Session-wide fixtures: the shared data folder and one lean local SparkSession with Delta; the
xdist scheduler of `make test`. The skip/fail rule and the paths are in tests/support/data.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.data import shared_path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_path()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from iolake.config import load_config
    from iolake.spark import build_session

    warehouse = tmp_path_factory.mktemp("warehouse")
    session = build_session(
        app_name="iolake-tests",
        master="local[2]",
        extra={
            **load_config("local").spark.properties,
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.sql.warehouse.dir": str(warehouse),
            # one JVM serves the whole suite, whose tests run every stage in process: 1g ran out of heap,
            # and 4g once late in a CI run (the JVM exits on OutOfMemoryError, failing every later test);
            # 6g too, while each broadcast join's table held a whole 64 MiB page (3.4 GB of live pages
            # building the report lake) until conf/local.yaml set spark.buffer.pageSize (260 MB since)
            "spark.driver.memory": "6g",
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_services(tmp_path_factory):
    """An S3 server (buckets `lake` and `mlflow`) and an MLflow tracking server whose artifacts
    live in it, shared by the S3 module and the cluster test (one xdist group, below)."""
    from tests.support.services import MlflowServer, S3Server

    root = tmp_path_factory.mktemp("services")
    s3 = S3Server(root / "s3").start()
    try:
        s3.bucket("lake")
        s3.bucket("mlflow")
        ml = MlflowServer(root / "mlflow", "s3://mlflow/artifacts", s3.env()).start()
    except BaseException:
        s3.stop()
        raise
    yield s3, ml
    ml.stop()
    s3.stop()


@pytest.fixture(scope="session")
def cluster_s3_run(s3_services, tmp_path_factory):
    """The whole pipeline on the sample logs, run once on a Spark standalone cluster (master and
    two workers on this machine) into `s3://lake/lake`, the models on the MLflow server: the
    cluster test checks the run, the S3 module reads and maintains its lake
    (tests/support/lakes.py `cluster_s3_run`)."""
    from tests.support.lakes import cluster_s3_run as run

    return run(*s3_services, tmp_path_factory.mktemp("cluster-s3"))


@pytest.fixture(autouse=True, scope="module")
def _release_cached_frames():
    """Cached DataFrames of one test module must not fill the shared JVM's heap for the next."""
    yield
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.catalog.clearCache()


# Test modules that share one lake built once per process (tests/support/lakes.py): under
# pytest-xdist (`make test` runs two workers) they must run in the same worker, or each worker
# builds the lake.
SHARED_LAKE_GROUPS = {
    "tests/jobs/test_first_run.py": "first_run_lake",
    "tests/jobs/test_tags.py": "first_run_lake",
    "tests/jobs/test_fleet.py": "first_run_lake",
    "tests/services/test_s3_lake.py": "first_run_lake",
    "tests/cluster/test_standalone.py": "first_run_lake",
    "tests/apps/test_report.py": "report_lake",
    "tests/examples/test_examples.py": "report_lake",
    "tests/apps/test_derived_metrics_pydarshan.py": "pydarshan_lake",
    "tests/apps/test_job_summary_pydarshan.py": "pydarshan_lake",
    "tests/apps/test_dxt_heatmap_pydarshan.py": "pydarshan_lake",
}


def pytest_xdist_make_scheduler(config, log):
    """`make test`'s two xdist workers: each test module goes whole to one worker (its
    module-scoped lakes are built once), and modules sharing a session lake go to the same one.
    (xdist's own `--dist loadgroup` marks do not reach the scheduler under pytest 9.)

    Scopes keep xdist's order (most tests first), which leaves the one-test cluster module for
    the end. Handing the longest modules out first was measured on fresh clones and gains
    nothing: 35 min 32 s against 36 min 34 s in xdist's order the same day (32 min 50 s the day
    before), as the cluster test (734 s against 540 s) and the IOR-sweep lake (459 s against
    279 s set-up) then run side by side on the 2 cores."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SHARED_LAKE_GROUPS.get(module, module)

    return ModuleScheduling(config, log)
