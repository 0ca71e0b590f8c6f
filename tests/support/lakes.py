"""Lakes from real logs through the real stages, built once per test session and shared.

`first_run_lake`: `iolake run` on the sample logs shipped in the darshan wheel, as a new user's
first run (test_first_run checks the run, test_tags its tags: the run's tags stage is the one
under test there, so the suite tags the sample logs once, not twice).

`report_lake`, shared by test_report and test_examples:

Two sample logs from the `darshan` wheel (dxt.darshan: one rank with DXT segments; noposix.darshan:
512 ranks, STDIO only) and one truncated copy that ingest quarantines. Between ingest and the
silver stages, Delta updates play the part of a hostile trace: dxt's executable, a metadata
value and the name of its file with the most small reads become HTML/JS, so the names flow
through features, tags evidence and covering sets as a real trace's would; and noposix gets
dxt's jobid (the same jobid seen on two clusters). Gold predictions (two model versions) are
written for dxt's files from its silver/file_features rows, through the same Delta helper the
score stage uses; noposix has none.

Built once per test session (the stages take minutes on a shared machine).
"""

from __future__ import annotations

from pathlib import Path

HOSTILE_FILE = (
    '/scratch/<script>document.title="PWNED"</script>">'
    '<img src=x onerror="document.body.dataset.pwned=1">.dat'
)
HOSTILE_EXE = (
    "/opt/app/bin/<script>document.title='PWNED'</script> --in '\"><img src=x onerror=alert(1)>'"
)
HOSTILE_META = "</td></tr></table><script>document.body.dataset.pwned=2</script>"

_BUILT: dict = {}
_FIRST_RUN: dict = {}
# the first run's models: a light choice of each kind (the full default list trains for minutes)
FIRST_RUN_MODELS = {
    "classifiers": ["decision_tree", "logistic_regression"],
    "regressors": ["decision_tree", "linear"],
    "splits": 3,
}


# C1 only: a command's own JVM over a few logs compiles less and ends sooner (ingest-only runs of
# the sample logs and of test_ingest's logs: docs/benchmarks.md, test-suite timings). Not for
# the suite's JVM, whose long life repays the optimising compiler, nor for whole pipeline runs.
QUICK_JIT = "-XX:TieredStopAtLevel=1"


def conf_dir_with(
    dest: Path, models: dict | None = None, quick_jit: bool = False, **sections
) -> Path:
    """The project's conf folder with `models` merged into local.yaml; with `quick_jit`, a local
    run's driver JVM (a command's own process) keeps to the C1 compiler; each other keyword
    (`mlflow={...}`, `lake={...}`) replaces that section of local.yaml."""
    import yaml

    from tests.support.data import ROOT

    dest.mkdir(parents=True)
    for f in (ROOT / "conf").glob("*.yaml"):
        (dest / f.name).write_text(f.read_text())
    local = yaml.safe_load((dest / "local.yaml").read_text()) or {}
    if models:
        local["models"] = {**local.get("models", {}), **models}
    if quick_jit:
        props = local["spark"]["properties"]
        props["spark.driver.extraJavaOptions"] = (
            props.get("spark.driver.extraJavaOptions", "") + " " + QUICK_JIT
        ).strip()
    local.update(sections)
    (dest / "local.yaml").write_text(yaml.safe_dump(local, sort_keys=False))
    return dest


def first_run_lake(tmp_path_factory) -> dict:
    """`iolake run` (in this process, the suite's JVM) on the sample logs, nothing else given:
    {"lake", "out" (its console output), "conf" (the conf folder)}."""
    if _FIRST_RUN:
        return _FIRST_RUN
    import contextlib
    import io

    from iolake.cli import main

    tmp = tmp_path_factory.mktemp("first-run")
    lake, conf = tmp / "lake", conf_dir_with(tmp / "conf", FIRST_RUN_MODELS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["run", "--lake", str(lake), "--conf-dir", str(conf)])
    text = out.getvalue()
    print(text[-4000:])
    assert code == 0, text[-6000:]
    _FIRST_RUN.update(lake=lake, out=text, conf=conf)
    return _FIRST_RUN


def _examples() -> Path:
    import darshan

    return Path(darshan.__file__).parent / "examples" / "example_logs"


def _hash(path: Path) -> str:
    from readers.fsio import content_hash

    return content_hash(str(path), "darshan")


def report_lake(spark, tmp_path_factory) -> dict:
    if _BUILT:
        return _BUILT
    import pyspark.sql.functions as F
    from delta.tables import DeltaTable

    from iolake.config import load_config
    from iolake.lake import merge_new_logs, read_table
    from jobs import covering, features, ingest, tags
    from schemas import BRONZE, GOLD, SILVER

    root = tmp_path_factory.mktemp("report_lake")
    traces = root / "traces"
    traces.mkdir()
    for name in ("dxt.darshan", "noposix.darshan"):
        (traces / name).write_bytes((_examples() / name).read_bytes())
    (traces / "truncated.darshan").write_bytes(
        (_examples() / "example.darshan").read_bytes()[:3000]
    )
    conf = load_config(
        "local", overrides={"lake": {"root": str(root / "lake")}, "gates": {"enabled": False}}
    )
    quiet = dict(echo=lambda *_: None)
    ingest.run(spark, conf, [str(traces)], **quiet)
    lake = conf.lake.root
    dxt, noposix = _hash(traces / "dxt.darshan"), _hash(traces / "noposix.darshan")

    # the hostile trace: the file with the most small (< 1 KiB) reads gets the hostile name
    posix = read_table(spark, BRONZE["posix"], lake).where(F.col("log_id") == dxt)
    small = F.col("POSIX_SIZE_READ_0_100") + F.col("POSIX_SIZE_READ_100_1K")
    record = (
        posix.groupBy("record_id")
        .agg(F.sum(small).alias("n"))
        .orderBy(F.desc("n"), "record_id")
        .first()[0]
    )
    DeltaTable.forPath(spark, BRONZE["files"].path(lake)).update(
        (F.col("log_id") == dxt) & (F.col("record_id") == record), {"name": F.lit(HOSTILE_FILE)}
    )
    # ingest rolled the record up with its name (bronze/file_rollups): a hostile trace has it there too
    DeltaTable.forPath(spark, BRONZE["file_rollups"].path(lake)).update(
        (F.col("log_id") == dxt) & (F.col("record_id") == record),
        {"file_name": F.lit(HOSTILE_FILE)},
    )
    jobs = DeltaTable.forPath(spark, BRONZE["jobs"].path(lake))
    jobid = read_table(spark, BRONZE["jobs"], lake).where(F.col("log_id") == dxt).first()["jobid"]
    jobs.update(
        F.col("log_id") == dxt,
        {
            "exe": F.lit(HOSTILE_EXE),
            "metadata": F.map_concat(
                F.col("metadata"), F.create_map(F.lit("<b>note</b>"), F.lit(HOSTILE_META))
            ),
        },
    )
    jobs.update(F.col("log_id") == noposix, {"jobid": F.lit(jobid)})
    ledger = DeltaTable.forPath(spark, BRONZE["logs"].path(lake))  # the ledger says so too
    ledger.update(F.col("log_id") == noposix, {"jobid": F.lit(jobid)})

    features.run(spark, conf, **quiet)
    covering.run(spark, conf, **quiet)
    tags.run(spark, conf, **quiet)

    ff = read_table(spark, SILVER["file_features"], lake).where(F.col("log_id") == dxt)
    common = ["log_id", "job_month", "record_id", "file_name", "tier"]
    other = F.when(F.col("tier") == "pfs", "bb").otherwise("pfs")
    place = [
        ff.select(
            *common,
            F.col("tier").alias("predicted_tier"),
            F.lit(0.6).alias("probability"),
            F.lit("iolake-placement").alias("model_name"),
            F.lit("1").alias("model_version"),
        ),
        ff.select(
            *common,
            F.when(F.col("bytes_read") > F.col("bytes_written"), other)
            .otherwise(F.col("tier"))
            .alias("predicted_tier"),
            F.lit(0.8).alias("probability"),
            F.lit("iolake-placement").alias("model_name"),
            F.lit("2").alias("model_version"),
        ),
    ]
    bw = [
        ff.select(
            *common,
            "bandwidth_mib_s",
            (F.coalesce(F.col("bandwidth_mib_s"), F.lit(1.0)) * k).alias(
                "predicted_bandwidth_mib_s"
            ),
            F.lit("iolake-bandwidth").alias("model_name"),
            F.lit(v).alias("model_version"),
        )
        for v, k in (("1", 0.5), ("2", 1.1))
    ]
    for name, frames in (("placement_predictions", place), ("bandwidth_predictions", bw)):
        spec = GOLD[name]
        df = frames[0].unionByName(frames[1]).withColumn("scored_at", F.current_timestamp())
        for f in spec.struct.fields:  # per-tier columns: null, as rows of a model from before them
            if f.name not in df.columns:
                df = df.withColumn(f.name, F.lit(None).cast(f.dataType))
        merge_new_logs(spark, spec, lake, df.select(*spec.columns))

    _BUILT.update(
        lake=lake,
        dxt=dxt,
        noposix=noposix,
        jobid=jobid,
        hostile_record=record,
        truncated=_hash(traces / "truncated.darshan"),
        traces=traces,
    )
    return _BUILT


_PYDARSHAN: dict = {}


def pydarshan_lake(spark, tmp_path_factory) -> dict:
    """Every log of ../shared/data/darshan that pydarshan 3.5.0 reads (MANIFEST.csv column
    `pydarshan_3_5_0` == "reads"), ingested once per process (gates off): {"lake", "logs" (paths),
    "ids" (file name -> log_id)}. Shared by the tests that compare views with pydarshan."""
    if _PYDARSHAN:
        return _PYDARSHAN
    import csv

    from iolake.config import load_config
    from jobs import ingest
    from readers.fsio import content_hash
    from tests.support.data import shared_path

    root = shared_path("darshan")
    with open(root / "MANIFEST.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["pydarshan_3_5_0"] == "reads"]
    logs = [root / r["path"] for r in rows]
    tmp = tmp_path_factory.mktemp("pydarshan_lake")
    conf = load_config(
        "local", overrides={"lake": {"root": str(tmp / "lake")}, "gates": {"enabled": False}}
    )
    ingest.run(spark, conf, [str(p) for p in logs], echo=lambda *_: None)
    ids = {p.name: content_hash(str(p), "darshan") for p in logs}
    assert len(ids) == len(logs), "the tests name logs by file name: names must be unique"
    _PYDARSHAN.update(lake=conf.lake.root, logs=logs, ids=ids)
    return _PYDARSHAN


def cluster_s3_run(s3, ml, tmp: Path, timeout_s: float = 2400) -> dict:
    """`cluster/standalone.sh` (master and two workers on this machine) over the sample logs into
    `s3://lake/lake` on `s3` (an S3Server), the models on `ml` (an MlflowServer), with the first
    run's models: {"lake", "conf", "run_dir", "out" (the script's output), "rc", "seconds"}.

    One run serves the cluster test (is a cluster run the local run?) and the S3 module (does a
    lake on an object store read, maintain and serve like a folder?): each was a run of its own,
    and the two runs were a quarter of the suite's time. The caller checks `rc`."""
    import os
    import subprocess
    import sys
    import time

    import yaml

    from cluster.standalone import run_conf_dir
    from iolake.cli import sample_inputs
    from tests.support.data import ROOT

    # cluster.yaml for the cluster run; local.yaml for the commands the S3 tests run on its lake
    conf = run_conf_dir(
        ROOT / "conf",
        tmp / "conf",
        {"models": FIRST_RUN_MODELS, "mlflow": {"tracking_uri": ml.url}},
    )
    local = yaml.safe_load((conf / "local.yaml").read_text()) or {}
    local["models"] = {**local.get("models", {}), **FIRST_RUN_MODELS}
    local["mlflow"] = {"tracking_uri": ml.url}
    (conf / "local.yaml").write_text(yaml.safe_dump(local, sort_keys=False))

    lake, run_dir = "s3://lake/lake", tmp / "run"
    cmd = [
        str(ROOT / "cluster" / "standalone.sh"),
        *sample_inputs(),
        "--lake",
        lake,
        "--mlflow-uri",
        ml.url,
        "--conf-dir",
        str(conf),
        "--run-dir",
        str(run_dir),
    ]
    env = {**os.environ, **s3.env(), "PYTHON": sys.executable}
    out_file = tmp / "standalone.out"
    t0 = time.monotonic()
    with open(out_file, "w") as log:
        # Same process group: Ctrl-C reaches it; if pytest is killed, the script notices and
        # stops its cluster.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            rc = proc.wait(timeout=timeout_s)
        finally:
            if proc.poll() is None:  # the script stops its cluster on SIGTERM
                proc.terminate()
                proc.wait(timeout=60)
    seconds = time.monotonic() - t0
    print(f"the cluster run on S3 took {seconds:.0f} s")
    return {
        "lake": lake,
        "conf": conf,
        "run_dir": run_dir,
        "out": out_file.read_text(),
        "rc": rc,
        "seconds": seconds,
    }
