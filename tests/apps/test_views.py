"""The PrismIO SQL views (apps/views.py): hand-computed values on a literal lake, and equal to
IOFrame on real logs — a few sweep logs, and (slow) every log of the iosweep data."""

from __future__ import annotations

import pytest

from apps.analysis import IOFrame
from schemas import TABLES
from tests.support.frames import frame
from tests.support.viewcheck import compare

M = "DXT_POSIX"


def _w(rank, seq, off, n, t0, t1, op="write"):
    return {
        "source": M,
        "record_id": 1,
        "rank": rank,
        "seq": seq,
        "op": op,
        "offset": off,
        "length": n,
        "start_s": float(t0),
        "end_s": float(t1),
    }


# file a (record 1): DXT segments; file c (record 3): counters only
OPS = [
    _w(0, 0, 0, 100, 0, 1),
    _w(0, 1, 100, 100, 1, 2),
    _w(0, 2, 300, 100, 2, 3),
    _w(0, 3, 50, 100, 3, 4),
    _w(0, 4, 400, 100, 3.5, 4, op="read"),
    _w(1, 0, 200, 100, 0, 1),
    _w(1, 1, 300, 100, 5, 6),
    _w(1, 2, 250, 100, 7, 8, op="read"),
]
POSIX = [
    {
        "record_id": 1,
        "rank": 0,
        "POSIX_READS": 1,
        "POSIX_WRITES": 4,
        "POSIX_SEQ_READS": 1,
        "POSIX_SEQ_WRITES": 2,
        "POSIX_CONSEC_READS": 0,
        "POSIX_CONSEC_WRITES": 1,
        "POSIX_BYTES_READ": 100,
        "POSIX_BYTES_WRITTEN": 400,
        "POSIX_F_READ_TIME": 9.0,
        "POSIX_F_WRITE_TIME": 9.0,
        "POSIX_F_META_TIME": 0.5,
    },  # DXT timed the reads and writes
    {
        "record_id": 1,
        "rank": 1,
        "POSIX_READS": 1,
        "POSIX_WRITES": 2,
        "POSIX_SEQ_READS": 1,
        "POSIX_SEQ_WRITES": 2,
        "POSIX_CONSEC_READS": 0,
        "POSIX_CONSEC_WRITES": 1,
        "POSIX_F_META_TIME": 0.25,
    },
    {
        "record_id": 3,
        "rank": 0,
        "POSIX_READS": 2,
        "POSIX_WRITES": 0,
        "POSIX_BYTES_READ": 300,
        "POSIX_F_READ_TIME": 1.5,
        "POSIX_F_META_TIME": 0.1,
    },
]


@pytest.fixture(scope="module")
def literal_lake(spark, tmp_path_factory):
    lake = str(tmp_path_factory.mktemp("views") / "lake")
    rows = {
        "io_ops": OPS,
        "posix": POSIX,
        "files": [{"record_id": 1, "name": "/p/a"}, {"record_id": 3, "name": "/p/c"}],
        "jobs": [{"nprocs": 2, "run_time_s": 100.0}],
    }
    for table, r in rows.items():
        frame(spark, table, r).write.format("delta").save(TABLES[table].path(lake))
    # L2: no traced ops, only Darshan's HEATMAP (two ranks' POSIX, one rank's STDIO; MPI-IO is not added:
    # its bytes reach POSIX)
    heat = [
        {
            "record_id": 9,
            "module": "POSIX",
            "rank": 0,
            "bin_width_s": 0.5,
            "nbins": 3,
            "read_bytes": [1, 2, 3],
            "write_bytes": [0, 0, 5],
        },
        {
            "record_id": 9,
            "module": "POSIX",
            "rank": 1,
            "bin_width_s": 0.5,
            "nbins": 3,
            "read_bytes": [0, 0, 30],
            "write_bytes": [0, 0, 0],
        },
        {
            "record_id": 8,
            "module": "STDIO",
            "rank": 0,
            "bin_width_s": 0.5,
            "nbins": 2,
            "read_bytes": [10, 0],
            "write_bytes": [0, 7],
        },
        {
            "record_id": 7,
            "module": "MPIIO",
            "rank": 0,
            "bin_width_s": 0.5,
            "nbins": 3,
            "read_bytes": [100, 100, 100],
            "write_bytes": [0, 0, 0],
        },
    ]
    frame(spark, "heatmap", heat, log_id="L2").write.format("delta").save(
        TABLES["heatmap"].path(lake)
    )
    frame(spark, "jobs", [{"nprocs": 2, "run_time_s": 1.5}], log_id="L2").write.format(
        "delta"
    ).mode("append").save(TABLES["jobs"].path(lake))
    spark.createDataFrame([("L1", 2)], "log_id string, nprocs long").write.format("delta").save(
        TABLES["job_features"].path(lake)
    )
    return lake


def _view(spark, name, keys):
    return (
        spark.sql(f"SELECT * FROM {name}")
        .toPandas()
        .drop(columns=["log_id", "record_id"])
        .set_index(keys)
        .sort_index()
    )


@pytest.mark.slow  # ~2 min: every view is queried and compared with IOFrame
def test_prismio_views_hand_computed_on_a_literal_lake(spark, literal_lake):
    from apps.views import register_views

    made = register_views(spark, literal_lake)
    assert {
        "v_io_bandwidth",
        "v_io_time",
        "v_access_pattern",
        "v_readwrite_pattern",
        "v_job_activity",
    } <= set(made)

    ap = _view(spark, "v_access_pattern", ["definition", "file_name"])
    assert ap.to_dict("index") == {
        # file order rank 0 then 1: w[0,100) w[100,200) consec, w[300,) seq, w[50,) random, r[400,) seq,
        # (rank 1) w[200,) random, w[300,) consec, r[250,) random
        ("prismio", "/p/a"): {"consecutive": 2, "sequential": 2, "random": 3, "total": 7},
        # counters: consec 1 + 1; seq 1 + 2 + 1 + 2 = 6, less consec; random 8 ops - 6 seq; total 8 ops
        ("darshan", "/p/a"): {"consecutive": 2, "sequential": 4, "random": 2, "total": 8},
        ("darshan", "/p/c"): {"consecutive": 0, "sequential": 0, "random": 2, "total": 2},
        # per rank and direction: rank 0 writes consec, seq, random; rank 1 writes consec; reads first
        ("per_rank", "/p/a"): {"consecutive": 2, "sequential": 1, "random": 1, "total": 4},
    }

    rw = _view(spark, "v_readwrite_pattern", ["file_name"])
    # time order: w[0,100) w[200,300) w[100,200) w[300,400) first writes; w[50,150) WAW 100; r[400,500) first
    # read; w[300,400) WAW 100; r[250,350) RAW 100 (last touched by rank 1's writes)
    assert rw.to_dict("index") == {
        "/p/a": {
            "RAR": 0,
            "RAW": 100,
            "WAR": 0,
            "WAW": 200,
            "read": 200,
            "write": 600,
            "first_read": 100,
            "first_write": 400,
        }
    }

    t = _view(spark, "v_io_time", ["file_name", "rank"])
    # rank 0: a 4 s writes + 0.5 s read (DXT) + 0.5 s meta (counter); c 1.5 s read + 0.1 s meta (counters)
    # rank 1: a 2 s writes + 1 s read + 0.25 s meta; every rank runs the job's 100 s
    want = {
        ("/p/a", 0): (0.5, 4.0, 0.5, 5.0, 6.6),
        ("/p/c", 0): (1.5, 0.0, 0.1, 1.6, 6.6),
        ("/p/a", 1): (1.0, 2.0, 0.25, 3.25, 3.25),
    }
    assert sorted(t.index) == sorted(want)
    for key, (r, w, m, io, rank_io) in want.items():
        row = t.loc[key]
        assert (row.read_time_s, row.write_time_s, row.meta_time_s) == pytest.approx((r, w, m))
        assert (row.io_time_s, row.rank_time_s, row.percentage) == pytest.approx(
            (io, 100.0, io / 100.0)
        )
        assert (row.rank_io_time_s, row.io_share) == pytest.approx((rank_io, io / rank_io))

    bw = _view(spark, "v_io_bandwidth", ["rank", "file_name"])
    # a: rank 0 moved 400 + 100 bytes in 4.5 s, rank 1 200 + 100 in 3 s (DXT); c: 300 bytes in 1.5 s (counters)
    assert bw["io_bandwidth"].to_dict() == pytest.approx(
        {(0, "/p/a"): 500 / 4.5, (0, "/p/c"): 200.0, (1, "/p/a"): 100.0}
    )

    act = spark.sql("SELECT * FROM v_job_activity").collect()
    # DXT ops: 100 bins over max(last op end 8 s, run time 100 s), 1 s each; an op's bytes go to its
    # start's bin: reads start at 3.5 and 7 s, writes at 0 (two), 1, 2, 3 and 5 s
    ((log_id, source, width, reads, writes), heat) = sorted(tuple(r) for r in act)
    assert (log_id, source, width) == ("L1", "dxt", 1.0)
    assert reads == [0, 0, 0, 100, 0, 0, 0, 100]
    assert writes == [200, 100, 100, 100, 0, 100, 0, 0]
    # L2: HEATMAP's bins, POSIX + STDIO summed over ranks
    assert heat == ("L2", "heatmap", 0.5, [11, 2, 33], [0, 7, 5])
    summary = spark.sql("SELECT activity_source, activity_read_bytes FROM v_job_summary").collect()
    assert [tuple(r) for r in summary] == [("dxt", reads)]

    # and IOFrame, read from the same lake, says the same; a frame short of one op does not
    f = IOFrame.from_lake(literal_lake)
    assert compare(spark, f) == {
        v: set()
        for v in (
            "v_io_bandwidth",
            "v_io_time",
            "v_access_pattern",
            "v_readwrite_pattern",
            "v_job_activity",
        )
    }
    short = IOFrame(
        f.ops.iloc[1:].reset_index(drop=True), f.counters, f.jobs, f.covering, f.heatmap
    )
    assert all(bad == {"L1"} for bad in compare(spark, short).values())


# ---- real logs -------------------------------------------------------------------------------
SAMPLE = (
    "darshan/bb/bb_c0009_r1.darshan",  # POSIX, random offsets, file per process: DXT
    "darshan/bb/bb_c0001_r1.darshan",  # MPI-IO, shared file, random offsets: DXT_MPIIO over DXT_POSIX
    "darshan/bb/bb_c0022_r1.darshan",  # HDF5, write after read
    "recorder/bb/bb_c0009_rec",
    "recorder/bb/bb_c0022_rec",
)


def _sweep_lake(spark, tmp_path_factory, paths):
    from iolake.config import load_config
    from jobs import ingest

    lake = tmp_path_factory.mktemp("sweep_views") / "lake"
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}}
    )
    summary = ingest.run(spark, conf, [str(p) for p in paths], echo=lambda *_: None)
    assert summary["status"] == {"ok": len(paths)}
    return conf.lake.root


def _equal_on_every_log(spark, lake, n):
    from apps.views import register_views

    register_views(spark, lake)
    f = IOFrame.from_lake(lake)
    assert len(f.log_ids) == n
    bad = compare(spark, f)
    assert bad == {v: set() for v in bad}, {v: len(b) for v, b in bad.items()}
    return f


@pytest.mark.slow
def test_prismio_views_equal_ioframe_on_sample_sweep_logs(spark, tmp_path_factory):
    from tests.support.data import shared_path

    root = shared_path("iosweep")
    f = _equal_on_every_log(
        spark, _sweep_lake(spark, tmp_path_factory, [root / p for p in SAMPLE]), len(SAMPLE)
    )
    # the sample exercises every branch: MPI-IO over POSIX, counters for untraced files, overlaps
    rw = f.readwrite_pattern()
    assert (rw["RAW"] > 0).any() and (rw["WAR"] > 0).any()
    assert set(f.ops["layer"]) >= {"posix", "mpiio", "hdf5"}


def test_job_activity_rebins_heatmap_rows_of_different_widths(spark, tmp_path):
    """Rank 0 kept 0.1 s bins, rank 1's were coarsened to 0.2 s (Darshan's collapse_heatmap):
    the view sums rank 0's pairs of bins before adding the ranks, as IOFrame.activity does."""
    from apps.views import register_views

    lake = str(tmp_path / "lake")
    heat = [
        {"record_id": 9, "module": "POSIX", "rank": 0, "bin_width_s": 0.1, "nbins": 4,
         "read_bytes": [1, 2, 3, 4], "write_bytes": [0, 0, 0, 10]},
        {"record_id": 9, "module": "POSIX", "rank": 1, "bin_width_s": 0.2, "nbins": 3,
         "read_bytes": [100, 200, 300], "write_bytes": [5, 0, 0]},
    ]  # fmt: skip
    frame(spark, "heatmap", heat, log_id="L3").write.format("delta").save(
        TABLES["heatmap"].path(lake)
    )
    frame(spark, "jobs", [{"nprocs": 2, "run_time_s": 0.6}], log_id="L3").write.format(
        "delta"
    ).save(TABLES["jobs"].path(lake))
    register_views(spark, lake)
    (row,) = spark.sql("SELECT * FROM v_job_activity WHERE log_id = 'L3'").collect()
    # rank 0 at 0.2 s: reads [1+2, 3+4, 0], writes [0, 0+10, 0]; plus rank 1's bins
    assert row.activity_source == "heatmap" and row.activity_bin_s == pytest.approx(0.2)
    assert row.activity_read_bytes == [103, 207, 300]
    assert row.activity_write_bytes == [5, 10, 0]
