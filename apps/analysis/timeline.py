"""PrismIO's timeline (Fig. 7): one row per rank, one bar per operation from start to end.

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


def draw_heatmap(heatmap: pd.DataFrame, path: str, title: str | None = None) -> str:
    """The timeline of a log without timed operations: Darshan's HEATMAP (bronze/heatmap rows of one
    log), one row per rank, one cell per time bin, coloured by the bytes the rank moved in it
    (read + written, over POSIX, STDIO and DFS; log scale) — pydarshan's job-summary heatmap."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    h = heatmap[heatmap["module"].isin(HEATMAP_MODULES)]
    if h.empty:
        h = heatmap
    width = float(h["bin_width_s"].iloc[0])
    nbins = int(h["nbins"].max())
    ranks = sorted(int(r) for r in set(h["rank"]))
    grid = np.zeros((len(ranks), nbins))
    row = {r: i for i, r in enumerate(ranks)}
    for r in h.itertuples():
        moved = np.asarray(r.read_bytes, dtype=float) + np.asarray(r.write_bytes, dtype=float)
        grid[row[int(r.rank)], : len(moved)] += moved
    fig = Figure(figsize=(11, min(20.0, 1.8 + 0.3 * max(len(ranks), 1))), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    masked = np.ma.masked_less_equal(grid, 0)
    vmax = max(float(grid.max()), 1.0)
    im = ax.imshow(
        masked,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        norm=LogNorm(vmin=max(1.0, float(masked.min()) if masked.count() else 1.0), vmax=vmax),
        extent=(0, nbins * width, len(ranks) - 0.5, -0.5),
    )
    fig.colorbar(im, ax=ax, label="bytes moved in the bin")
    ax.set_xlabel(f"time since job start (s), HEATMAP bins of {width:g} s")
    ax.set_ylabel("rank")
    if len(ranks) <= 32:
        ax.set_yticks(range(len(ranks)), [str(r) for r in ranks])
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return path
