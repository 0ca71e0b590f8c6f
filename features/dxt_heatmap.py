"""pydarshan's DXT heat map of one log: the bytes each rank read and wrote in each of `xbins`
time bins, a DXT segment's bytes split over the bins it spans in proportion to time.

Reads the log's DXT rows of bronze/io_ops (`source` 'DXT_POSIX' or 'DXT_MPIIO': rank, op,
length, start_s, end_s) and bronze/jobs (`nprocs`, `run_time_s`); writes nothing.
`IOFrame.dxt_heatmap` (apps/analysis/frame.py) and the report's DXT heat-map section
(apps/summary_sections.py) call it.

The definitions are pydarshan 3.5.0's (darshan-hpc/darshan,
darshan-util/pydarshan/darshan/experimental/plots/heatmap_handling.py):

- `segments` is `get_aggregate_data` (over `get_single_df_dict` and `get_rd_wr_dfs`): the
  module's read and/or write segments of every record, as (length, start_time, end_time, rank).
- `heatmap` is `get_heatmap_df`: bin edges `numpy.linspace(0, max_time, xbins + 1)`, with
  `max_time` the largest segment end when not given; the job summary's figure
  (plot_dxt_heatmap.py `plot_heatmap`) gives the job's run time (`metadata["job"]["run_time"]`,
  bronze/jobs.run_time_s), "since input DXT data is not necessarily bounded by wallclock
  duration". A time falls in bin k when edges[k] < t <= edges[k + 1] (`pandas.cut`, right-closed:
  a time of exactly 0, or past `max_time`, falls in no bin). Then per segment of `length` bytes:

  - start and end in one bin: all its bytes in that bin (a zero-length segment's too);
  - start in bin s, end in bin e > s: bin s gets length * (edges[s+1] - start) / elapsed, each
    bin between gets length * bin_width / elapsed, bin e gets length * (end - edges[e]) /
    elapsed: the bytes in proportion to the time in each bin;
  - only the start in a bin (the end past `max_time`): bin s gets length * min(bin_width /
    elapsed, 1) * (edges[s+1] - start) / bin_width, and the bins after it nothing; only the end
    in a bin (a start of exactly 0): bin e gets length * min(bin_width / elapsed, 1) *
    (end - edges[e]) / bin_width, the bins before it nothing. pydarshan's arithmetic for these
    cases, kept so the numbers equal its own: such a segment's bytes are not all counted.

  Rows are ranks 0..nprocs-1 (`reindex(range(nprocs))`: a rank without segments is a row of
  zeros, a rank outside that range is dropped).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MODULES = ("DXT_POSIX", "DXT_MPIIO")
OPS = ("read", "write")
DEFAULT_BINS = 200  # plot_dxt_heatmap.plot_heatmap's xbins
SEGMENT_COLUMNS = ["length", "start_time", "end_time", "rank"]


def segments(io_ops: pd.DataFrame, module: str = "DXT_POSIX", ops=OPS) -> pd.DataFrame:
    """`get_aggregate_data`: the `module` segments of `io_ops` (bronze/io_ops rows of one log)
    whose op is in `ops`, as (length, start_time, end_time, rank)."""
    if module not in MODULES:
        raise ValueError(f"module must be one of {MODULES}, not {module!r}")
    bad = set(ops) - set(OPS)
    if bad:
        raise ValueError(f"ops must be among {OPS}, not {sorted(bad)}")
    rows = io_ops[(io_ops["source"] == module) & io_ops["op"].isin(list(ops))]
    return pd.DataFrame(
        {
            "length": rows["length"].astype("float64").to_numpy(),
            "start_time": rows["start_s"].astype("float64").to_numpy(),
            "end_time": rows["end_s"].astype("float64").to_numpy(),
            "rank": rows["rank"].astype("int64").to_numpy(),
        },
        columns=SEGMENT_COLUMNS,
    )


def bin_edges(xbins: int, max_time: float) -> np.ndarray:
    """The xbins + 1 bin edges over [0, max_time] (`get_heatmap_df`)."""
    if int(xbins) < 1:
        raise ValueError(f"xbins must be at least 1, not {xbins}")
    if not max_time > 0:
        raise ValueError(f"max_time must be > 0, not {max_time}: no time to bin")
    return np.linspace(0.0, float(max_time), int(xbins) + 1)


def _bin_of(t: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each time, -1 for none: pandas.cut's right-closed bins (edges[k], edges[k+1]]."""
    k = np.searchsorted(edges, t, side="left") - 1
    ok = (k >= 0) & (k < len(edges) - 1) & ~np.isnan(t)
    return np.where(ok, k, -1)


def heatmap(
    segs: pd.DataFrame, xbins: int, nprocs: int, max_time: float | None = None
) -> np.ndarray:
    """`get_heatmap_df`: the nprocs x xbins matrix of bytes each rank moved in each bin, from
    `segments` rows (module docstring). `max_time` None: the largest segment end."""
    nprocs = int(nprocs)
    start = segs["start_time"].to_numpy(dtype="float64")
    end = segs["end_time"].to_numpy(dtype="float64")
    length = segs["length"].to_numpy(dtype="float64")
    rank = segs["rank"].to_numpy(dtype="int64")
    if max_time is None:
        if not len(segs):
            raise ValueError("no segments and no max_time: no time to bin")
        max_time = float(np.nanmax(end))
    edges = bin_edges(xbins, max_time)
    nbins = len(edges) - 1
    width = edges[1] - edges[0]
    out = np.zeros((max(nprocs, 0), nbins))
    keep = (rank >= 0) & (rank < nprocs)
    start, end, length, rank = start[keep], end[keep], length[keep], rank[keep]
    s, e = _bin_of(start, edges), _bin_of(end, edges)
    with np.errstate(divide="ignore", invalid="ignore"):
        true_frac = width / (end - start)  # inf for a zero-length segment
    frac = np.where(true_frac > 1, 1.0, true_frac)
    both = (s >= 0) & (e >= 0)

    # start and end in one bin: all of it there
    one = both & (s == e)
    np.add.at(out, (rank[one], s[one]), length[one])

    # start and end in different bins: every bin from the first to the last of the two gets
    # frac; adjacent bins of a segment no longer than a bin get bin_width / elapsed instead
    # (pydarshan's `adjacent_mask`); the start's and the end's bins are then scaled by the share
    # of the bin after the start and before the end
    many = both & (s != e)
    lo, hi = np.minimum(s, e)[many], np.maximum(s, e)[many]
    r, f, n = rank[many], frac[many], length[many]
    adjacent = (hi == lo + 1) & (f == 1.0)
    f_ends = np.where(adjacent, f * true_frac[many], f)
    sm, em = s[many], e[many]
    np.add.at(out, (r, sm), f_ends * ((edges[sm + 1] - start[many]) / width) * n)
    np.add.at(out, (r, em), f_ends * ((end[many] - edges[em]) / width) * n)
    inner = hi - lo - 1  # bins strictly between
    if inner.sum() > 0:
        which = np.repeat(np.arange(len(lo)), inner)
        cols = lo[which] + 1 + (np.arange(len(which)) - np.repeat(np.cumsum(inner) - inner, inner))
        np.add.at(out, (r[which], cols), (f * n)[which])

    # only one end in a bin
    only_start = (s >= 0) & (e < 0)
    np.add.at(
        out,
        (rank[only_start], s[only_start]),
        frac[only_start]
        * ((edges[s[only_start] + 1] - start[only_start]) / width)
        * length[only_start],
    )
    only_end = (s < 0) & (e >= 0)
    np.add.at(
        out,
        (rank[only_end], e[only_end]),
        frac[only_end] * ((end[only_end] - edges[e[only_end]]) / width) * length[only_end],
    )
    return out


def dxt_heatmap(
    io_ops: pd.DataFrame,
    nprocs: int,
    xbins: int = DEFAULT_BINS,
    module: str = "DXT_POSIX",
    ops=OPS,
    max_time: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(matrix, edges): `heatmap` of `segments(io_ops, module, ops)`, the nprocs x xbins bytes
    and the xbins + 1 bin edges in seconds since job start."""
    segs = segments(io_ops, module, ops)
    if max_time is None:
        if not len(segs):
            raise ValueError(f"no {module} segments for {list(ops)} and no max_time")
        max_time = float(segs["end_time"].max())
    return heatmap(segs, xbins, nprocs, max_time), bin_edges(xbins, max_time)
