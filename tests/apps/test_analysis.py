"""IOFrame (PrismIO §IV) on literal op frames, its timeline as pixels, the Spark-free lake reader
(`iolake.lake.arrow`) against Spark, lake vs direct decode, views."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest
from PIL import Image
from pyspark.sql import types as T

from apps.analysis import IOFrame
from apps.analysis.patterns import ByteOwners
from iolake.lake import arrow
from schemas import TABLES, TableSpec


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
    f = _frame(
        _ops(
            (0, "a", "read", 0, 100, 0.0, 1.0),
            (0, "a", "write", 100, 300, 1.0, 2.0),
            (1, "a", "read", 0, 50, 0.0, 0.5),
            (1, "b", "open", None, None, 0.0, 9.0),
        )
    )
    out = f.io_bandwidth()
    assert out.index.names == ["rank", "file_name"]
    assert out["io_bandwidth"].to_dict() == {(0, "a"): 200.0, (1, "a"): 100.0}
    reads = f.io_bandwidth(rank=[0], filter=lambda x: x["op"] == "read")
    assert reads["io_bandwidth"].to_dict() == {(0, "a"): 100.0}


def test_io_bandwidth_counts_only_the_files_top_layer():
    dxt = pd.concat(
        [
            _ops((0, "a", "write", 0, 100, 0.0, 1.0), source="DXT_MPIIO"),
            _ops(
                (0, "a", "write", 0, 100, 0.0, 0.1),
                (0, "a", "write", 100, 100, 0.1, 0.2),
                source="DXT_POSIX",
            ),
        ]
    )
    assert _frame(dxt).io_bandwidth()["io_bandwidth"].to_dict() == {(0, "a"): 100.0}
    posix_only = _frame(dxt).io_bandwidth(filter=lambda x: x["layer"] == "posix")
    assert posix_only["io_bandwidth"].to_dict() == {(0, "a"): pytest.approx(1000.0)}


def test_io_time_meta_from_recorder_calls_with_rank_time_and_fraction():
    f = _frame(
        _ops(
            (0, "a", "open", None, None, 0.0, 1.0),
            (0, "a", "write", 0, 10, 1.0, 3.0),
            (0, "a", "close", None, None, 3.0, 3.5),
            (0, "b", "seek", None, None, 4.0, 4.5),
            (1, "a", "open", None, None, 0.0, 2.0),
            (1, "a", "read", 0, 10, 2.0, 4.0),
        ),
        jobs=pd.DataFrame([{"nprocs": 2, "run_time_s": 8.0}]),
    )
    meta = f.io_time(kind="meta")
    assert list(meta.columns) == [
        "meta time",
        "rank time",
        "percentage",
        "rank io time",
        "io share",
    ]
    assert meta.index.names == ["file_name", "rank"]
    # percentage: of the rank's run time (PrismIO: 8 s); io share: of its I/O time (4 s each)
    assert meta.to_dict("index") == {
        ("a", 0): {
            "meta time": 1.5,
            "rank time": 8.0,
            "percentage": 0.1875,
            "rank io time": 4.0,
            "io share": 0.375,
        },
        ("b", 0): {
            "meta time": 0.5,
            "rank time": 8.0,
            "percentage": 0.0625,
            "rank io time": 4.0,
            "io share": 0.125,
        },
        ("a", 1): {
            "meta time": 2.0,
            "rank time": 8.0,
            "percentage": 0.25,
            "rank io time": 4.0,
            "io share": 0.5,
        },
    }
    # filter narrows the numerator only; rank= both
    only_a = f.io_time(kind="meta", rank=[0], filter=lambda x: x["file_name"] == "a")
    assert only_a.to_dict("index") == {
        ("a", 0): {
            "meta time": 1.5,
            "rank time": 8.0,
            "percentage": 0.1875,
            "rank io time": 4.0,
            "io share": 0.375,
        }
    }
    assert f.io_time()["io time"].to_dict() == {("a", 0): 3.5, ("b", 0): 0.5, ("a", 1): 4.0}
    assert f.io_time()["percentage"].to_dict() == {
        ("a", 0): 3.5 / 8,
        ("b", 0): 0.5 / 8,
        ("a", 1): 0.5,
    }
    # without a job row there is no run time: no percentage, the I/O share still
    bare = _frame(f.ops).io_time(kind="meta")
    assert (
        bare["percentage"].isna().all() and bare["io share"].to_dict() == meta["io share"].to_dict()
    )


def test_io_time_meta_from_darshan_counters_when_ops_are_dxt():
    ops = _ops((0, "a", "write", 0, 10, 1.0, 3.0), source="DXT_POSIX")
    rid = int(ops["record_id"][0])
    counters = pd.DataFrame(
        [
            {
                "rank": 0,
                "file_name": "a",
                "record_id": rid,
                "module": "posix",
                "op": "meta",
                "count": 1,
                "bytes": 0,
                "time_s": 0.5,
            },
            # DXT timed this file's writes: the counter is not added again
            {
                "rank": 0,
                "file_name": "a",
                "record_id": rid,
                "module": "posix",
                "op": "write",
                "count": 1,
                "bytes": 10,
                "time_s": 2.5,
            },
            # a file DXT did not trace: its counters stand in
            {
                "rank": 0,
                "file_name": "c",
                "record_id": 7,
                "module": "posix",
                "op": "read",
                "count": 1,
                "bytes": 30,
                "time_s": 1.5,
            },
        ]
    )
    f = _frame(ops, counters=counters, jobs=pd.DataFrame([{"nprocs": 1, "run_time_s": 10.0}]))
    assert f.io_time(kind="meta")["meta time"].to_dict() == {("a", 0): 0.5}
    t = f.io_time(kind="write")
    # rank 0's I/O: 2.0 (DXT write) + 0.5 (meta) + 1.5 (c's counters) = 4.0 s of its 10 s run
    assert t.to_dict("index") == {
        ("a", 0): {
            "write time": 2.0,
            "rank time": 10.0,
            "percentage": 0.2,
            "rank io time": 4.0,
            "io share": 0.5,
        }
    }
    assert f.io_bandwidth()["io_bandwidth"].to_dict() == {(0, "a"): 5.0, (0, "c"): 20.0}


def test_shared_files_lists_ranks_and_expands_reduced_records():
    ops = _ops(
        (0, "a", "read", 0, 1, 0, 1), (2, "a", "read", 0, 1, 0, 1), (1, "b", "write", 0, 1, 0, 1)
    )
    counters = pd.DataFrame(
        [
            {
                "rank": -1,
                "file_name": "s",
                "record_id": 5,
                "module": "posix",
                "op": "read",
                "count": 1,
                "bytes": 1,
                "time_s": 0.1,
            }
        ]
    )
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
    f = _frame(
        _ops(
            (0, "a", "write", 0, 100, 0, 1),
            (0, "a", "write", 100, 100, 1, 2),  # consecutive
            (0, "a", "write", 300, 100, 2, 3),  # sequential
            (0, "a", "write", 50, 100, 3, 4),  # random
            (0, "a", "read", 400, 100, 3.5, 4),  # first read: no predecessor
            (1, "a", "write", 200, 100, 0, 1),
            (1, "a", "write", 300, 100, 5, 6),  # rank 1's own order
        )
    )
    out = f.access_pattern(definition="per_rank")
    assert list(out.columns) == ["consecutive", "sequential", "random", "total"]
    assert out.loc["a"].to_dict() == {"consecutive": 2, "sequential": 1, "random": 1, "total": 4}


def test_access_pattern_prismio_compares_each_op_with_the_one_before_in_trace_order():
    f = _frame(
        _ops(
            (1, "a", "write", 200, 100, 0, 1),
            (1, "a", "write", 300, 100, 5, 6),  # rank 1 comes after rank 0
            (0, "a", "write", 0, 100, 0, 1),
            (0, "a", "write", 100, 100, 1, 2),
            (0, "a", "write", 300, 100, 2, 3),
            (0, "a", "write", 50, 100, 3, 4),
            (0, "a", "read", 400, 100, 3.5, 4),
            (0, "b", "read", 0, 10, 0, 1),  # one op: nothing to compare
        )
    )
    # rank 0: w[0,100) | w[100,200) end 100 == 100 consecutive | w[300,400) 200 < 300 sequential
    #         | w[50,150) 400 > 50 random | r[400,500) 150 < 400 sequential (reads and writes together)
    # rank 1: w[200,300) 500 > 200 random (follows rank 0's last op) | w[300,400) 300 == 300 consecutive
    out = f.access_pattern()
    assert out.to_dict("index") == {
        "a": {"consecutive": 2, "sequential": 2, "random": 2, "total": 6},
        "b": {"consecutive": 0, "sequential": 0, "random": 0, "total": 0},
    }
    assert f.access_pattern(definition="prismio").equals(out)
    assert f.access_pattern(rank=[1]).loc["a"].to_dict() == {
        "consecutive": 1,
        "sequential": 0,
        "random": 0,
        "total": 1,
    }
    with pytest.raises(ValueError, match="definition"):
        f.access_pattern(definition="seq")


def test_access_pattern_darshan_from_seq_and_consec_counters():
    def row(rank, file, module, op, count, seq=None, consec=None):
        return {
            "rank": rank,
            "file_name": file,
            "record_id": len(file),
            "module": module,
            "op": op,
            "count": count,
            "bytes": 0,
            "time_s": 0.0,
            "seq_count": seq,
            "consec_count": consec,
        }

    counters = pd.DataFrame(
        [
            row(0, "a", "posix", "write", 10, 7, 5),
            row(0, "a", "posix", "read", 4, 4, 4),
            row(-1, "a", "posix", "write", 6, 0, 0),
            row(0, "a", "posix", "meta", 3),
            row(0, "a", "mpiio", "write", 16),  # MPI-IO keeps no SEQ/CONSEC counters
            row(0, "s", "stdio", "read", 9),  # nor STDIO: no row for s
        ]
    )
    out = _frame(None, counters=counters).access_pattern(definition="darshan")
    # consecutive 5 + 4 + 0; sequential (7-5) + (4-4) + 0; random (10-7) + (4-4) + (6-0); total 10 + 4 + 6
    assert out.to_dict("index") == {
        "a": {"consecutive": 9, "sequential": 2, "random": 9, "total": 20}
    }
    assert (
        _frame(None, counters=counters)
        .access_pattern(definition="darshan", rank=[0])
        .loc["a", "total"]
        == 14
    )


def test_readwrite_pattern_classifies_bytes_by_their_last_toucher():
    f = _frame(
        _ops(
            (0, "a", "write", 0, 100, 0.0, 1.0),  # write 100 (first touch)
            (1, "a", "read", 50, 100, 1.0, 2.0),  # partial overlap: RAW 50, read 50
            (0, "a", "write", 0, 100, 2.0, 3.0),  # WAW 50 (0-50), WAR 50 (50-100)
            (1, "a", "read", 0, 10, 3.0, 4.0),  # RAW 10
            (0, "b", "read", 0, 8, 0.0, 1.0),
            (1, "b", "read", 4, 8, 1.0, 2.0),  # read 12, RAR 4
        )
    )
    out = f.readwrite_pattern()
    assert list(out.columns) == [
        "RAR",
        "RAW",
        "WAR",
        "WAW",
        "read",
        "write",
        "first read",
        "first write",
    ]
    # read / write: every byte the file's reads / writes moved (PrismIO's totals): a 100 + 10, 100 + 100
    assert out.to_dict("index") == {
        "a": {
            "RAR": 0,
            "RAW": 60,
            "WAR": 50,
            "WAW": 50,
            "read": 110,
            "write": 200,
            "first read": 50,
            "first write": 100,
        },
        "b": {
            "RAR": 4,
            "RAW": 0,
            "WAR": 0,
            "WAW": 0,
            "read": 16,
            "write": 0,
            "first read": 12,
            "first write": 0,
        },
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
    f = _frame(
        pd.concat(
            [
                _ops((0, "a", "read", 0, 10, 0, 1), log="L1"),
                _ops((0, "a", "read", 0, 30, 0, 1), log="L2"),
            ]
        )
    )
    assert f.io_bandwidth()["io_bandwidth"].to_dict() == {
        ("L1", 0, "a"): 10.0,
        ("L2", 0, "a"): 30.0,
    }
    assert f.readwrite_pattern().index.names == ["log_id", "file_name"]
    with pytest.raises(ValueError, match="one job"):
        f.timeline("/dev/null")


def _bars(png: np.ndarray, colour: str, min_px: int = 40) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) pixel box of the rows where `colour` runs at least `min_px`
    wide: the bars (or outline edges) drawn in it, not the legend's short swatches."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    mask = (png[:, :, :3] == rgb).all(axis=2)
    edges = np.diff(np.pad(mask.astype(np.int8), ((0, 0), (1, 1))), axis=1)
    rows = [
        r
        for r in range(len(mask))
        if (np.flatnonzero(edges[r] == -1) - np.flatnonzero(edges[r] == 1)).max(initial=0) >= min_px
    ]
    if not rows:
        return None
    cols = np.flatnonzero(mask[rows].any(axis=0))
    return min(rows), max(rows), int(cols.min()), int(cols.max())


def _red_lines(png: np.ndarray) -> list[int]:
    """Rows (one per line, its top pixel) of the long horizontal red edges: covering-set outlines."""
    top, bottom, _, _ = _bars(png, "#ff0000")
    rows = [r for r in range(top, bottom + 1) if _bars(png[r : r + 1], "#ff0000")]
    return [r for r in rows if r - 1 not in rows]


def test_timeline_draws_each_op_on_its_ranks_row_in_time_order_with_covering_outlines(tmp_path):
    from apps.analysis.timeline import COLOURS

    ops = _ops(
        (0, "a", "open", None, None, 0.0, 0.2),
        (0, "a", "write", 0, 10, 0.2, 1.0),
        (1, "a", "read", 0, 10, 1.0, 2.0),
        (1, None, "other", None, None, 2.0, 2.1),
    )
    cover = pd.DataFrame(
        [
            {"rank": 1, "record_id": 1, "start_s": 1.0, "end_s": 2.0, "share_s": 1.0},
            {"rank": -1, "record_id": 2, "start_s": 0.0, "end_s": 0.5, "share_s": 0.5},
        ]
    )
    out = _frame(ops, covering=cover).timeline(tmp_path / "t.png")
    image = Image.open(out)
    assert image.format == "PNG"
    # 11 in wide, 1.8 in + 0.3 in per row (ranks -1 "all", 0 and 1), at 110 dpi
    assert image.size == (11 * 110, round((1.8 + 0.3 * 3) * 110))
    png = np.asarray(image.convert("RGB")).astype(int)
    meta, write, read, other = (_bars(png, COLOURS[k]) for k in ("meta", "write", "read", "other"))
    assert None not in (meta, write, read, other), "every op kind is drawn, each in its colour"
    # rank 0's row (open, write) above rank 1's (read, other): rank 0 on top
    assert meta[:2] == write[:2] and read[:2] == other[:2]
    assert write[1] < read[0]
    # along the time axis: open 0-0.2 s, write 0.2-1 s, read 1-2 s, other 2-2.1 s
    assert meta[3] < write[2] and write[3] < read[2] and read[3] < other[2]
    assert (write[3] - write[2]) / (read[3] - read[2]) == pytest.approx(0.8, rel=0.05)
    # covering members outlined in red: rank 1's box around the read bar, the "all" row's above rank 0
    lines = _red_lines(png)
    assert len(lines) == 4, lines
    assert lines[0] < lines[1] < write[0] and write[1] < lines[2] < read[0] and read[1] < lines[3]
    box = _bars(png[lines[2] : lines[2] + 1], "#ff0000")
    assert abs(box[2] - read[2]) <= 3 and abs(box[3] - read[3]) <= 3  # same interval: 1-2 s


def _heat(*rows):
    """(module, rank, bin width, read bins, write bins) tuples -> bronze/heatmap rows of log L."""
    return pd.DataFrame(
        [
            {
                "log_id": "L",
                "module": m,
                "rank": r,
                "bin_width_s": w,
                "nbins": len(rd),
                "read_bytes": np.array(rd, dtype="int64"),
                "write_bytes": np.array(wr, dtype="int64"),
            }
            for m, r, w, rd, wr in rows
        ]
    )


def test_activity_rebins_heatmap_rows_of_different_widths_to_the_widest():
    """Rank 0 kept 0.1 s bins, rank 1's were coarsened to 0.2 s: rank 0's pairs of bins are summed
    (as Darshan's collapse_heatmap does) before the ranks are added, and every bin is 0.2 s."""
    f = IOFrame.from_frames(jobs=pd.DataFrame({"nprocs": [2], "run_time_s": [0.6]}))
    f.heatmap = _heat(
        ("POSIX", 0, 0.1, [1, 2, 3, 4], [0, 0, 0, 10]),
        ("POSIX", 1, 0.2, [100, 200, 300], [5, 0, 0]),
    )
    act = f.activity()
    # rank 0 at 0.2 s: reads [1+2, 3+4, 0] = [3, 7, 0], writes [0, 10, 0]
    assert act["read_bytes"].tolist() == [103, 207, 300]
    assert act["write_bytes"].tolist() == [5, 10, 0]
    assert np.allclose(act["start_s"], [0.0, 0.2, 0.4]) and np.allclose(
        act["end_s"], [0.2, 0.4, 0.6]
    )
    assert set(act["source"]) == {"heatmap"} and act["read_bytes"].sum() == 610


def test_rebin_spreads_a_bin_over_the_bins_it_overlaps_when_widths_do_not_divide():
    from apps.analysis.timeline import common_bins, rebin

    # 1 s bins [10, 20, 30] as 1.5 s bins: [10 + 20/2, 20/2 + 30] = [20, 40]
    assert rebin([10, 20, 30], 1.0, 1.5, 2).tolist() == [20, 40]
    assert rebin([10, 20, 30, 40], 0.1, 0.4, 1).tolist() == [100]
    heat = _heat(("POSIX", 0, 0.1, [0] * 200, [0] * 200), ("POSIX", 1, 6.4, [0] * 127, [0] * 127))
    assert common_bins(heat) == (6.4, 127)  # 200 bins of 0.1 s fit in the first 6.4 s bin


def test_busy_seconds_splits_intervals_over_the_bins_they_span():
    from apps.analysis.timeline import busy_seconds

    # [0.5, 2.5) -> 0.5 s in [0, 1), 1 s in [1, 2), 0.5 s in [2, 3); [1.5, 1.75) adds 0.25 s to [1, 2)
    got = busy_seconds([0.5, 1.5], [2.5, 1.75], [0, 1, 2, 3])
    assert np.allclose(got, [0.5, 1.25, 0.5])


def test_busy_grid_is_each_ranks_overlap_with_each_bin():
    """Every rank's row at once equals the overlap of each of its intervals with each bin, summed
    interval by interval; rank -1 (Darshan's reduced records) and ranks past the grid are left
    out, an end before its start counts as no time."""
    from apps.analysis.timeline import busy_grid

    rng = np.random.default_rng(7)
    n, nranks = 3000, 97
    ranks = rng.integers(-1, nranks + 3, n)
    starts = rng.uniform(-2, 100, n)
    ends = starts + rng.exponential(4, n) * (rng.random(n) > 0.1) - 3 * (rng.random(n) < 0.05)
    edges = np.linspace(0, 110, 51)
    expected = np.zeros((nranks, 50))
    for r, s, e in zip(ranks, starts, ends):
        if 0 <= r < nranks:
            expected[r] += np.clip(
                np.minimum(max(e, s), edges[1:]) - np.maximum(s, edges[:-1]), 0, None
            )
    assert np.allclose(busy_grid(ranks, starts, ends, edges, nranks), expected, atol=1e-9)
    # hand-worked: rank 1's [0.5, 2.5) over bins [0, 1, 2, 3]; rank 0 idle; rank -1 ignored
    got = busy_grid([1, -1], [0.5, 0.0], [2.5, 3.0], [0, 1, 2, 3], 2)
    assert np.allclose(got, [[0, 0, 0], [0.5, 1.0, 0.5]])


def test_timeline_of_more_ranks_than_rows_draws_rank_groups_with_marginals(tmp_path):
    """200 ranks: no longer one 0.3-inch row per rank (a 20-inch image), but the matrix figure of a
    fixed size, rank groups of 4."""
    from apps.analysis.timeline import MAX_RANK_ROWS, rank_groups

    ops = _ops(*[(r, f"f{r}", "write", 0, 10, r * 0.01, r * 0.01 + 1.0) for r in range(200)])
    out = _frame(ops).timeline(tmp_path / "many.png")
    img = Image.open(out)
    assert img.size == (1210, 792) and rank_groups(200) == 4 and MAX_RANK_ROWS == 64


# ---- the Spark-free reader against Spark ------------------------------------------------------
SPEC = TableSpec(
    name="t",
    layer="bronze",
    keys=("k",),
    partition_by=("month",),
    struct=T.StructType(
        [
            T.StructField("k", T.LongType()),
            T.StructField("month", T.StringType()),
            T.StructField("v", T.DoubleType()),
        ]
    ),
)
ROWS = [(i, f"m{i % 2}", float(i)) for i in range(6)]
DDL = "k long, month string, v double"


def _spark_rows(spark, path: str, columns=None, where: str | None = None) -> pd.DataFrame:
    df = spark.read.format("delta").load(path)
    df = df.where(where) if where else df
    df = df.select(*columns) if columns else df
    return df.toPandas().sort_values(df.columns).reset_index(drop=True)


def _rows_of(table) -> pd.DataFrame:
    df = table.to_pandas()
    return df.sort_values(list(df.columns)).reset_index(drop=True)


@pytest.mark.slow
def test_read_matches_spark_after_overwrite_merge_and_checkpoint(spark, tmp_path):
    from delta.tables import DeltaTable

    lake = str(tmp_path)
    path = SPEC.path(lake)
    spark.createDataFrame(ROWS, DDL).write.format("delta").partitionBy("month").option(
        "delta.checkpointInterval", "2"
    ).save(path)
    spark.createDataFrame(ROWS[:3], DDL).write.format("delta").mode("overwrite").save(path)
    src = spark.createDataFrame([(1, "m1", 10.0), (7, "m1", 7.0)], DDL)
    DeltaTable.forPath(spark, path).alias("t").merge(
        src.alias("s"), "t.k = s.k"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert (
        tmp_path / "bronze" / "t" / "_delta_log" / "00000000000000000002.checkpoint.parquet"
    ).exists()

    mine = arrow.read(lake, SPEC)
    assert mine.column_names == ["k", "month", "v"]  # the table's order, partition column in place
    pd.testing.assert_frame_equal(_rows_of(mine), _spark_rows(spark, path))
    assert _rows_of(mine)["k"].tolist() == [0, 1, 2, 7] and _rows_of(mine)["v"].tolist() == [
        0.0,
        10.0,
        2.0,
        7.0,
    ]
    assert arrow.exists(lake, SPEC)
    assert (
        arrow.version(lake, SPEC) == DeltaTable.forPath(spark, path).history(1).first().version == 2
    )


@pytest.mark.slow
def test_read_projects_and_filters_like_spark_with_and_without_deletion_vectors(spark, tmp_path):
    from deltalake import DeltaTable

    lake = str(tmp_path)
    path = SPEC.path(lake)
    for part in (ROWS[:3], ROWS[3:]):  # several files, one per month of each part
        spark.createDataFrame(part, DDL).coalesce(1).write.format("delta").mode(
            "append"
        ).partitionBy("month").save(path)
    where = (pc.field("month") == "m1") & (pc.field("v") > 1.0)
    want = "month = 'm1' AND v > 1.0"
    got = arrow.read(lake, SPEC, columns=["v", "k"], filter=where)
    assert got.column_names == ["v", "k"]
    pd.testing.assert_frame_equal(_rows_of(got), _spark_rows(spark, path, ["v", "k"], want))
    assert _rows_of(got)["k"].tolist() == [3, 5]

    # rows deleted in place (a deletion vector): a pyarrow dataset would still return them
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 3")
    assert "deletionVectors" in DeltaTable(path).protocol().reader_features
    assert (
        DeltaTable(path).deletion_vectors().read_all().num_rows == 1
    )  # the file kept, one row masked
    got = arrow.read(lake, SPEC, columns=["v", "k"], filter=where)
    assert got.column_names == ["v", "k"] and _rows_of(got)["k"].tolist() == [5]
    pd.testing.assert_frame_equal(_rows_of(got), _spark_rows(spark, path, ["v", "k"], want))
    everything = arrow.read(lake, SPEC)
    assert (
        everything.schema == arrow.read(lake, SPEC, filter=pc.field("k") >= 0).schema
    )  # string, not string_view
    pd.testing.assert_frame_equal(_rows_of(everything), _spark_rows(spark, path))


@pytest.mark.slow
def test_read_renamed_column_by_its_logical_name_and_refuses_what_delta_rs_cannot_read(
    spark, tmp_path
):
    lake = str(tmp_path)
    mapped = TableSpec(
        name="mapped",
        layer="silver",
        keys=("k",),
        struct=T.StructType(
            [
                T.StructField("k", T.LongType()),
                T.StructField("month", T.StringType()),
                T.StructField("w", T.DoubleType()),
            ]
        ),
    )
    path = mapped.path(lake)
    spark.createDataFrame(ROWS, DDL).write.format("delta").save(path)
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO w")  # the files still hold `v`
    got = arrow.read(lake, mapped, columns=["k", "w"], filter=pc.field("w") >= 4.0)
    assert _rows_of(got).values.tolist() == [[4, 4.0], [5, 5.0]]
    pd.testing.assert_frame_equal(_rows_of(arrow.read(lake, mapped)), _spark_rows(spark, path))

    widened = TableSpec(name="widened", layer="gold", keys=("k",), struct=mapped.struct)
    path = widened.path(lake)
    spark.createDataFrame(ROWS, DDL).write.format("delta").save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    with pytest.raises(arrow.UnreadableTable, match=r"gold/widened.*typeWidening"):
        arrow.read(lake, widened)


def test_a_table_not_written_yet_reads_as_no_rows_of_its_spec(tmp_path):
    spec = TABLES["covering_sets"]
    assert not arrow.exists(str(tmp_path), spec) and arrow.version(str(tmp_path), spec) is None
    empty = arrow.read(str(tmp_path), spec)
    assert empty.num_rows == 0 and empty.schema == spec.arrow_schema
    some = arrow.read(
        str(tmp_path / "nowhere"), spec, columns=["rank", "log_id"], filter=pc.field("rank") == 0
    )
    assert (
        some.num_rows == 0
        and some.schema == spec.arrow_schema.empty_table().select(["rank", "log_id"]).schema
    )
    assert arrow.versions(str(tmp_path)) == {}


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
    conf = load_config(
        "local", overrides={"lake": {"root": str(root / "lake")}, "gates": {"enabled": False}}
    )
    ingest.run(spark, conf, [str(traces)], echo=lambda *_: None)
    covering.run(spark, conf, echo=lambda *_: None)
    return conf.lake.root


def _same(a: IOFrame, b: IOFrame) -> None:
    for name in ("ops", "counters", "jobs"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)
    for method in (
        "io_bandwidth",
        "io_time",
        "shared_files",
        "access_pattern",
        "readwrite_pattern",
    ):
        pd.testing.assert_frame_equal(getattr(a, method)(), getattr(b, method)(), obj=method)


@pytest.mark.slow
def test_report_reader_frame_equals_from_lake(lake):
    """`iolake report` builds its IOFrame from the rows its sections read (`LakeReader.ioframe`):
    the same frame as `IOFrame.from_lake`."""
    from apps.report import LakeReader
    from iolake.config import load_config

    (log_id,) = IOFrame.from_darshan(DXT).log_ids
    reader = LakeReader(load_config("local", overrides={"lake": {"root": str(lake)}}))
    mine, theirs = reader.ioframe(log_id), IOFrame.from_lake(lake, log_id=log_id)
    _same(mine, theirs)
    pd.testing.assert_frame_equal(mine.covering, theirs.covering)


@pytest.mark.slow
def test_from_darshan_equals_from_lake(spark, lake):
    direct = IOFrame.from_darshan(DXT)
    (log_id,) = direct.log_ids
    from_lake = IOFrame.from_lake(lake, log_id=log_id)
    _same(direct, from_lake)
    assert len(direct.ops) == 7623 and len(from_lake.covering) > 0
    assert direct.readwrite_pattern()[["read", "write"]].sum().sum() > 0
    # a notebook's old call still works: its SparkSession is ignored, with a warning
    with pytest.warns(DeprecationWarning, match="from_lake"):
        old = IOFrame.from_lake(spark, lake, log_id=log_id)
    _same(from_lake, old)
    pd.testing.assert_frame_equal(old.covering, from_lake.covering)


@pytest.mark.slow
def test_versions_are_the_delta_versions_spark_sees(spark, lake):
    from delta.tables import DeltaTable

    root = arrow.root(lake)
    on_disk = {
        f"{p.parent.parent.name}/{p.parent.name}" for p in Path(root).glob("*/*/_delta_log")
    } - {"ops/runs"}
    got = arrow.versions(lake)
    assert set(got) == on_disk and {"bronze/jobs", "silver/covering_sets"} <= on_disk
    for name, v in got.items():
        assert v == DeltaTable.forPath(spark, f"{root}/{name}").history(1).first().version, name


@pytest.mark.slow
def test_timeline_from_the_lake_highlights_the_covering_set(lake, tmp_path):
    from apps.analysis.timeline import COLOURS

    f = IOFrame.from_lake(lake)
    png = np.asarray(Image.open(f.timeline(tmp_path / "job.png")).convert("RGB")).astype(int)
    assert _bars(png, "#ff0000") is not None  # covering-set outlines
    plot = png[:, : png.shape[1] * 4 // 5]  # left of the legend (upper right)

    def ink(
        colour,
    ):  # pixels of about this colour: dxt.darshan's bars are thin, their edges blended
        return int(
            (np.abs(plot - [int(colour[i : i + 2], 16) for i in (1, 3, 5)]).max(axis=2) <= 30).sum()
        )

    assert ink(COLOURS["read"]) > 100 and ink(COLOURS["write"]) > 100 and ink(COLOURS["meta"]) == 0


@pytest.mark.slow
def test_register_views_answers_sql_like_ioframe(spark, lake):
    from apps.views import register_views

    made = register_views(spark, lake)
    assert {
        "bronze_posix",
        "bronze_io_ops",
        "silver_covering_sets",
        "v_io_bandwidth",
        "v_shared_files",
    } <= set(made)
    sql = spark.sql("SELECT rank, file_name, io_bandwidth FROM v_io_bandwidth").toPandas()
    got = sql.set_index(["rank", "file_name"])["io_bandwidth"].dropna().sort_index()
    want = IOFrame.from_lake(lake).io_bandwidth()["io_bandwidth"]
    assert len(got) > 10
    pd.testing.assert_series_equal(got, want.loc[got.index], check_names=False)
    shared = spark.sql("SELECT file_name, ranks, num_ranks FROM v_shared_files").toPandas()
    mine = IOFrame.from_lake(lake).shared_files()
    assert len(shared) == len(mine) > 100
    assert dict(zip(shared["file_name"], shared["num_ranks"])) == mine["num ranks"].to_dict()


@pytest.mark.slow
def test_register_views_job_summary_counts_tags_when_the_table_exists(spark, tmp_path):
    from apps.views import register_views

    lake = str(tmp_path / "lake")
    spark.createDataFrame([("A", 4), ("B", 1)], "log_id string, nprocs long").write.format(
        "delta"
    ).save(f"{lake}/silver/job_features")
    assert "v_job_summary" in register_views(spark, lake)
    assert {r.log_id: r.n_tags for r in spark.sql("SELECT * FROM v_job_summary").collect()} == {
        "A": 0,
        "B": 0,
    }
    spark.createDataFrame(
        [("A", "small_io"), ("A", "small_io"), ("A", "random")], "log_id string, tag string"
    ).write.format("delta").save(f"{lake}/silver/bottleneck_tags")
    register_views(spark, lake)
    rows = {
        r.log_id: (r.n_tags, r.tags) for r in spark.sql("SELECT * FROM v_job_summary").collect()
    }
    assert rows == {"A": (3, {"small_io": 2, "random": 1}), "B": (0, None)}


def _heatmap_logs() -> list[Path]:
    import csv

    from tests.support.data import shared_path

    root = shared_path("darshan")
    with open(root / "MANIFEST.csv", newline="") as fh:
        return [
            root / r["path"]
            for r in csv.DictReader(fh)
            if "HEATMAP" in r["modules"] and r["pydarshan_3_5_0"] == "reads"
        ]


def test_activity_from_heatmap_without_dxt_matches_the_byte_counters():
    """Logs without DXT: activity over time comes from HEATMAP (`source` says so), and its bytes
    add up to the module's own byte counters (POSIX_BYTES_READ, ...), which the HEATMAP module
    does not read, on nearly every (log, module)."""
    checked = agree = 0
    for path in _heatmap_logs():
        f = IOFrame.from_darshan(path)
        if len(f.ops):
            continue
        act = f.activity()
        assert set(act.source) == {"heatmap"}, path
        assert (act.end_s > act.start_s).all() and act.bin.min() == 0
        for module, g in act.groupby("module"):
            c = f.counters[
                (f.counters.module == module.lower()) & f.counters.op.isin(["read", "write"])
            ]
            if c.empty:
                continue
            checked += 1
            by_op = c.groupby("op")["bytes"].sum()
            agree += int(
                g.read_bytes.sum() == by_op.get("read", 0)
                and g.write_bytes.sum() == by_op.get("write", 0)
            )
    print(f"\nHEATMAP bytes equal the counters on {agree} of {checked} (log, module)")
    assert checked >= 60 and agree >= 0.9 * checked


def test_activity_prefers_dxt_and_keeps_heatmap_bins():
    """A log with DXT and HEATMAP: activity from the DXT segments (each op's bytes once), in the
    HEATMAP's bin width."""
    path = next(p for p in _heatmap_logs() if "diagonal_write_only" in p.name)
    f = IOFrame.from_darshan(path)
    act = f.activity()
    assert set(act.source) == {"dxt"} and len(f.heatmap) > 0
    width = float(f.heatmap.bin_width_s.iloc[0])
    assert np.allclose(act.end_s - act.start_s, width)
    ops = f.ops[f.ops.op == "write"]
    assert act.write_bytes.sum() == int(ops.length.sum()) and act.read_bytes.sum() == 0


def test_timeline_of_a_log_without_dxt_draws_its_heatmap(tmp_path):
    """No timed ops, a HEATMAP: `timeline` draws ranks by time bins instead of nothing, and says so;
    a log with DXT still draws its ops."""
    logs = _heatmap_logs()
    dlio = (IOFrame.from_darshan(p) for p in logs if "dlio_logs" in str(p))
    heat_only = next(f for f in dlio if not len(f.ops))
    assert heat_only.timeline_source == "heatmap"
    out = heat_only.timeline(tmp_path / "heat.png")
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape[1] > 500 and (img.std(axis=2) > 20).any()  # coloured cells, not a blank canvas
    traced = IOFrame.from_darshan(next(p for p in logs if "diagonal_write_only" in p.name))
    assert traced.timeline_source == "dxt"
