"""The advise stage's rows (features/advice.py `assemble`, what jobs/advise.py runs) speak for the
site: a site profile with its own tier and stripe commands changes the advice text, the shipped
profile names no system's syntax, and every model row says which model made it and what that model
was trained on. Real Spark, a real MLflow registry (SQLite in a temporary folder) and real models."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from features import advice
from iolake.config import SiteConf, SiteTier, load_config
from models.benchmarks import SHIPPED
from tests.models.tiny import row
from tests.support.frames import frame

MIB = 1 << 20
SHIPPED_SOURCE = f"benchmark iosweep (shipped: {SHIPPED['iosweep']})"
LAB = SiteConf(
    name="lab",
    tiers=[
        SiteTier(
            name="bb",
            kind="burst_buffer",
            label="the lab's flash tier",
            mounts=["/bb/lab/"],
            stage="stage-in --from {file} --to {mount}{name}",
        ),
        SiteTier(name="pfs", kind="parallel_fs", stripe="stripe-it -n {count} -s {size} {dir}"),
    ],
)


@pytest.fixture(scope="module")
def champion(tmp_path_factory):
    """The tiny bandwidth model (bb about 6.7x faster than pfs) registered as `t-bw` v1 @champion,
    trained, as its run's tags say, on the shipped IOR sweep; the registry is restored afterwards."""
    import mlflow
    import numpy as np
    from mlflow import MlflowClient

    from models import bandwidth, provenance, pyfunc, tracking
    from tests.models.tiny import bandwidth_frame

    tmp = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{tmp}/mlflow.db"
    old = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    exp = mlflow.create_experiment("site", artifact_location=(tmp / "artifacts").as_uri())
    Xb, bw = bandwidth_frame(40)
    model = pyfunc.Bandwidth(
        bandwidth.build_estimator("decision_tree").fit(Xb, np.log(bw)),
        bandwidth.FILE_FEATURES,
        ("bb", "pfs"),
    )
    tags = {provenance.SOURCE_TAG: SHIPPED_SOURCE, provenance.ORIGIN_TAG: "shipped_benchmark"}
    with mlflow.start_run(experiment_id=exp, tags=tags):
        info = tracking.log_model(model, Xb)
    mv = mlflow.register_model(info.model_uri, "t-bw")
    client = MlflowClient()
    client.set_registered_model_alias("t-bw", "champion", mv.version)
    yield client.get_model_version_by_alias("t-bw", "champion")
    mlflow.set_tracking_uri(old[0])
    mlflow.set_registry_uri(old[1])


def _inputs(spark):
    """Two jobs of one program on Lustre, 1 stripe of 1M each: A (first run: a shared file written by 4
    processes) and B (the same file and a small one), their data files on pfs; DCA-IO's rule phase
    gives B 4 stripes of 1M (as many as A's processes writing the shared file)."""
    shared = row(0, interface="MPI-IO", file_per_process=False, n_ranks=4, nprocs=4)
    small = row(1, nprocs=4)
    files = [
        {
            **shared,
            "record_id": 1,
            "file_name": "/lus/scratch/run/out.h5",
            "bytes_written": 64 * MIB,
        },
        {**small, "record_id": 2, "file_name": "/lus/scratch/run/log.0", "bytes_written": MIB},
    ]
    files = [
        {
            **f,
            "tier": "pfs",
            "opens": 1,
            "reads": 0,
            "writes": 16,
            "bytes_read": 0,
            "io_type_source": "counters",
            "bandwidth_mib_s": 300.0,
        }
        for f in files
    ]
    # A ran the same way (DCA-IO's rule phase reads the run before: a shared file, 4 ranks)
    ff = frame(spark, "file_features", files, log_id="B").unionByName(
        frame(spark, "file_features", files[:1], log_id="A")
    )
    t0 = dt.datetime(2026, 1, 1)
    job = {
        "program": "app",
        "nprocs": 4,
        "stripe_count": 1,
        "stripe_size": MIB,
        "tiers": ["pfs"],
        **dict.fromkeys(
            ("file_count", "shared_file_count", "read_requests", "write_requests", "bytes_read"), 1
        ),
        "bytes_written": 65 * MIB,
    }
    jf = frame(
        spark, "job_features", [{**job, "start_time": t0, "throughput_mib_s": 100.0}], log_id="A"
    ).unionByName(
        frame(
            spark,
            "job_features",
            [{**job, "start_time": t0 + dt.timedelta(hours=1), "throughput_mib_s": 120.0}],
            log_id="B",
        )
    )
    tags = frame(spark, "bottleneck_tags", [])
    return ff, jf, tags


def _advise(spark, site, mv):
    conf = load_config("local")
    conf = conf.with_overrides(
        site=site or conf.site,
        advise=dataclasses.replace(conf.advise, dimensions=["tier"], tier_from="bandwidth"),
    )
    ff, jf, tags = _inputs(spark)
    rows = advice.assemble(spark, conf, jf.select("log_id", "job_month"), ff, tags, jf, ff, mv)
    out = advice.finish(rows, str(mv.version))
    from iolake.gates import validate
    from schemas import GOLD

    validate(GOLD["tuning_advice"], out)  # the gate the stage's write passes
    return {(r.log_id, r.kind): r for r in out.collect()}


def test_site_profile_commands_and_model_provenance_in_the_advice(spark, champion):
    got = _advise(spark, LAB, champion)
    assert set(got) == {("A", "what_if"), ("B", "what_if"), ("B", "stripe")}
    w = got["B", "what_if"]
    # the two files share the change (tier bb): one row, told by the file moving the most bytes,
    # with the profile's words and command, its {file} / {name} / {mount} filled for that file
    assert w.file_name == "/lus/scratch/run/out.h5" and w.advised.endswith("on bb")
    assert (
        "move the file to the lab's flash tier: stage-in --from /lus/scratch/run/out.h5 "
        "--to /bb/lab/out.h5" in w.message
    )
    assert "and 1 more file(s)" in w.message and "<file>" not in w.message
    # which model, loaded by which alias, trained on what
    assert (w.model_name, w.model_version, w.model_alias) == ("t-bw", "1", "champion")
    assert (w.trained_on, w.training_origin) == (SHIPPED_SOURCE, "shipped_benchmark")
    s = got["B", "stripe"]
    assert s.message == (
        "DCA-IO (rule phase, run 2 of this application): stripe-it -n 4 -s 1M <dir> "
        "(this run used stripe count 1, stripe size 1M)"
    )
    assert (s.current, s.advised) == (
        "stripe count 1, stripe size 1M",
        "stripe count 4, stripe size 1M",
    )
    assert s.model_name is None and s.trained_on is None and s.training_origin is None


def test_shipped_profile_advice_names_no_system(spark, champion):
    got = _advise(spark, None, champion)
    w, s = got["B", "what_if"], got["B", "stripe"]
    for r in got.values():
        assert "#DW" not in r.message and "jobdw" not in r.message and "DW_JOB" not in r.message
    assert "move the file to a burst buffer or other fast tier" in w.message
    assert "lfs setstripe -c 4 -S 1M <dir>" in s.message
    assert w.training_origin == "shipped_benchmark"
