"""features/dxt_heatmap.py on literal segments: hand-derived bins, and pydarshan's own
`get_heatmap_df` (darshan/experimental/plots/heatmap_handling.py, the `darshan` wheel) on the
same segments, its corner cases included. The shared logs: tests/apps/test_dxt_heatmap_pydarshan.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from features import dxt_heatmap as dh


def _segs(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=dh.SEGMENT_COLUMNS)


def test_heatmap_splits_a_segment_over_its_bins_in_proportion_to_time():
    # 4 bins of 1 s over [0, 4]: (0, 1], (1, 2], (2, 3], (3, 4]
    segs = _segs(
        [
            (100, 0.5, 2.5, 0),  # 0.5 s in bin 0, 1 s in bin 1, 0.5 s in bin 2 of 2 s
            (60, 1.2, 1.8, 1),  # inside bin 1
            (10, 1.9, 2.1, 1),  # across the edge at 2 s, shorter than a bin: half and half
            (7, 3.5, 3.5, 2),  # zero length: all in its bin
            (40, 0.25, 1.25, 2),  # adjacent bins, as long as a bin: 3/4 and 1/4
        ]
    )
    got = dh.heatmap(segs, xbins=4, nprocs=4, max_time=4.0)
    want = np.array(
        [
            [25, 50, 25, 0],
            [0, 60 + 5, 5, 0],
            [30, 10, 0, 7],
            [0, 0, 0, 0],  # rank 3: no segment, a row of zeros
        ],
        dtype=float,
    )
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(dh.bin_edges(4, 4.0), [0, 1, 2, 3, 4])


def test_heatmap_without_max_time_ends_at_the_last_segment():
    segs = _segs([(10, 0.1, 0.2, 0), (30, 1.0, 2.0, 0)])
    # edges 0, 1, 2: the second segment starts on the edge 1.0, so in bin 0 (right-closed bins)
    got = dh.heatmap(segs, xbins=2, nprocs=1)
    np.testing.assert_allclose(got, [[10 + 0, 30]], rtol=1e-12)


@pytest.mark.parametrize("xbins", [1, 3, 10, 200])
def test_heatmap_equals_pydarshans_get_heatmap_df_on_literal_segments(xbins):
    from darshan.experimental.plots import heatmap_handling

    rng = np.random.default_rng(xbins)
    n = 300
    start = rng.uniform(0, 9, n)
    end = start + rng.exponential(0.5, n)
    corner = [
        (64, 0.0, 0.5, 0),  # starts at exactly 0: in no bin (pandas.cut is right-closed)
        (64, 0.0, 7.5, 1),
        (32, 9.5, 11.0, 2),  # ends past max_time
        (32, 2.0, 11.0, 3),
        (16, 4.0, 4.0, 0),  # zero length
        (16, 5.0, 5.0, 1),  # zero length on a bin edge (for some bin counts)
        (8, 1.0, 3.0, 7),  # rank past nprocs: dropped
        (8, 12.0, 13.0, 0),  # wholly past max_time
    ]
    segs = pd.concat(
        [
            _segs(
                {
                    "length": rng.integers(1, 1 << 20, n).astype(float),
                    "start_time": start,
                    "end_time": end,
                    "rank": rng.integers(0, 5, n),
                }
            ),
            _segs(corner),
        ],
        ignore_index=True,
    )
    for max_time in (10.0, None):
        want = heatmap_handling.get_heatmap_df(segs.copy(), xbins, 5, max_time).to_numpy()
        got = dh.heatmap(segs, xbins, 5, max_time)
        assert got.shape == want.shape == (5, xbins)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_segments_take_the_module_and_ops_asked_for():
    io_ops = pd.DataFrame(
        {
            "source": ["DXT_POSIX", "DXT_POSIX", "DXT_MPIIO", "RECORDER"],
            "op": ["read", "write", "write", "read"],
            "rank": [0, 1, 0, 0],
            "length": [1, 2, 3, 4],
            "start_s": [0.1, 0.2, 0.3, 0.4],
            "end_s": [0.2, 0.3, 0.4, 0.5],
        }
    )
    assert dh.segments(io_ops, "DXT_POSIX")["length"].tolist() == [1, 2]
    assert dh.segments(io_ops, "DXT_POSIX", ("write",))["rank"].tolist() == [1]
    assert dh.segments(io_ops, "DXT_MPIIO")["length"].tolist() == [3]
    with pytest.raises(ValueError, match="module"):
        dh.segments(io_ops, "RECORDER")
    with pytest.raises(ValueError, match="max_time"):
        dh.heatmap(dh.segments(io_ops, "DXT_POSIX"), 4, 2, 0.0)


def test_ioframe_dxt_heatmap_has_every_rank_and_bin_of_each_log():
    from apps.analysis import IOFrame

    ops = pd.DataFrame(
        {
            "log_id": ["A", "A", "B"],
            "rank": [0, 1, 0],
            "source": "DXT_POSIX",
            "op": ["read", "write", "write"],
            "offset": 0,
            "length": [100, 40, 8],
            "start_s": [0.5, 1.25, 0.1],
            "end_s": [2.5, 1.75, 0.2],
        }
    )
    jobs = pd.DataFrame({"log_id": ["A", "B"], "nprocs": [3, 1], "run_time_s": [4.0, 1.0]})
    f = IOFrame.from_frames(ops=ops, jobs=jobs)
    h = f.dxt_heatmap(bins=4)
    assert list(h.columns) == ["log_id", "rank", "bin", "start_s", "end_s", "bytes"]
    a = h[h["log_id"] == "A"].pivot(index="rank", columns="bin", values="bytes")
    np.testing.assert_allclose(a.to_numpy(), [[25, 50, 25, 0], [0, 40, 0, 0], [0, 0, 0, 0]])
    assert h[h["log_id"] == "A"]["end_s"].max() == 4.0
    assert h[h["log_id"] == "B"]["bytes"].tolist() == [8, 0, 0, 0]
    reads = f.dxt_heatmap(bins=2, ops=("read",), max_time="last_segment")
    assert reads["log_id"].unique().tolist() == ["A"]  # B has no reads: no rows
    assert reads["end_s"].max() == 2.5
    assert f.dxt_heatmap(module="DXT_MPIIO").empty
