"""Real servers for the tests, started as processes on loopback: an S3-compatible object store and
an MLflow tracking server.

The object store is S3Proxy (Apache-2.0, `org.gaul:s3proxy`, the jar with its dependencies from
Maven Central, fetched by `make setup` into `.venv/services/`) over a local folder: a real S3
HTTP server with AWS signatures, multipart uploads and conditional writes (`If-None-Match`,
`If-Match`), in its own JVM. The MLflow server is `mlflow server` from the venv, with a SQLite
backend and its artifact store in a bucket of that S3 server.

`S3Server.env()` gives the variables every client of the lake reads (pyarrow, delta-rs, boto3,
iolake's S3A settings, MLflow's artifact client): the tests pass them to subprocesses or set them
with monkeypatch.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.data import ROOT

S3PROXY_JAR = Path(
    os.environ.get(
        "IOLAKE_S3PROXY_JAR", ROOT / ".venv" / "services" / "s3proxy-jar-with-dependencies.jar"
    )
)
ACCESS_KEY, SECRET_KEY = "iolake-test", "iolake-test-secret"


def need_s3proxy() -> Path:
    """The S3Proxy jar; skips the test with a message when it is missing, fails when CI is set."""
    import pytest

    if S3PROXY_JAR.is_file():
        return S3PROXY_JAR
    msg = f"S3Proxy jar not found at {S3PROXY_JAR}: `make setup` fetches it (or set IOLAKE_S3PROXY_JAR)"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(proc: subprocess.Popen, ready, what: str, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"{what} exited with {proc.returncode}; its log: {log.read_text()[-3000:]}"
            )
        if ready():
            return
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError(
        f"{what} not ready after {timeout_s:.0f} s; its log: {log.read_text()[-3000:]}"
    )


def _http_answers(url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(url, timeout=2)
        return True
    except urllib.error.HTTPError:
        return True  # any HTTP answer (S3's 403 for an anonymous listing) means it is serving
    except OSError:
        return False


class S3Server:
    """S3Proxy on 127.0.0.1:`port`, storing objects under `root`."""

    def __init__(self, root: Path, port: int | None = None):
        self.root, self.port = Path(root), port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = self.root / "s3proxy.log"

    def start(self, timeout_s: float = 120) -> S3Server:
        jar = need_s3proxy()
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        props = self.root / "s3proxy.properties"
        props.write_text(
            "\n".join(
                [
                    f"s3proxy.endpoint={self.url}",
                    "s3proxy.authorization=aws-v2-or-v4",
                    f"s3proxy.identity={ACCESS_KEY}",
                    f"s3proxy.credential={SECRET_KEY}",
                    "jclouds.provider=filesystem-nio2",
                    f"jclouds.filesystem.basedir={data}",
                ]
            )
            + "\n"
        )
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                ["java", "-Xmx512m", "-jar", str(jar), "--properties", str(props)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _wait(self.proc, lambda: _http_answers(self.url), "S3Proxy", self.log, timeout_s)
        return self

    def env(self, **extra) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": self.url,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "MLFLOW_S3_ENDPOINT_URL": self.url,
            **extra,
        }

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def bucket(self, name: str) -> str:
        """Create bucket `name` (if needed); returns s3://name."""
        s3 = self.client()
        existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
        if name not in existing:
            s3.create_bucket(Bucket=name)
        return f"s3://{name}"

    def stop(self) -> None:
        _stop(self.proc)


class MlflowServer:
    """`mlflow server` on 127.0.0.1:`port`: SQLite backend under `root`, artifacts in `artifacts`
    (an s3:// URI of an S3Server, whose `env` the server gets)."""

    def __init__(
        self, root: Path, artifacts: str, env: dict[str, str], app_name: str | None = None
    ):
        self.root, self.artifacts, self.env = Path(root), artifacts, env
        self.app_name = app_name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = self.root / "mlflow-server.log"

    def start(self, timeout_s: float = 300) -> MlflowServer:
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = [
            str(Path(sys.executable).with_name("mlflow")),
            "server",
            "--backend-store-uri",
            f"sqlite:///{self.root / 'mlflow.db'}",
            "--artifacts-destination",
            self.artifacts,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
        ]
        if self.app_name:
            cmd += ["--app-name", self.app_name]
        env = {**os.environ, **self.env}
        if self.app_name == "basic-auth":
            env["MLFLOW_AUTH_CONFIG_PATH"] = str(self._auth_config())
            env["MLFLOW_FLASK_SERVER_SECRET_KEY"] = "iolake-test-csrf-key"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        _wait(
            self.proc,
            lambda: _http_answers(f"{self.url}/health"),
            "mlflow server",
            self.log,
            timeout_s,
        )
        return self

    def _auth_config(self) -> Path:
        ini = self.root / "basic_auth.ini"
        ini.write_text(
            "[mlflow]\n"
            "default_permission = READ\n"
            f"database_uri = sqlite:///{self.root / 'auth.db'}\n"
            "admin_username = admin\n"
            "admin_password = iolake-admin-password-1\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        )
        return ini

    def stop(self) -> None:
        _stop(self.proc)


def _stop(proc: subprocess.Popen | None) -> None:
    import signal

    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
