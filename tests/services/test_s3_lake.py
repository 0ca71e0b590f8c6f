"""The lake on an S3-compatible object store, the models on an MLflow tracking server: both real
server processes on loopback (tests/support/services.py: S3Proxy over a folder; `mlflow server`
with a SQLite backend and its artifacts in a bucket of that S3 server).

- the whole pipeline with `--lake s3://...` (run once, on the standalone cluster: the session
  fixture `cluster_s3_run` of tests/conftest.py, whose test, tests/cluster/test_standalone.py,
  checks that it wrote the same tables, row by row, as the first-run lake on a folder) logs every
  sample log and keeps its tables on the object store; `iolake report`, `IOFrame.from_lake`, the
  DuckDB example and `maintain` work on it; the models are registered, promoted and loaded by
  alias on the server, their artifacts in the object store; the registry's consumer scores with
  MLflow alone;
- one writer at a time (iolake/lake/lock.py): an ingest killed with SIGKILL leaves its lease
  behind; two ingests at once on overlapping inputs then take it over after `lake.lock_ttl_s`,
  one after the other, and end with every log once, as a clean run;
- a missing alias, an unreachable tracking server and refused credentials each end with a message
  naming the server (and the model and alias), exit code 2 or 4, and no table written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.compare import compare
from tests.support.data import ROOT
from tests.support.lakes import FIRST_RUN_MODELS, conf_dir_with, first_run_lake
from tests.support.services import MlflowServer, free_port

pytestmark = pytest.mark.slow  # three servers and several pipeline runs: `make test` only

MODELS = ("iolake-placement", "iolake-bandwidth", "iolake-job-bandwidth")
BRONZE = ("logs", "jobs", "files", "posix", "mpiio", "stdio", "io_ops", "heatmap", "modules")


@pytest.fixture(scope="module")
def servers(s3_services):
    return s3_services


@pytest.fixture
def s3_env(servers, monkeypatch):
    """This process's environment pointed at the S3 server (delta-rs, pyarrow, boto3 read it)."""
    s3, _ = servers
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    return s3.env()


def _conf(dest: Path, tracking_uri: str, **lake) -> Path:
    sections = {"mlflow": {"tracking_uri": tracking_uri}, **({"lake": lake} if lake else {})}
    # each command a JVM of its own
    return conf_dir_with(dest, FIRST_RUN_MODELS, quick_jit=True, **sections)


def _iolake(args: list[str], env: dict, timeout: float = 1800, **kw):
    """`iolake ARGS` in its own process (its JVM loads the S3A connector)."""
    return subprocess.run(
        [sys.executable, "-m", "iolake.cli", *args],
        env={**os.environ, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def _samples() -> list[Path]:
    import darshan

    return sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))


@pytest.fixture(scope="module")
def s3_run(cluster_s3_run):
    """The pipeline's run of the sample logs into s3://lake/lake, tracking on the server."""
    run = cluster_s3_run
    assert run["rc"] == 0, "the cluster run on S3 failed:\n" + run["out"][-6000:]
    return run


@pytest.fixture(scope="module")
def local_run(spark, tmp_path_factory):
    return first_run_lake(tmp_path_factory)  # the same logs and models on a local folder


def test_pipeline_on_s3_logs_every_log_and_keeps_its_tables_there(s3_run, servers, s3_env):
    s3, _ = servers
    out = s3_run["out"]
    assert "logs: ok 6, partial 0, quarantined 0" in out, out[-4000:]
    keys = [
        o["Key"]
        for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket="lake")
        for o in page.get("Contents", [])
    ]
    for table in ("bronze/logs", "bronze/io_ops", "silver/covering_sets", "gold/tuning_advice"):
        assert any(k.startswith(f"lake/{table}/_delta_log/") for k in keys), table
        assert any(k.startswith(f"lake/{table}/") and k.endswith(".parquet") for k in keys), table


def test_models_are_registered_and_promoted_on_the_server(s3_run, servers, s3_env):
    from mlflow import MlflowClient

    s3, ml = servers
    client = MlflowClient(tracking_uri=ml.url, registry_uri=ml.url)
    for name in MODELS:
        mv = client.get_model_version_by_alias(name, "champion")
        assert int(mv.version) >= 1
    keys = [
        o["Key"] for o in s3.client().list_objects_v2(Bucket="mlflow").get("Contents", [])
    ]  # the artifacts live in the object store, not on the machine that trained
    assert any(k.endswith("MLmodel") for k in keys), keys[:20]
    assert "[score]" in s3_run["out"] and "[advise]" in s3_run["out"]


def test_consumer_scores_from_the_tracking_server_with_mlflow_alone(s3_run, servers, tmp_path):
    s3, ml = servers
    run = subprocess.run(
        [sys.executable, "-m", "bench.consumer", ml.url],
        env={**os.environ, **s3.env()},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "bb" in run.stdout or "pfs" in run.stdout, run.stdout


def test_report_iofame_and_duckdb_read_the_s3_lake(s3_run, local_run, s3_env, tmp_path):
    from apps.analysis import IOFrame
    from iolake.lake import arrow
    from schemas import TABLES

    logs = arrow.read(s3_run["lake"], TABLES["logs"], columns=["log_id", "status"])
    log_id = sorted(logs.column("log_id").to_pylist())[0]
    s3_frame = IOFrame.from_lake(s3_run["lake"], log_id=log_id)
    local_frame = IOFrame.from_lake(str(local_run["lake"]), log_id=log_id)
    assert s3_frame.jobs.equals(local_frame.jobs)

    rep = _iolake(
        ["report", log_id[:10], "--lake", s3_run["lake"], "--format", "json"],
        s3_env,
        timeout=300,
    )
    assert rep.returncode == 0, rep.stderr[-3000:]
    local = _iolake(
        ["report", log_id[:10], "--lake", str(local_run["lake"]), "--format", "json"],
        {},
        timeout=300,
    )
    assert local.returncode == 0, local.stderr[-3000:]
    a, b = json.loads(rep.stdout), json.loads(local.stdout)
    assert a.get("findings") == b.get("findings") and a.get("log_id", log_id) == b.get(
        "log_id", log_id
    )

    def duck(lake):
        r = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "without_spark.py"), "--lake", lake, "--json"],
            env={**os.environ, **s3_env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(r.stdout)

    assert duck(s3_run["lake"]) == duck(str(local_run["lake"]))


def test_maintain_on_s3_keeps_every_row(s3_run, local_run, servers, s3_env):
    s3, _ = servers
    # two tables, the largest and the ledger's: OPTIMIZE, Z-order and VACUUM through S3A (every
    # table would add minutes and exercise nothing more)
    m = _iolake(
        [
            "maintain",
            "--lake",
            s3_run["lake"],
            "--conf-dir",
            str(s3_run["conf"]),
            "--table",
            "io_ops",
            "--table",
            "logs",
        ],
        s3.env(),
        timeout=1800,
    )
    assert m.returncode == 0, (m.stdout + m.stderr)[-4000:]
    unequal = [r for r in compare(str(local_run["lake"]), s3_run["lake"]) if not r["equal"]]
    assert not unequal, unequal


def _bronze_equal(a: str, b: str) -> list[dict]:
    return [r for r in compare(a, b) if r["table"].startswith("bronze/")]


def test_killed_ingest_then_two_at_once_on_s3_add_every_log_once(
    servers, local_run, s3_env, tmp_path
):
    """An ingest killed with SIGKILL in the middle of its commits leaves its lease behind; two
    ingests started together on overlapping inputs (two logs in both) then wait for it, one takes
    the dead lease over after the TTL, the other waits for that one: the lake ends with every log
    once, as the clean local run. (One scenario for both properties: each ingest on S3 starts a
    JVM with hadoop-aws, the slowest part of the module.)"""
    s3, ml = servers
    conf = _conf(tmp_path / "conf", ml.url, lock_ttl_s=10)
    lake = "s3://lake/killed"
    cmd = [sys.executable, "-m", "iolake.cli", "ingest", "--lake", lake, "--conf-dir", str(conf)]
    logs = [str(p) for p in _samples()]
    env = {**os.environ, **s3.env()}
    victim = subprocess.Popen(
        cmd + logs, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    seen = []
    for line in victim.stdout:  # kill it in the middle of its commits
        seen.append(line)
        if line.startswith("[commit] files"):
            os.killpg(victim.pid, signal.SIGKILL)
            break
    victim.wait(timeout=60)
    assert victim.returncode == -signal.SIGKILL, "".join(seen)[-3000:]
    lease = s3.client().get_object(Bucket="lake", Key="killed/_lock/writer.json")
    assert json.loads(lease["Body"].read())["pid"]  # the dead run's lease is still there

    a, b = logs[:4], logs[2:]  # two in both
    p1 = subprocess.Popen(cmd + a, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    p2 = subprocess.Popen(cmd + b, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    out1, _ = p1.communicate(timeout=1800)
    out2, _ = p2.communicate(timeout=1800)
    assert p1.returncode == 0 and p2.returncode == 0, (out1 + out2)[-4000:]
    both = out1 + out2
    assert both.count("took over the writer lease") == 1, both[-4000:]  # the dead one's, once
    assert "[lock] waiting for run" in both  # and one of them waited for the other
    rows = _bronze_equal(str(local_run["lake"]), lake)
    assert rows and all(r["equal"] for r in rows), rows


def test_missing_alias_names_the_alias_model_and_server(s3_run, servers, s3_env):
    from models import registry

    s3, ml = servers
    import mlflow

    mlflow.set_tracking_uri(ml.url)
    mlflow.set_registry_uri(ml.url)
    with pytest.raises(registry.ModelAliasMissing) as e:
        registry.version_by_alias("iolake-placement", "no-such-alias")
    msg = str(e.value)
    assert "'no-such-alias'" in msg and "'iolake-placement'" in msg and ml.url in msg


def test_unreachable_tracking_server_fails_fast_naming_it_and_writes_nothing(
    s3_run, servers, s3_env, tmp_path
):
    from iolake.lake import arrow

    s3, _ = servers
    dead = f"http://127.0.0.1:{free_port()}"
    conf = _conf(tmp_path / "conf", dead)
    before = arrow.versions(s3_run["lake"])
    r = _iolake(
        ["stage", "score", "--lake", s3_run["lake"], "--conf-dir", str(conf)], s3.env(), 900
    )
    assert r.returncode == 4, (r.stdout + r.stderr)[-3000:]
    assert f"the MLflow tracking server {dead}" in r.stderr and "cannot be reached" in r.stderr
    assert arrow.versions(s3_run["lake"]) == before


def test_refused_credentials_name_the_service_and_write_nothing(s3_run, servers, s3_env, tmp_path):
    from iolake.lake import arrow

    s3, ml = servers
    before = arrow.versions(s3_run["lake"])
    conf = _conf(tmp_path / "conf", ml.url)
    r = _iolake(
        ["stage", "score", "--lake", s3_run["lake"], "--conf-dir", str(conf)],
        s3.env(AWS_SECRET_ACCESS_KEY="not-the-secret"),
        300,
    )
    assert r.returncode == 4, (r.stdout + r.stderr)[-3000:]
    assert f"the object store at {s3.url} holding {s3_run['lake']} refused" in r.stderr
    assert "AWS_SECRET_ACCESS_KEY" in r.stderr
    assert arrow.versions(s3_run["lake"]) == before


def test_refused_tracking_credentials_name_the_server(servers, tmp_path, monkeypatch):
    from models import tracking

    s3, _ = servers
    auth = MlflowServer(tmp_path / "auth", "s3://mlflow/auth-artifacts", s3.env(), "basic-auth")
    auth.start()
    try:
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong-password")
        with pytest.raises(tracking.TrackingUnavailable) as e:
            tracking.check_server(auth.url)
        assert f"the MLflow tracking server {auth.url} refused the credentials given" in str(
            e.value
        )
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "iolake-admin-password-1")
        tracking.check_server(auth.url)  # the right password passes
    finally:
        auth.stop()
