"""The whole pipeline on a real Spark standalone cluster (master + 2 workers on this machine), with
its lake on an S3 server and its models on an MLflow tracking server, gives the same tables as
the same pipeline run locally on a folder.

One cluster run (`cluster/standalone.sh`, i.e. `cluster.standalone`) over the sample logs, with
the first run's models (`tests.support.lakes.cluster_s3_run`, a session fixture the S3 module
reads too); the local reference is the first run's own lake (`tests.support.lakes.first_run_lake`,
built once per session and shared), so the suite runs the pipeline on these logs locally once.
The sample logs give the lake no two-tier label, so labels come from the shipped benchmark on the
cluster as locally: labels computed from a lake's own two-tier files are tested locally
(tests/jobs/test_models.py) by the same code the cluster runs.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.compare import compare
from tests.support.lakes import first_run_lake

pytestmark = pytest.mark.slow


def test_standalone_cluster_run_on_s3_equals_local_run(
    spark, cluster_s3_run, s3_services, tmp_path_factory, monkeypatch
):
    run = cluster_s3_run
    out, run_dir = run["out"], run["run_dir"]
    assert run["rc"] == 0, out[-5000:]

    # It really ran on the standalone cluster, with the project shipped in the archive.
    assert "workers registered" in out and "spark://127.0.0.1:" in out
    preflight = [ln for ln in out.splitlines() if ln.startswith("[preflight]")]
    assert preflight and all(
        f"{run_dir}/work-" in ln and "/iolake_app/iolake_native/" in ln for ln in preflight
    ), out[-5000:]
    for w in (1, 2):  # both workers ran an executor, each with its own unpacked copy of the project
        assert list((run_dir / f"work-{w}").glob("app-*/*/iolake_app/iolake/cli.py")), (
            f"worker {w} ran no executor"
        )
    assert "org.apache.hadoop:hadoop-aws:" in out  # the S3A connector went with the submit
    assert re.search(r"iolake-placement v1 \(\w+, refit on \d+ labels\) -> @champion", out), out[
        -5000:
    ]
    assert "cluster stopped" in out
    # ... and left no daemon or executor behind.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(run_dir) not in ps

    # every table, row by row, through delta-rs (the suite's JVM has no S3A connector)
    s3, _ = s3_services
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    local = first_run_lake(tmp_path_factory)  # the same logs and models, run locally
    rows = compare(str(local["lake"]), run["lake"])
    unequal = [r for r in rows if not r["equal"]]
    assert not unequal, unequal
    counts = {r["table"]: r["rows_a"] for r in rows}
    print("equal tables (rows):", counts)
    assert counts["bronze/logs"] == 6 and counts["gold/placement_predictions"] > 0
    assert {"bronze/io_ops", "silver/covering_sets", "gold/tuning_advice"} <= set(counts)
