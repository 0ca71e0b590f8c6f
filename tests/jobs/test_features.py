"""The features stage on real IOR runs: extracted features equal the IOR parameters (>= 95%)."""

from __future__ import annotations

import pandas as pd
import pytest

from iolake.config import load_config
from iolake.lake import read_table, table_version
from jobs import features, ingest
from schemas import BRONZE, SILVER
from tests.support.data import shared_path
from tests.support.ground_truth import agreement, features_without_dxt, summary

pytestmark = pytest.mark.slow


def _subset(root) -> tuple[list[str], pd.DataFrame]:
    """Repetition 1 of every 4th configuration on both tiers, and its Recorder traces (~150 runs)."""
    runs = pd.read_csv(root / "runs.csv")
    runs = runs[(runs.config_id % 4 == 0) & ((runs.tracer == "recorder") | (runs.rep == 1))]
    paths = [
        str(root / (r.darshan_log if r.tracer == "darshan" else r.recorder_dir))
        for r in runs.itertuples()
    ]
    return paths, runs


@pytest.fixture(scope="module")
def sweep_lake(spark, tmp_path_factory):
    root = shared_path("iosweep")
    paths, runs = _subset(root)
    lake = tmp_path_factory.mktemp("sweep") / "lake"
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    ingest.run(spark, conf, paths)
    summary_ = features.run(spark, conf)
    return conf, runs, summary_


def test_features_agree_with_ior_parameters(spark, sweep_lake):
    conf, runs, _ = sweep_lake
    ff = read_table(spark, SILVER["file_features"], conf.lake.root).toPandas()
    led = (
        read_table(spark, BRONZE["logs"], conf.lake.root).select("log_id", "source_uri").toPandas()
    )
    ff = ff.merge(led, on="log_id")
    ff["run_id"] = ff.source_uri.str.extract(r"/([a-z]+_c\d+_(?:r\d|rec))(?:\.darshan)?$")[0]
    scored = agreement(ff, runs)
    table = summary(scored)
    print("\n" + table.to_string())
    assert set(table.index) == {
        "interface",
        "nprocs",
        "io_type",
        "file_per_process",
        "unique_dir",
        "collective",
        "file_view",
        "fsync",
        "fsync_per_write",
        "preallocate",
        "random_access",
        "transfer_size",
        "rw_per_open",
    }
    assert table.runs.min() > 20
    low = table[table.pct < 95.0]
    assert low.empty, f"features below 95% agreement:\n{low}"


def test_features_from_counters_alone_agree_with_ior_parameters(spark, sweep_lake):
    """Production logs mostly have no DXT: the same Darshan logs with their DXT segments left out
    must give the same features (>= 95% per feature), from Darshan's counters alone."""
    conf, runs, _ = sweep_lake
    bare = features_without_dxt(spark, conf.lake.root, conf.features)
    bare["run_id"] = bare.source_uri.str.extract(r"/([a-z]+_c\d+_r\d)\.darshan$")[0]
    table = summary(agreement(bare, runs[runs.tracer == "darshan"]))
    print("\n" + table.to_string())
    assert table.runs.min() > 10 and "random_access" in table.index
    low = table[table.pct < 95.0]
    assert low.empty, f"features from counters alone below 95% agreement:\n{low}"


def test_features_job_table_and_rerun_adds_nothing(spark, sweep_lake):
    conf, runs, summary_ = sweep_lake
    jf = read_table(spark, SILVER["job_features"], conf.lake.root).toPandas()
    jobs = read_table(spark, BRONZE["jobs"], conf.lake.root).count()
    assert len(jf) == jobs == summary_["logs"]
    assert set(jf.nprocs) == {2, 4} and (jf.io_time_s > 0).all()
    assert all(set(t) <= {"bb", "pfs"} for t in jf.tiers)
    before = table_version(spark, SILVER["file_features"], conf.lake.root)
    again = features.run(spark, conf)
    assert again["logs"] == 0
    assert table_version(spark, SILVER["file_features"], conf.lake.root) == before


def test_features_tier_follows_the_conf_rules(spark, sweep_lake):
    conf, _, _ = sweep_lake
    ff = (
        read_table(spark, SILVER["file_features"], conf.lake.root)
        .where("file_name like '%ior_testfile%'")
        .toPandas()
    )
    assert (ff[ff.file_name.str.startswith("/dev/shm/")].tier == "bb").all()
    assert (ff[ff.file_name.str.startswith("/srv/")].tier == "pfs").all()
    assert {"bb", "pfs"} <= set(ff.tier)


def _sorted(df: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    return df.sort_values(key).reset_index(drop=True)


def test_access_patterns_from_ingest_are_the_spark_pass_on_the_sweep(spark, sweep_lake):
    """The stage took every log's access pattern from bronze/op_patterns (ingest's counts); its rows
    equal the Spark pass over the same logs' io_ops, column for column."""
    from iolake.lake import table_exists

    conf, _, summary_ = sweep_lake
    assert (
        summary_["patterns_from_ingest"] == summary_["logs"] > 100
        and summary_["patterns_spark_pass"] == 0
    )
    assert (
        summary_["rollups_from_ingest"] == summary_["logs"] and summary_["rollups_spark_pass"] == 0
    )
    ops = read_table(spark, BRONZE["op_patterns"], conf.lake.root)
    assert ops.where("not h5f_calls").count() > 100
    h5_calls = (
        read_table(spark, BRONZE["io_ops"], conf.lake.root)
        .where("func like 'H5F%' and record_id is not null")
        .select("log_id", "record_id")
        .distinct()
    )
    assert ops.where("h5f_calls").select("log_id", "record_id").exceptAll(h5_calls).count() == 0
    assert h5_calls.exceptAll(ops.where("h5f_calls").select("log_id", "record_id")).count() == 0
    names = ("jobs", "files", "posix", "mpiio", "stdio", "h5f", "h5d", "lustre", "io_ops")
    inputs = {
        f"bronze/{t}": read_table(spark, BRONZE[t], conf.lake.root)
        if table_exists(spark, BRONZE[t], conf.lake.root)
        else spark.createDataFrame([], BRONZE[t].struct)
        for t in names
    }
    want = features.transform(inputs, conf)["silver/file_features"].toPandas()
    got = read_table(spark, SILVER["file_features"], conf.lake.root).toPandas()[list(want.columns)]
    key = ["log_id", "record_id"]
    assert (want.io_type_source == "ops").sum() > 100
    pd.testing.assert_frame_equal(_sorted(got, key), _sorted(want, key), check_dtype=False)
