"""PrismIO's timeline (Fig. 7): one row per rank, one bar per operation from start to end; past
`MAX_RANK_ROWS` ranks, and for Darshan's HEATMAP, a rank-by-time matrix with marginal sums.

A job of thousands of ranks has more rows than a picture has pixels: there the ops are drawn as
pydarshan's job-summary heat map draws the HEATMAP, a matrix of rank groups by time bins with a
time profile on top (summed over ranks) and per-rank totals at the side (summed over time), so
the picture reads at 2,048 ranks as at 100,000. Per-rank rows only where they fit.

Drawn on a bare `matplotlib.figure.Figure` (Agg canvas, no pyplot state), so it works in
threads and on machines without a display. Covering-set members (silver/covering_sets) are
outlined in red around their rank's row, under the bars (a member's edges sit on its first and
last op and would hide thin bars); a member Darshan reduced over all ranks (rank -1) sits on its
own row labelled "all".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLOURS = {"read": "#1f77b4", "write": "#ff7f0e", "meta": "#2ca02c", "other": "#9a9a9a"}
META_OPS = ("open", "close", "sync", "meta", "seek")
MAX_RANK_ROWS = 64  # per-rank rows up to this many ranks; rank groups past it


def op_kind(op: pd.Series) -> pd.Series:
    return op.where(
        op.isin(["read", "write"]), op.isin(META_OPS).map({True: "meta", False: "other"})
    )


def draw(
    ops: pd.DataFrame, covering: pd.DataFrame | None, path: str, title: str | None = None
) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import MaxNLocator

    ops = ops[ops["start_s"].notna() & ops["end_s"].notna()]
    ranks = sorted(set(ops["rank"]) | (set(covering["rank"]) if covering is not None else set()))
    if len([r for r in ranks if r >= 0]) > MAX_RANK_ROWS:
        return draw_busy(ops, covering, path, title)
    height = min(20.0, 1.8 + 0.3 * max(len(ranks), 1))
    fig = Figure(figsize=(11, height), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    kinds = op_kind(ops["op"])
    for (rank, kind), g in ops.groupby([ops["rank"], kinds]):
        bars = list(zip(g["start_s"], (g["end_s"] - g["start_s"]).clip(lower=0)))
        ax.broken_barh(
            bars,
            (rank - 0.35, 0.7),
            facecolors=COLOURS[kind],
            edgecolor=COLOURS[kind],
            linewidth=0.3,
        )
    handles = [Patch(color=COLOURS[k], label=k) for k in COLOURS if (kinds == k).any()]
    if covering is not None and len(covering):
        for r in covering.itertuples():
            ax.add_patch(
                Rectangle(
                    (r.start_s, r.rank - 0.45),
                    r.end_s - r.start_s,
                    0.9,
                    fill=False,
                    edgecolor="red",
                    linewidth=1.4,
                    zorder=0.9,
                )
            )
        handles.append(Patch(fill=False, edgecolor="red", label="covering set"))
        ax.autoscale_view(scaley=False)  # add_patch grows the data limits but not the view
    ax.set_xlabel("time since job start (s)")
    ax.set_ylabel("rank")
    if len(ranks) <= 32:
        ax.set_yticks(ranks, ["all" if r == -1 else str(r) for r in ranks])
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=20))
    if ranks:
        ax.set_ylim(max(ranks) + 0.6, min(ranks) - 0.6)  # rank 0 on top
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=handles, loc="upper right", fontsize=8, framealpha=0.8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return path


HEATMAP_MODULES = ("POSIX", "STDIO", "DFS")  # MPI-IO's and DAOS's bytes reach these layers


def rebin(values, width: float, target: float, nbins: int):
    """One HEATMAP row of `width`-second bins as `nbins` bins of `target` seconds (target >= width),
    the bytes of each source bin kept whole.

    Darshan's runtime coarsens a rank's bins when its run outgrows them (darshan-heatmap.c
    `collapse_heatmap`: adjacent pairs summed, the width doubled), so the ranks of one log can
    hold bins of different widths; pydarshan's `darshan.datatypes.heatmap.Heatmap.add_record`
    refuses such records ("Record bin_width_seconds is not consistent"). Summing rows index by
    index would mix time scales: every row goes to the widest width first. When `target` is a
    whole multiple of `width` (Darshan's doublings), source bin i falls whole into bin
    i // (target / width), as `collapse_heatmap` sums it; otherwise each source bin's bytes are
    spread over the target bins it overlaps, in proportion to the overlap (rounded to bytes)."""
    v = np.asarray(values, dtype="int64")
    out = np.zeros(nbins, dtype="int64")
    if not len(v):
        return out
    ratio = target / width
    k = round(ratio)
    if abs(ratio - k) < 1e-9 and k >= 1:
        idx = np.arange(len(v)) // k
        keep = idx < nbins
        np.add.at(out, idx[keep], v[keep])
        return out
    src = np.concatenate([[0.0], np.cumsum(v, dtype="float64")])
    edges = np.arange(nbins + 1) * target
    cum = np.interp(edges, np.arange(len(v) + 1) * width, src)
    return np.diff(np.rint(cum)).astype("int64")


def common_bins(heatmap: pd.DataFrame) -> tuple[float, int]:
    """(width, nbins) every row of `heatmap` (bronze/heatmap rows) is re-binned to: the widest
    bin width of the rows, and as many bins as the longest row spans at that width."""
    widths = heatmap["bin_width_s"].astype(float)
    width = float(widths.max())
    span = float((widths * heatmap["nbins"].astype(float)).max())
    return width, max(1, int(np.ceil(span / width - 1e-9)))


def busy_seconds(starts, ends, edges) -> np.ndarray:
    """Seconds of the intervals [starts, ends) inside each bin between consecutive `edges`, summed
    over the intervals (two sorted cumulative sums: no interval-by-bin table): `busy_grid` with
    every interval on one rank."""
    starts = np.asarray(starts, dtype=float)
    return busy_grid(np.zeros(len(starts), dtype=np.int64), starts, ends, edges, 1)[0]


def busy_grid(ranks, starts, ends, edges, nranks: int) -> np.ndarray:
    """`busy_seconds` of each rank 0..nranks-1 at once (row r: the intervals of rank r; other
    ranks are left out): the same two sorted cumulative sums, over all intervals sorted by (rank,
    time) as one key, rank r's times in a band of its own, and every (rank, edge) searched in one
    call. A job of thousands of ranks costs a few array passes instead of a pass per rank."""
    r = np.asarray(ranks, dtype=np.int64)
    s = np.asarray(starts, dtype=float)
    e = np.maximum(np.asarray(ends, dtype=float), s)
    edges = np.asarray(edges, dtype=float)
    keep = (r >= 0) & (r < nranks)
    r, s, e = r[keep], s[keep], e[keep]
    if not len(r):
        return np.zeros((nranks, len(edges) - 1))
    low = min(s.min(), edges.min())
    band = 2.0 * (max(e.max(), edges.max()) - low) + 1.0  # wider than any time's offset
    queries = (np.arange(nranks)[:, None] * band + (edges[None, :] - low)).ravel()
    first = np.searchsorted(np.sort(r), np.arange(nranks))  # where each rank's intervals begin
    lo, at = np.repeat(first, len(edges)), np.tile(edges, nranks)  # per (rank, edge) query
    covered = np.zeros(nranks * len(edges))
    for values, sign in ((s, 1.0), (e, -1.0)):
        key = r * band + (values - low)
        order = np.argsort(key)
        sums = np.concatenate([[0.0], np.cumsum(values[order])])
        k = np.searchsorted(key[order], queries)  # intervals before each (rank, edge), all ranks'
        covered += sign * ((k - lo) * at - (sums[k] - sums[lo]))
    return np.diff(covered.reshape(nranks, len(edges)), axis=1)


def rank_groups(nranks: int) -> int:
    """Ranks per matrix row: 1 up to MAX_RANK_ROWS ranks, else enough for MAX_RANK_ROWS rows."""
    return max(1, int(np.ceil(nranks / MAX_RANK_ROWS)))


def _matrix(
    grid: np.ndarray,
    edges: np.ndarray,
    profile: dict[str, np.ndarray],
    per_rank: np.ndarray,
    path: str,
    title: str | None,
    value_label: str,
    profile_label: str,
    side_label: str,
    covering: pd.DataFrame | None = None,
    unit: str = "",
) -> str:
    """The rank-by-time picture with marginal sums: `grid` (one row per rank, one column per bin)
    summed over groups of `rank_groups` ranks, `profile` (kind -> per-bin values, stacked) on top,
    `per_rank` (one value per rank) at the side (a group's largest and mean), covering-set
    members outlined on their row."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import EngFormatter

    nranks, nbins = grid.shape
    g = rank_groups(nranks)
    rows = int(np.ceil(nranks / g))
    padded = np.zeros((rows * g, nbins))
    padded[:nranks] = grid
    grouped = padded.reshape(rows, g, nbins).sum(axis=1)
    fig = Figure(figsize=(11, 7.2), dpi=110)
    FigureCanvasAgg(fig)
    gs = fig.add_gridspec(
        2, 3, height_ratios=(1, 3.2), width_ratios=(6, 1.1, 0.12), hspace=0.06, wspace=0.05
    )
    ax = fig.add_subplot(gs[1, 0])
    top = fig.add_subplot(gs[0, 0], sharex=ax)
    side = fig.add_subplot(gs[1, 1], sharey=ax)
    cax = fig.add_subplot(gs[1, 2])
    masked = np.ma.masked_less_equal(grouped, 0)
    lo = float(masked.min()) if masked.count() else 1.0
    hi = max(float(grouped.max()), lo * 1.0001)
    im = ax.imshow(
        masked,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        norm=LogNorm(vmin=lo, vmax=hi),
        extent=(float(edges[0]), float(edges[-1]), rows * g, 0),
    )
    ax.set_facecolor("#f4f4f4")
    fig.colorbar(im, cax=cax, label=value_label)
    handles = []
    if covering is not None and len(covering):
        for r in covering[covering["rank"] >= 0].itertuples():
            row = int(r.rank) // g * g
            ax.add_patch(
                Rectangle(
                    (r.start_s, row),
                    r.end_s - r.start_s,
                    g,
                    fill=False,
                    edgecolor="red",
                    linewidth=1.4,
                )
            )
        handles.append(Patch(fill=False, edgecolor="red", label="covering set"))
        ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.8)
    ax.set_xlabel("time since job start (s)")
    ax.set_ylabel("rank" if g == 1 else f"rank ({g} ranks per row)")
    ax.set_xlim(float(edges[0]), float(edges[-1]))
    # top: the time profile, summed over ranks (one filled step patch per kind, not a bar per
    # bin: the same picture for a fraction of the drawing)
    bottom = np.zeros(nbins)
    for kind, values in profile.items():
        colour = COLOURS.get(kind, "#555555")
        top.stairs(bottom + values, edges, baseline=bottom, fill=True, color=colour, linewidth=0)
        bottom = bottom + values
    top.set_ylabel(profile_label, fontsize=8)
    top.tick_params(labelbottom=False, labelsize=8)
    top.grid(axis="y", alpha=0.3)
    top.legend(
        handles=[Patch(color=COLOURS.get(k, "#555555"), label=k) for k in profile],
        loc="upper right",
        fontsize=8,
        framealpha=0.8,
    )
    if title:
        top.set_title(title, fontsize=10)
    # side: per-rank totals, summed over time (a row of grouped ranks: their largest and mean)
    per = np.zeros(rows * g)
    per[:nranks] = per_rank
    per = per.reshape(rows, g)
    y = np.arange(rows + 1) * g  # the rows' edges
    side.stairs(
        per.max(axis=1), y, orientation="horizontal", fill=True, color="#aeb6bf", label="largest"
    )
    if g > 1:
        side.stairs(
            per.mean(axis=1), y, orientation="horizontal", fill=True, color="#34495e", label="mean"
        )
        side.legend(loc="lower right", fontsize=7, framealpha=0.8)
    side.set_xlabel(side_label, fontsize=8)
    # the side's scale on top, where no axis is: at the bottom it meets the time axis's labels
    side.xaxis.set_label_position("top")
    side.xaxis.tick_top()
    side.tick_params(labelleft=False, labelsize=8)
    side.grid(axis="x", alpha=0.3)
    side.set_xlim(left=0)
    ax.set_ylim(rows * g, 0)
    if g == 1 and nranks <= 32:  # one row per rank: a tick per rank, at the row's middle
        ax.set_yticks(np.arange(nranks) + 0.5, [str(r) for r in range(nranks)])
    if unit:  # bytes as 1.2 GB, not a 1e9 offset over the axis
        top.yaxis.set_major_formatter(EngFormatter(unit=unit, sep=" "))
        side.xaxis.set_major_formatter(EngFormatter(unit=unit, sep=" "))
        side.tick_params(axis="x", labelrotation=45)
        for label in side.get_xticklabels():
            label.set_horizontalalignment("left")
    fig.subplots_adjust(left=0.07, right=0.93, top=0.95, bottom=0.08)
    fig.savefig(path)
    return path


def draw_busy(
    ops: pd.DataFrame, covering: pd.DataFrame | None, path: str, title: str | None = None
) -> str:
    """The timeline of more ranks than fit as rows: seconds each group of ranks spent in
    operations per time bin (200 bins over the job), the number of ranks in I/O over time on
    top (read / write / meta / other stacked: busy rank-seconds over the bin's width), and each
    rank's summed operation time at the side. Operations of records Darshan reduced over all
    ranks (rank -1) count in the profile only."""
    end = float(ops["end_s"].max()) if len(ops) else 1.0
    if covering is not None and len(covering):
        end = max(end, float(covering["end_s"].max()))
    edges = np.linspace(0.0, max(end, 1e-9), 201)
    kinds = op_kind(ops["op"])
    nranks = int(ops["rank"].max()) + 1 if len(ops) else 1
    grid = busy_grid(ops["rank"].to_numpy(), ops["start_s"], ops["end_s"], edges, nranks)
    width = float(edges[1] - edges[0])
    profile = {
        k: busy_seconds(ops.loc[kinds == k, "start_s"], ops.loc[kinds == k, "end_s"], edges) / width
        for k in COLOURS
        if (kinds == k).any()
    }
    per_rank = np.zeros(nranks)
    mine = ops[ops["rank"] >= 0]
    sums = (mine["end_s"] - mine["start_s"]).clip(lower=0).groupby(mine["rank"]).sum()
    per_rank[sums.index.astype(int)] = sums.to_numpy()
    return _matrix(
        grid,
        edges,
        profile,
        per_rank,
        path,
        title,
        value_label="seconds in I/O per row and bin",
        profile_label="ranks in I/O",
        side_label="time in I/O per rank (s)",
        covering=covering,
    )


def draw_heatmap(heatmap: pd.DataFrame, path: str, title: str | None = None) -> str:
    """The timeline of a log without timed operations: Darshan's HEATMAP (bronze/heatmap rows of one
    log) as pydarshan's job summary draws it: ranks by time bins coloured by the bytes moved
    (read + written, over POSIX, STDIO and DFS; log scale), the bytes per bin summed over ranks
    on top and the bytes per rank summed over time at the side. Rows of different bin widths are
    re-binned to the widest first (`rebin`); past MAX_RANK_ROWS ranks a row is a group of ranks."""
    h = heatmap[heatmap["module"].isin(HEATMAP_MODULES)]
    if h.empty:
        h = heatmap
    width, nbins = common_bins(h)
    nranks = int(h["rank"].max()) + 1
    rd, wr = np.zeros((nranks, nbins)), np.zeros((nranks, nbins))
    for r in h.itertuples():
        if r.rank < 0:
            continue
        rd[int(r.rank)] += rebin(r.read_bytes, float(r.bin_width_s), width, nbins)
        wr[int(r.rank)] += rebin(r.write_bytes, float(r.bin_width_s), width, nbins)
    return draw_bytes(rd, wr, np.arange(nbins + 1) * width, path, title)


def draw_dxt_heatmap(
    read: np.ndarray, write: np.ndarray, edges: np.ndarray, path, title: str | None = None
) -> str:
    """pydarshan's DXT heat map (features/dxt_heatmap.py: rank x bin matrices of the bytes read
    and written, DXT segments split over the bins they span) drawn as `draw_heatmap` draws the
    HEATMAP: ranks by time bins coloured by the bytes moved (log scale), the bytes per bin summed
    over ranks on top (read and write stacked), the bytes per rank summed over time at the side;
    past MAX_RANK_ROWS ranks a row is a group of ranks. `path` may be a file object."""
    return draw_bytes(read, write, edges, path, title)


def draw_bytes(
    read: np.ndarray, write: np.ndarray, edges: np.ndarray, path, title: str | None = None
) -> str:
    """Rank x bin matrices of bytes read and written (bins bounded by `edges`) as one heat map:
    colour = bytes moved (log scale), read and write stacked per bin on top, bytes per rank at the
    side, ranks grouped past MAX_RANK_ROWS. Both heat maps (HEATMAP, DXT) are drawn by it."""
    grid = read + write
    return _matrix(
        grid,
        np.asarray(edges, dtype=float),
        {"read": read.sum(axis=0), "write": write.sum(axis=0)},
        grid.sum(axis=1),
        path,
        title,
        value_label="bytes moved in the bin",
        profile_label="bytes per bin",
        side_label="bytes per rank",
        unit="B",
    )
