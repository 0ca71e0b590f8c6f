"""Run the whole pipeline on a real Spark standalone cluster started on this machine.

    python -m cluster.standalone [INPUT...] --lake DIR [--mlflow-uri URI] [--workers 2]
    cluster/standalone.sh ...            (the same, with the project's .venv Python)

1. Starts a standalone master and N workers (1 core, 1g each) from the pyspark pip
   distribution (`bin/spark-class ...Master` / `...Worker`), on 127.0.0.1 with free ports;
   logs and work dirs go to the run folder (`--run-dir`, default a new temp folder).
2. Waits until every worker is ALIVE in the master's `/json` status (`--register-timeout`).
3. Packages the project for executors: `iolake_app.tar.gz` holds the project's packages
   (pyproject's `packages.find.include`), `conf/`, `pipeline.yaml` and the compiled native
   decoder `iolake_native` (a .so cannot be imported from a `--py-files` zip). spark-submit ships
   it with `--archives …#iolake_app`; executors unpack it in their work dir and import from it
   (`spark.executorEnv.PYTHONPATH=iolake_app`), not from this checkout.
4. `spark-submit --master spark://127.0.0.1:PORT --packages <Delta> … cluster/pipeline_main.py
   run INPUT... --env cluster --lake LAKE`: every stage of pipeline.yaml in one SparkSession,
   configured by conf/cluster.yaml (plus `--mlflow-uri` and the small-cluster settings below,
   written to a copy of the conf folder in the run folder). A lake on an object store
   (`--lake s3://bucket/lake`) adds the S3A connector and the settings of
   `iolake/lake/objectstore.py`, as a local run does; the workers and executors read the
   credentials and `AWS_ENDPOINT_URL` from the environment this command was started in.
5. Stops the workers and the master, always, and exits with spark-submit's exit code
   (1 when the cluster could not be started).

What every node needs is the same Python (PYSPARK_PYTHON, here this interpreter) with the
pinned third-party stack (pyspark, delta-spark, pyarrow, pandas, mlflow, scikit-learn, …):
on one machine that is `.venv`; on separate nodes see docs/running-nightly.md, "spark-submit on any cluster".
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "cluster" / "pipeline_main.py"
APP = "iolake_app"  # the archive's name on executors (`--archives iolake_app.tar.gz#iolake_app`)
NATIVE = "iolake_native"


class ClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    from pyspark import find_spark_home

    return Path(find_spark_home._find_spark_home())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- packaging


def project_packages(root: Path = ROOT) -> list[str]:
    """Top-level packages named by pyproject's [tool.setuptools.packages.find] include."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(
        p.name
        for p in root.iterdir()
        if (p / "__init__.py").exists() and any(fnmatch.fnmatch(p.name, pat) for pat in patterns)
    )


def native_dir() -> Path:
    spec = importlib.util.find_spec(NATIVE)
    if spec is None or not spec.submodule_search_locations:
        raise ClusterError(
            f"{NATIVE} (the native decoder) is not installed in {sys.executable}; "
            f"build it with `pip install ./native` (or `make setup`)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def build_app_archive(dest: Path, root: Path = ROOT) -> Path:
    """tar.gz of the project packages, conf/, pipeline.yaml and iolake_native, for `--archives`."""

    def skip_cache(info: tarfile.TarInfo):
        return (
            None if "__pycache__" in Path(info.name).parts or info.name.endswith(".pyc") else info
        )

    with tarfile.open(dest, "w:gz") as tar:
        for pkg in project_packages(root):
            tar.add(root / pkg, arcname=pkg, filter=skip_cache)
        tar.add(root / "conf", arcname="conf", filter=skip_cache)
        tar.add(root / "pipeline.yaml", arcname="pipeline.yaml")
        tar.add(native_dir(), arcname=NATIVE, filter=skip_cache)
    return dest


def run_conf_dir(src: Path, dest: Path, overlay: dict) -> Path:
    """A copy of the conf folder whose cluster.yaml is deep-merged with `overlay`."""

    def merge(a: dict, b: dict) -> dict:
        for k, v in b.items():
            a[k] = merge(dict(a.get(k) or {}), v) if isinstance(v, dict) else v
        return a

    dest.mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.yaml"):
        shutil.copy2(f, dest / f.name)
    cluster = yaml.safe_load((src / "cluster.yaml").read_text()) or {}
    text = (
        f"# Generated by cluster.standalone from {src / 'cluster.yaml'} for a standalone run on this machine.\n"
        + yaml.safe_dump(merge(cluster, overlay), sort_keys=False)
    )
    (dest / "cluster.yaml").write_text(text)
    return dest


# ---------------------------------------------------------------- the cluster


def _die_with_launcher() -> None:
    """In a daemon, before exec: SIGTERM when the launcher dies, even by SIGKILL (Linux prctl)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _watch_parent() -> None:
    """Stop the cluster (via SIGTERM to ourselves) if whoever started us goes away without telling us."""
    import threading

    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(2)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


class Standalone:
    """A master and `workers` workers as background JVMs; `stop()` ends them all (and their executors)."""

    def __init__(self, run_dir: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.run_dir = run_dir
        self.n, self.cores, self.memory = workers, cores, memory
        self.logs = run_dir / "logs"
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.port = self.ui_port = 0

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict:
        env = dict(os.environ)
        env.pop(
            "PYTHONPATH", None
        )  # like a separate node: executors get the project only from the archive
        env.update(
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(self.logs),
            SPARK_DAEMON_MEMORY="512m",
            SPARK_HOME=str(spark_home()),
            PYSPARK_PYTHON=env.get("PYSPARK_PYTHON", sys.executable),
        )
        # Daemons read no spark-defaults.conf from the site; keep their JIT lean on a small machine.
        env["SPARK_DAEMON_JAVA_OPTS"] = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
        return env

    def _spawn(self, name: str, cls: str, *args: str) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.logs / f"{name}.log", "wb")
        cmd = [str(spark_home() / "bin" / "spark-class"), cls, *args]
        # Own session: stop() signals the whole group (the JVM and the executors a worker launched).
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self._env(),
            start_new_session=True,
            cwd=self.run_dir,
            preexec_fn=_die_with_launcher,
        )
        log.close()
        self.procs.append((name, proc))

    def start(self, timeout_s: float = 60.0) -> None:
        self.port, self.ui_port = free_port(), free_port()
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        self._wait("master", timeout_s, lambda st: st is not None)
        for i in range(1, self.n + 1):
            work = self.run_dir / f"work-{i}"
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--webui-port",
                str(free_port()),
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(work),
                self.url,
            )
        self._wait(
            "workers", timeout_s, lambda st: st is not None and self.alive_workers(st) >= self.n
        )

    def status(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                return json.load(r)
        except (OSError, ValueError):
            return None

    @staticmethod
    def alive_workers(status: dict) -> int:
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def _wait(self, what: str, timeout_s: float, ready) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise ClusterError(
                        f"{name} exited with code {p.returncode} while starting; "
                        f"see {self.logs / (name + '.log')}"
                    )
            if ready(self.status()):
                return
            time.sleep(0.5)
        if what == "master":
            raise ClusterError(
                f"the master did not answer on http://127.0.0.1:{self.ui_port}/json within "
                f"{timeout_s:.0f} s; see {self.logs / 'master.log'}"
            )
        st = self.status() or {}
        raise ClusterError(
            f"workers did not register within {timeout_s:.0f} s ({self.alive_workers(st)} of "
            f"{self.n} alive); see {self.logs}/worker-*.log and {self.logs / 'master.log'}"
        )

    def stop(self, grace_s: float = 15.0) -> None:
        for _, p in reversed(self.procs):  # workers first: they kill their executors on SIGTERM
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace_s
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:  # anything left in the group (a stuck executor or Python worker) goes too
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        self.procs.clear()


# ---------------------------------------------------------------- submit


def submit_command(
    cluster: Standalone,
    app: Path,
    conf_dir: Path,
    inputs: list[str],
    lake: str,
    driver_memory: str,
    executor_memory: str,
) -> list[str]:
    from iolake.lake import objectstore
    from iolake.spark import DELTA_PACKAGE, DELTA_SQL

    py = os.environ.get("PYSPARK_PYTHON", sys.executable)
    # full tiered JIT for the driver and executors (the daemons above stay at C1): C1 alone runs
    # hot loops (Parquet encoding, shuffles, sorts) much slower (conf/local.yaml)
    jvm = "-XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"
    confs = {
        **DELTA_SQL,
        "spark.pyspark.python": py,
        "spark.pyspark.driver.python": py,
        # executors import the project and iolake_native from the unpacked archive
        "spark.executorEnv.PYTHONPATH": APP,
        "spark.executorEnv.MLFLOW_DISABLE_TELEMETRY": "true",
        "spark.executor.cores": str(cluster.cores),
        "spark.cores.max": str(cluster.n * cluster.cores),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",  # first job waits for every executor
        "spark.ui.enabled": "false",
        "spark.log.level": "WARN",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": jvm,
        "spark.executor.extraJavaOptions": jvm,
    }
    packages = [DELTA_PACKAGE]
    if objectstore.is_s3(lake):
        # as a local session does (iolake/spark.py): the S3A connector, s3:// mapped to it, and
        # the endpoint of AWS_ENDPOINT_URL; the credentials reach the executors in the workers'
        # environment, never on the command line
        packages.append(objectstore.HADOOP_AWS)
        confs.update(objectstore.spark_properties())
    cmd = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        cluster.url,
        "--deploy-mode",
        "client",
        "--name",
        "iolake-standalone",
        "--packages",
        ",".join(packages),
        "--archives",
        f"{app}#{APP}",
        "--driver-memory",
        driver_memory,
        "--executor-memory",
        executor_memory,
    ]
    for k, v in confs.items():
        cmd += ["--conf", f"{k}={v}"]
    return cmd + [
        str(ENTRY),
        "run",
        *inputs,
        "--env",
        "cluster",
        "--lake",
        lake,
        "--conf-dir",
        str(conf_dir),
    ]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cluster/standalone.sh",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    p.add_argument(
        "inputs", nargs="*", help="trace files or folders (default: the sample Darshan logs)"
    )
    p.add_argument(
        "--lake",
        default="lake",
        help="lake folder every worker reaches, or s3://bucket/path (default: ./lake)",
    )
    p.add_argument("--mlflow-uri", help="MLflow tracking URI (default: sqlite:///<lake>/mlflow.db)")
    p.add_argument(
        "--conf-dir", default=str(ROOT / "conf"), help="configuration folder (default: conf/)"
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-cores", type=int, default=1)
    p.add_argument(
        "--worker-memory", default="1g", help="memory a worker offers (and each executor takes)"
    )
    p.add_argument("--driver-memory", default="1g")
    p.add_argument(
        "--shuffle-partitions",
        type=int,
        help="spark.sql.shuffle.partitions (default: 2 per core; conf/cluster.yaml's 200 is for big clusters)",
    )
    p.add_argument(
        "--run-dir",
        help="folder for logs, work dirs, the archive and conf (default: a new temp folder)",
    )
    p.add_argument(
        "--register-timeout", type=float, default=60.0, help="seconds to wait for the workers (60)"
    )
    p.add_argument(
        "--package-only",
        metavar="DIR",
        help=f"only write DIR/{APP}.tar.gz (for YARN / Kubernetes --archives) and exit",
    )
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from iolake.cli import sample_inputs

    if args.package_only:
        out = Path(args.package_only).resolve()
        out.mkdir(parents=True, exist_ok=True)
        print(build_app_archive(out / f"{APP}.tar.gz"))
        return 0
    run_dir = Path(args.run_dir or tempfile.mkdtemp(prefix="iolake-standalone-")).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    lake = args.lake if "://" in args.lake else str(Path(args.lake).resolve())
    # absolute, but links kept as given: a local run records a log's path as given, so resolving a
    # linked folder here (../shared -> elsewhere) gave the same log another source_uri on the cluster
    inputs = [i if "://" in i else os.path.abspath(i) for i in args.inputs] or sample_inputs()
    cores = args.workers * args.worker_cores
    overlay: dict = {
        "spark": {
            "properties": {
                "spark.sql.shuffle.partitions": str(args.shuffle_partitions or 2 * cores),
                "spark.default.parallelism": str(2 * cores),
                "spark.databricks.delta.snapshotPartitions": str(cores),
            }
        }
    }
    if args.mlflow_uri or "://" not in lake:
        # as `--env local` does, unless told otherwise: never a site's tracking server by accident
        overlay["mlflow"] = {"tracking_uri": args.mlflow_uri or f"sqlite:///{lake}/mlflow.db"}

    # SIGTERM (e.g. a CI timeout) must also stop the cluster: turn it into an exception.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    _watch_parent()
    cluster = Standalone(run_dir, args.workers, args.worker_cores, args.worker_memory)
    print(f"[standalone] run folder {run_dir}", flush=True)
    try:
        app = build_app_archive(run_dir / f"{APP}.tar.gz")
        conf_dir = run_conf_dir(Path(args.conf_dir), run_dir / "conf", overlay)
        t = time.monotonic()
        cluster.start(args.register_timeout)
        print(
            f"[standalone] master {cluster.url} (status http://127.0.0.1:{cluster.ui_port}/json), "
            f"{args.workers} workers registered in {time.monotonic() - t:.1f} s",
            flush=True,
        )
        cmd = submit_command(
            cluster, app, conf_dir, inputs, lake, args.driver_memory, args.worker_memory
        )
        print("[standalone] " + " ".join(cmd), flush=True)
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", MLFLOW_DISABLE_TELEMETRY="true")
        rc = subprocess.run(cmd, env=env, cwd=run_dir).returncode
        print(f"[standalone] spark-submit exited with code {rc}", flush=True)
        return rc
    except ClusterError as e:
        print(f"[standalone] error: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        cluster.stop()
        print(f"[standalone] cluster stopped; logs in {cluster.logs}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
