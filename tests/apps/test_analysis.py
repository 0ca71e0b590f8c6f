"""IOFrame (PrismIO §IV) on literal op frames, the Delta-log reader, lake vs direct decode, views."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest

from apps.analysis import IOFrame
from apps.analysis.patterns import ByteOwners
from iolake.deltaread import UnsupportedDelta, live_files, read_delta


def _ops(*rows, source="RECORDER", log="L"):
    """(rank, file, op, offset, length, start, end) tuples -> an op frame."""
    cols = ["rank", "file_name", "op", "offset", "length", "start_s", "end_s"]
    df = pd.DataFrame(rows, columns=cols)
    df["record_id"] = df["file_name"].map(lambda n: abs(hash(n)) % 1000)
    df["source"] = source
    df["log_id"] = log
    return df


def _frame(ops, **more):
    return IOFrame.from_frames(ops, **more)


# ---- literal frames: every method ------------------------------------------------------------
def test_io_bandwidth_bytes_over_op_time_with_rank_and_filter():
    f = _frame(_ops((0, "a", "read", 0, 100, 0.0, 1.0), (0, "a", "write", 100, 300, 1.0, 2.0),
                    (1, "a", "read", 0, 50, 0.0, 0.5), (1, "b", "open", None, None, 0.0, 9.0)))
    out = f.io_bandwidth()
    assert out.index.names == ["rank", "file_name"]
    assert out["io_bandwidth"].to_dict() == {(0, "a"): 200.0, (1, "a"): 100.0}
    reads = f.io_bandwidth(rank=[0], filter=lambda x: x["op"] == "read")
    assert reads["io_bandwidth"].to_dict() == {(0, "a"): 100.0}


def test_io_bandwidth_counts_only_the_files_top_layer():
    dxt = pd.concat([_ops((0, "a", "write", 0, 100, 0.0, 1.0), source="DXT_MPIIO"),
                     _ops((0, "a", "write", 0, 100, 0.0, 0.1), (0, "a", "write", 100, 100, 0.1, 0.2), source="DXT_POSIX")])
    assert _frame(dxt).io_bandwidth()["io_bandwidth"].to_dict() == {(0, "a"): 100.0}
    posix_only = _frame(dxt).io_bandwidth(filter=lambda x: x["layer"] == "posix")
    assert posix_only["io_bandwidth"].to_dict() == {(0, "a"): pytest.approx(1000.0)}


def test_io_time_meta_from_recorder_calls_with_rank_time_and_fraction():
    f = _frame(_ops((0, "a", "open", None, None, 0.0, 1.0), (0, "a", "write", 0, 10, 1.0, 3.0),
                    (0, "a", "close", None, None, 3.0, 3.5), (0, "b", "seek", None, None, 4.0, 4.5),
                    (1, "a", "open", None, None, 0.0, 2.0), (1, "a", "read", 0, 10, 2.0, 4.0)))
    meta = f.io_time(kind="meta")
    assert list(meta.columns) == ["meta time", "rank time", "percentage"]
    assert meta.index.names == ["file_name", "rank"]
    assert meta.to_dict("index") == {
        ("a", 0): {"meta time": 1.5, "rank time": 4.0, "percentage": 0.375},
        ("b", 0): {"meta time": 0.5, "rank time": 4.0, "percentage": 0.125},
        ("a", 1): {"meta time": 2.0, "rank time": 4.0, "percentage": 0.5},
    }
    # filter narrows the numerator only; rank= both
    only_a = f.io_time(kind="meta", rank=[0], filter=lambda x: x["file_name"] == "a")
    assert only_a.to_dict("index") == {("a", 0): {"meta time": 1.5, "rank time": 4.0, "percentage": 0.375}}
    assert f.io_time()["io time"].to_dict() == {("a", 0): 3.5, ("b", 0): 0.5, ("a", 1): 4.0}


def test_io_time_meta_from_darshan_counters_when_ops_are_dxt():
    ops = _ops((0, "a", "write", 0, 10, 1.0, 3.0), source="DXT_POSIX")
    rid = int(ops["record_id"][0])
    counters = pd.DataFrame([
        {"rank": 0, "file_name": "a", "record_id": rid, "module": "posix", "op": "meta", "count": 1, "bytes": 0, "time_s": 0.5},
        # DXT timed this file's writes: the counter is not added again
        {"rank": 0, "file_name": "a", "record_id": rid, "module": "posix", "op": "write", "count": 1, "bytes": 10, "time_s": 2.5},
        # a file DXT did not trace: its counters stand in
        {"rank": 0, "file_name": "c", "record_id": 7, "module": "posix", "op": "read", "count": 1, "bytes": 30, "time_s": 1.5},
    ])
    f = _frame(ops, counters=counters)
    assert f.io_time(kind="meta")["meta time"].to_dict() == {("a", 0): 0.5}
    t = f.io_time(kind="write")
    assert t.to_dict("index") == {("a", 0): {"write time": 2.0, "rank time": 4.0, "percentage": 0.5}}
    assert f.io_bandwidth()["io_bandwidth"].to_dict() == {(0, "a"): 5.0, (0, "c"): 20.0}


def test_shared_files_lists_ranks_and_expands_reduced_records():
    ops = _ops((0, "a", "read", 0, 1, 0, 1), (2, "a", "read", 0, 1, 0, 1), (1, "b", "write", 0, 1, 0, 1))
    counters = pd.DataFrame([{"rank": -1, "file_name": "s", "record_id": 5, "module": "posix", "op": "read",
                              "count": 1, "bytes": 1, "time_s": 0.1}])
    f = _frame(ops, counters=counters, jobs=pd.DataFrame([{"nprocs": 3, "run_time_s": 1.0}]))
    out = f.shared_files()
    assert list(out.columns) == ["ranks sharing the file", "num ranks"]
    assert out.to_dict("index") == {
        "a": {"ranks sharing the file": [0, 2], "num ranks": 2},
        "b": {"ranks sharing the file": [1], "num ranks": 1},
        "s": {"ranks sharing the file": [0, 1, 2], "num ranks": 3},
    }
    assert list(f.shared_files(rank=[2]).index) == ["a"]


def test_access_pattern_consecutive_sequential_random_per_rank_and_direction():
    f = _frame(_ops(
        (0, "a", "write", 0, 100, 0, 1), (0, "a", "write", 100, 100, 1, 2),   # consecutive
        (0, "a", "write", 300, 100, 2, 3),                                     # sequential
        (0, "a", "write", 50, 100, 3, 4),                                      # random
        (0, "a", "read", 400, 100, 3.5, 4),                                    # first read: no predecessor
        (1, "a", "write", 200, 100, 0, 1), (1, "a", "write", 300, 100, 5, 6),  # rank 1's own order
    ))
    out = f.access_pattern()
    assert list(out.columns) == ["consecutive", "sequential", "random", "total"]
    assert out.loc["a"].to_dict() == {"consecutive": 2, "sequential": 1, "random": 1, "total": 4}


def test_readwrite_pattern_classifies_bytes_by_their_last_toucher():
    f = _frame(_ops(
        (0, "a", "write", 0, 100, 0.0, 1.0),   # write 100 (first touch)
        (1, "a", "read", 50, 100, 1.0, 2.0),   # partial overlap: RAW 50, read 50
        (0, "a", "write", 0, 100, 2.0, 3.0),   # WAW 50 (0-50), WAR 50 (50-100)
        (1, "a", "read", 0, 10, 3.0, 4.0),     # RAW 10
        (0, "b", "read", 0, 8, 0.0, 1.0), (1, "b", "read", 4, 8, 1.0, 2.0),  # read 12, RAR 4
    ))
    out = f.readwrite_pattern()
    assert list(out.columns) == ["RAR", "RAW", "WAR", "WAW", "read", "write"]
    assert out.to_dict("index") == {
        "a": {"RAR": 0, "RAW": 60, "WAR": 50, "WAW": 50, "read": 50, "write": 100},
        "b": {"RAR": 4, "RAW": 0, "WAR": 0, "WAW": 0, "read": 12, "write": 0},
    }


def test_byte_owners_agree_with_a_byte_array():
    rng = random.Random(7)
    owners, last = ByteOwners(), [None] * 600
    for _ in range(400):
        a = rng.randrange(0, 550)
        b = a + rng.randrange(1, 50)
        kind = rng.choice(["read", "write"])
        want: dict = {}
        for x in range(a, b):
            want[last[x]] = want.get(last[x], 0) + 1
            last[x] = kind
        got = {k: v for k, v in owners.touch(a, b, kind).items() if v}
        assert got == want
    assert all(e1 <= s2 for e1, s2 in zip(owners.ends, owners.starts[1:]))


def test_methods_index_by_log_when_the_frame_holds_several_logs():
    f = _frame(pd.concat([_ops((0, "a", "read", 0, 10, 0, 1), log="L1"), _ops((0, "a", "read", 0, 30, 0, 1), log="L2")]))
    assert f.io_bandwidth()["io_bandwidth"].to_dict() == {("L1", 0, "a"): 10.0, ("L2", 0, "a"): 30.0}
    assert f.readwrite_pattern().index.names == ["log_id", "file_name"]
    with pytest.raises(ValueError, match="one job"):
        f.timeline("/dev/null")


def test_timeline_writes_a_png_with_covering_members(tmp_path):
    ops = _ops((0, "a", "open", None, None, 0.0, 0.2), (0, "a", "write", 0, 10, 0.2, 1.0),
               (1, "a", "read", 0, 10, 1.0, 2.0), (1, None, "other", None, None, 2.0, 2.1))
    cover = pd.DataFrame([{"rank": 1, "record_id": 1, "start_s": 1.0, "end_s": 2.0, "share_s": 1.0},
                          {"rank": -1, "record_id": 2, "start_s": 0.0, "end_s": 0.5, "share_s": 0.5}])
    out = _frame(ops, covering=cover).timeline(tmp_path / "t.png")
    data = Path(out).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


# ---- the Delta-log reader ---------------------------------------------------------------------
def _commit(log: Path, version: int, *actions) -> None:
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


META = {"metaData": {"id": "x", "format": {"provider": "parquet"}, "partitionColumns": [], "configuration": {},
                     "schemaString": json.dumps({"type": "struct", "fields": [
                         {"name": "k", "type": "long", "nullable": True, "metadata": {}}]})}}


def test_live_files_replays_adds_and_removes(tmp_path):
    log = tmp_path / "_delta_log"
    _commit(log, 0, META, {"add": {"path": "a.parquet"}}, {"add": {"path": "b%20c.parquet"}})
    _commit(log, 1, {"remove": {"path": "a.parquet"}}, {"add": {"path": "d.parquet"}})
    assert live_files(str(tmp_path)) == [str(tmp_path / "b c.parquet"), str(tmp_path / "d.parquet")]
    _commit(log, 2, {"add": {"path": "e.parquet", "deletionVector": {"storageType": "u"}}})
    with pytest.raises(UnsupportedDelta, match="deletion vectors"):
        live_files(str(tmp_path))


def test_read_delta_matches_spark_after_overwrite_merge_and_checkpoint(spark, tmp_path):
    from delta.tables import DeltaTable

    path = str(tmp_path / "t")
    rows = [(i, f"m{i % 2}", float(i)) for i in range(6)]
    schema = "k long, month string, v double"
    spark.createDataFrame(rows, schema).write.format("delta").partitionBy("month") \
        .option("delta.checkpointInterval", "2").save(path)
    spark.createDataFrame(rows[:3], schema).write.format("delta").mode("overwrite").save(path)
    src = spark.createDataFrame([(1, "m1", 10.0), (7, "m1", 7.0)], schema)
    DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.k = s.k") \
        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert (tmp_path / "t" / "_delta_log" / "00000000000000000002.checkpoint.parquet").exists()
    spark_files = sorted(f.removeprefix("file://").removeprefix("file:")
                         for f in spark.read.format("delta").load(path).inputFiles())
    assert live_files(path) == spark_files
    mine = read_delta(path).to_pandas().sort_values("k").reset_index(drop=True)
    theirs = spark.read.format("delta").load(path).toPandas().sort_values("k").reset_index(drop=True)
    pd.testing.assert_frame_equal(mine[theirs.columns.tolist()], theirs)
    assert mine["k"].tolist() == [0, 1, 2, 7] and mine.loc[1, "v"] == 10.0


# ---- the lake: same frames as decoding directly, views --------------------------------------
DXT = Path(__import__("darshan").__file__).parent / "examples" / "example_logs" / "dxt.darshan"


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    from iolake.config import load_config
    from jobs import covering, ingest

    root = tmp_path_factory.mktemp("lake")
    traces = root / "traces"
    traces.mkdir()
    (traces / DXT.name).write_bytes(DXT.read_bytes())
    conf = load_config("local", overrides={"lake": {"root": str(root / "lake")}, "gates": {"enabled": False}})
    ingest.run(spark, conf, [str(traces)], echo=lambda *_: None)
    covering.run(spark, conf, echo=lambda *_: None)
    return conf.lake


def _same(a: IOFrame, b: IOFrame) -> None:
    for name in ("ops", "counters", "jobs"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)
    for method in ("io_bandwidth", "io_time", "shared_files", "access_pattern", "readwrite_pattern"):
        pd.testing.assert_frame_equal(getattr(a, method)(), getattr(b, method)(), obj=method)


def test_from_darshan_equals_from_lake_with_and_without_spark(spark, lake):
    direct = IOFrame.from_darshan(DXT)
    (log_id,) = direct.log_ids
    with_spark = IOFrame.from_lake(spark, lake, log_id=log_id)
    _same(direct, with_spark)
    _same(with_spark, IOFrame.from_lake(None, lake, log_id=log_id))
    assert len(direct.ops) == 7623 and len(with_spark.covering) > 0
    assert direct.readwrite_pattern()[["read", "write"]].sum().sum() > 0


def test_timeline_from_the_lake_highlights_the_covering_set(lake, tmp_path):
    f = IOFrame.from_lake(None, lake)
    out = f.timeline(tmp_path / "job.png")
    assert Path(out).stat().st_size > 5000


def test_register_views_answers_sql_like_ioframe(spark, lake):
    from apps.views import register_views

    made = register_views(spark, lake)
    assert {"bronze_posix", "bronze_io_ops", "silver_covering_sets", "v_io_bandwidth", "v_shared_files"} <= set(made)
    sql = spark.sql("SELECT rank, file_name, io_bandwidth FROM v_io_bandwidth").toPandas()
    got = sql.set_index(["rank", "file_name"])["io_bandwidth"].dropna().sort_index()
    want = IOFrame.from_lake(spark, lake).io_bandwidth()["io_bandwidth"]
    assert len(got) > 10
    pd.testing.assert_series_equal(got, want.loc[got.index], check_names=False)
    shared = spark.sql("SELECT file_name, ranks, num_ranks FROM v_shared_files").toPandas()
    mine = IOFrame.from_lake(spark, lake).shared_files()
    assert len(shared) == len(mine) > 100
    assert dict(zip(shared["file_name"], shared["num_ranks"])) == mine["num ranks"].to_dict()


def test_register_views_job_summary_counts_tags_when_the_table_exists(spark, tmp_path):
    from apps.views import register_views

    lake = str(tmp_path / "lake")
    spark.createDataFrame([("A", 4), ("B", 1)], "log_id string, nprocs long") \
        .write.format("delta").save(f"{lake}/silver/job_features")
    assert "v_job_summary" in register_views(spark, lake)
    assert {r.log_id: r.n_tags for r in spark.sql("SELECT * FROM v_job_summary").collect()} == {"A": 0, "B": 0}
    spark.createDataFrame([("A", "small_io"), ("A", "small_io"), ("A", "random")], "log_id string, tag string") \
        .write.format("delta").save(f"{lake}/silver/bottleneck_tags")
    register_views(spark, lake)
    rows = {r.log_id: (r.n_tags, r.tags) for r in spark.sql("SELECT * FROM v_job_summary").collect()}
    assert rows == {"A": (3, {"small_io": 2, "random": 1}), "B": (0, None)}
