"""The report's sections after pydarshan's job summary: I/O cost, file counts by category,
access sizes and the most common ones, operation counts, data access by file-system root.

Reads the job's rows of bronze/posix, mpiio, stdio, h5f, h5d, pnetcdf_file, pnetcdf_var, dfs,
daos, files and jobs through the report's `LakeReader` (delta-rs, no Spark) and computes each
section with the pandas executors of features/job_summary.py (the same definitions as the SQL
views `io_cost`, `file_categories`, `access_sizes`, `common_access_sizes`, `op_counts`,
`data_access_by_root`, which cite pydarshan). Every figure aggregates over ranks, so it reads the
same at 2 ranks as at 100,000: bars per module, bin, operation or file-system root, never a row
per rank. `sections` returns the figures as PNG bytes and the tables as rows for
apps/templates/summary_sections.html.j2.
"""

from __future__ import annotations

import io
import json
import math

import pandas as pd
import pyarrow.compute as pc

from apps.drawing import Drawings, png_of
from features import dxt_heatmap as dh
from features import job_summary as js
from features.units import human_bytes  # the one byte formatter of the report

MAX_ROOTS = 12  # file-system roots drawn, largest traffic first; the rest "and N more"
READ, WRITE = "#2C69A9", "#DA0017"  # read blue, write red, as the timeline
COST_COLOURS = {
    "read_time_s": READ,
    "write_time_s": WRITE,
    "meta_time_s": "#8c8c8c",
    "wait_time_s": "#d68910",
}
COST_LABELS = {
    "read_time_s": "read",
    "write_time_s": "write",
    "meta_time_s": "metadata",
    "wait_time_s": "wait",
}
CATEGORY_LABELS = {
    "all": "total",
    "read_only": "read-only",
    "write_only": "write-only",
    "read_write": "read/write",
}


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes (the report and the fleet page embed them as base64)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def figure(width: float, height: float):
    """A matplotlib figure on the Agg canvas (no pyplot state: safe in a long-lived process)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def human_count(n: float) -> str:
    """A count on a bar: 1234 -> 1,234; 2.5e6 -> 2.5M."""
    n = float(n)
    if n < 1e5:
        return f"{int(n):,}"
    for unit, k in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= k:
            return f"{n / k:.3g}{unit}"
    return f"{int(n)}"


# ---- the figures --------------------------------------------------------------------------
def draw_io_cost(cost: pd.DataFrame, run_time_s: float | None) -> bytes:
    """pydarshan's I/O cost figure, on its side: per module, seconds per process in read,
    write, metadata and wait, stacked, on an axis of the job's run time (a dashed line), each
    bar's total and its share of the run time written beside it."""
    fig = figure(10, 1.3 + 0.42 * len(cost))
    ax = fig.add_subplot(111)
    y = list(range(len(cost)))
    left = [0.0] * len(cost)
    for col, colour in COST_COLOURS.items():
        v = cost[col].astype(float).tolist()
        if not any(v):
            continue
        ax.barh(y, v, left=left, color=colour, label=COST_LABELS[col], height=0.6)
        left = [a + b for a, b in zip(left, v)]
    ax.set_yticks(y, cost["module"].tolist(), fontsize=9)
    ax.invert_yaxis()
    top = max(left + [1e-9])
    run = run_time_s if run_time_s and run_time_s > 0 else None
    ax.set_xlim(0, max(run or 0, top) * 1.3)
    if run:
        ax.axvline(run, color="#444444", ls="--", lw=1)
        ax.annotate("run time", (run, 1), xycoords=("data", "axes fraction"), xytext=(3, -10),
                    textcoords="offset points", fontsize=8, color="#444444")  # fmt: skip
    for i, total in enumerate(left):
        pct = f" ({100 * total / run:.1f} % of run time)" if run else ""
        ax.annotate(f"{total:.4g} s{pct}", (total, i), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)  # fmt: skip
    ax.set_xlabel("seconds per process (sum over the module's records / processes)", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["right", "top"]].set_visible(False)
    fig.legend(loc="upper right", fontsize=8, ncols=4, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / fig.get_figheight()))
    return png_bytes(fig)


def _bars(ax, labels, series: dict[str, list], colours: dict[str, str]) -> None:
    """Grouped vertical bars with their counts written above; log scale past 3 decades."""
    n = len(series)
    width = 0.8 / n
    values = [v for vs in series.values() for v in vs]
    positive = [v for v in values if v > 0]
    for k, (name, vs) in enumerate(series.items()):
        xs = [i + (k - (n - 1) / 2) * width for i in range(len(labels))]
        bars = ax.bar(xs, vs, width, label=name, color=colours.get(name))
        for b, v in zip(bars, vs):
            if v > 0:
                ax.annotate(
                    human_count(v),
                    (b.get_x() + b.get_width() / 2, v),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    rotation=90 if len(labels) * n > 14 else 0,
                )
    if positive and max(positive) / min(positive) > 1000:
        from matplotlib.ticker import NullLocator

        ax.set_yscale("log")
        ax.set_ylim(0.5, max(positive) * 30)
        # past 3 decades the minor ticks carry no label; each is an artist to lay out and draw
        ax.yaxis.set_minor_locator(NullLocator())
    else:
        ax.set_ylim(0, max(positive + [1]) * 1.25)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.spines[["right", "top"]].set_visible(False)
    ax.grid(axis="y", alpha=0.3)


def draw_access_sizes(hist: pd.DataFrame) -> bytes:
    """pydarshan's access-size histogram of each module: reads and writes per size bin."""
    modules = [m for m in js.HIST_MODULES if m in set(hist["module"])]
    fig = figure(10, 2.9 * len(modules) + 0.3)
    for i, module in enumerate(modules):
        ax = fig.add_subplot(len(modules), 1, i + 1)
        h = hist[hist["module"] == module].sort_values("bin")
        labels = [label for _, label in js.SIZE_BINS]
        series = {
            d: [int(h[(h["direction"] == d) & (h["bin"] == b)]["count"].sum()) for b in range(10)]
            for d in ("read", "write")
        }
        _bars(ax, labels, series, {"read": READ, "write": WRITE})
        agg = " (aggregate datatype sizes)" if module in js.AGG_SIZES else ""
        ax.set_title(f"{module}: accesses by size{agg}", fontsize=10, loc="left")
        ax.set_ylabel("count", fontsize=8)
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return png_bytes(fig)


def draw_op_counts(ops: pd.DataFrame) -> bytes:
    """pydarshan's operation counts of each module: one bar per operation."""
    modules = [m for m in js.OP_COUNTS if m in set(ops["module"])]
    cols = 2 if len(modules) > 1 else 1
    rows = math.ceil(len(modules) / cols)
    fig = figure(10, 3.0 * rows + 0.3)
    for i, module in enumerate(modules):
        ax = fig.add_subplot(rows, cols, i + 1)
        o = ops[ops["module"] == module].sort_values("position")
        _bars(ax, o["operation"].tolist(), {"count": o["count"].tolist()}, {"count": "#40A43A"})
        ax.set_title(f"{module}: operations", fontsize=10, loc="left")
    fig.tight_layout()
    return png_bytes(fig)


def draw_file_categories(cats: pd.DataFrame) -> bytes:
    """Files per category of each module: read-only, write-only, read/write."""
    modules = [m for m in js.CATEGORY_MODULES if m in set(cats["module"])]
    labels = [CATEGORY_LABELS[c] for c in js.CATEGORIES[1:]]
    series = {
        m: [
            int(cats[(cats["module"] == m) & (cats["category"] == c)]["files"].sum())
            for c in js.CATEGORIES[1:]
        ]
        for m in modules
    }
    fig = figure(10, 2.8)
    ax = fig.add_subplot(111)
    palette = ["#2C69A9", "#FD6A07", "#40A43A", "#853692", "#8c8c8c"]
    _bars(ax, labels, series, dict(zip(modules, palette)))
    ax.set_ylabel("files", fontsize=8)
    ax.set_title("Files by category, per module", fontsize=10, loc="left")
    ax.legend(fontsize=8, loc="upper right")
    ax.tick_params(axis="x", labelrotation=0)
    fig.tight_layout()
    return png_bytes(fig)


def draw_roots(roots: pd.DataFrame) -> bytes:
    """pydarshan's data access by category: per file-system root, bytes and files read and
    written (the MAX_ROOTS roots with most traffic)."""
    r = roots.head(MAX_ROOTS).iloc[::-1]
    fig = figure(10, 0.9 + 0.55 * len(r))
    axb, axf = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    y = list(range(len(r)))
    for ax, cols, unit in (
        (axb, ("bytes_read", "bytes_written"), "bytes"),
        (axf, ("files_read", "files_written"), "files"),
    ):
        for k, (col, colour) in enumerate(zip(cols, (READ, WRITE))):
            v = r[col].astype(float).tolist()
            ax.barh(
                [i + (0.2 if k == 0 else -0.2) for i in y],
                v,
                0.4,
                color=colour,
                label=col.replace("_", " "),
            )
            for i, x in zip(y, v):
                if x <= 0:
                    continue
                text = human_bytes(x) if unit == "bytes" else human_count(x)
                ax.annotate(
                    text,
                    (x, i + (0.2 if k == 0 else -0.2)),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7,
                )
        vals = [x for c in cols for x in r[c].astype(float) if x > 0]
        if vals and max(vals) / min(vals) > 100:
            ax.set_xscale("symlog", linthresh=max(min(vals), 1))
        ax.set_xlim(0, max(vals + [1]) * (8 if ax.get_xscale() == "symlog" else 1.3))
        ax.set_xticks([])
        ax.spines[["right", "top"]].set_visible(False)
        ax.legend(fontsize=7, loc="lower right")
    # a root is a trace string: "$" would start matplotlib's mathtext
    labels = [str(x).replace("$", r"\$") for x in r["filesystem_root"]]
    axb.set_yticks(y, labels, fontsize=8)
    axf.set_yticks(y, [""] * len(y))
    axb.set_title("bytes", fontsize=9, loc="left")
    axf.set_title("files", fontsize=9, loc="left")
    fig.tight_layout()
    return png_bytes(fig)


def draw_dxt_heatmap(read, write, edges, title: str) -> bytes:
    """pydarshan's DXT heat map of one module: apps.analysis.timeline.draw_dxt_heatmap."""
    from apps.analysis import timeline

    return png_of(timeline.draw_dxt_heatmap, read, write, edges, title=title)


def dxt_heatmaps(reader, log_id: str, job: dict, out: dict, drawings: Drawings) -> None:
    """pydarshan's DXT heat map of each DXT module the log has (features/dxt_heatmap.py, with
    its job summary's `DEFAULT_BINS` bins over the job's run time): `out["dxt_heatmap"]` the
    per-bin totals over ranks (read and written), `out[<module>_heatmap_png]` the figure."""
    t = reader.read(
        "io_ops",
        ["source", "rank", "op", "length", "start_s", "end_s"],
        log_id=log_id,
        filter=pc.field("source").isin(list(dh.MODULES)),
    )
    if t is None or not t.num_rows:
        return
    ops = t.to_pandas()
    run = job.get("run_time_s")
    nprocs = int(job.get("nprocs") or int(ops["rank"].max()) + 1)
    maps = []
    for module in dh.MODULES:
        segs = {op: dh.segments(ops, module, (op,)) for op in dh.OPS}
        if not any(len(v) for v in segs.values()):
            continue
        entry: dict = {"module": module, "bins": dh.DEFAULT_BINS, "nprocs": nprocs}
        if run is not None and run > 0:
            entry["max_time_s"], entry["time_source"] = float(run), "run_time"
        else:  # a log without a run time: the last segment's end, as get_heatmap_df's default
            entry["max_time_s"] = float(max(v["end_time"].max() for v in segs.values() if len(v)))
            entry["time_source"] = "last_segment"
        try:
            m = {
                op: dh.heatmap(v, dh.DEFAULT_BINS, nprocs, entry["max_time_s"])
                for op, v in segs.items()
            }
        except ValueError as e:
            out["notes"].append(f"{module} heat map: not computed ({e})")
            continue
        edges = dh.bin_edges(dh.DEFAULT_BINS, entry["max_time_s"])
        entry["bin_width_s"] = float(edges[1] - edges[0])
        for op in dh.OPS:
            entry[f"{op}_bytes"] = [round(float(x), 3) for x in m[op].sum(axis=0)]
            entry[f"segment_{op}_bytes"] = int(segs[op]["length"].sum())
            entry[f"binned_{op}_bytes"] = round(float(m[op].sum()), 3)
        entry["ranks_with_io"] = int(((m["read"] + m["write"]).sum(axis=1) > 0).sum())
        key = f"{module.lower()}_heatmap_png"
        entry["png"] = key
        title = f"{module}: bytes read and written, {dh.DEFAULT_BINS} bins over {entry['max_time_s']:.4g} s"
        _draw(drawings, out, key, draw_dxt_heatmap, m["read"], m["write"], edges, title)
        maps.append(entry)
    if maps:
        out["dxt_heatmap"] = maps


# ---- reading and putting together -----------------------------------------------------------
def _frames(reader, log_id: str) -> dict[str, pd.DataFrame]:
    out = {}
    for module, table in js.TABLE.items():
        t = reader.read(table, log_id=log_id)
        if t is not None and t.num_rows:
            out[module] = t.to_pandas()
    return out


def _records(df: pd.DataFrame) -> list[dict]:
    """Rows as plain Python values (ints, floats, None for NaN): for the page and for JSON."""
    return json.loads(df.to_json(orient="records", double_precision=15))


def _draw(drawings: Drawings, out: dict, key: str, fn, *args) -> None:
    """`out[key]` = the PNG of `fn(*args)` once `drawings` is rendered; a note if it fails (a page
    without one figure beats no page)."""

    def done(png: bytes | None, error: str | None) -> None:
        if png is not None:
            out[key] = png
        else:
            out.setdefault("notes", []).append(f"{key}: not drawn ({error})")

    drawings.add(fn, *args, done=done)


def sections(reader, log_id: str, job: dict, drawings: Drawings | None = None) -> dict | None:
    """The job-summary sections of one log, or None when it has no Darshan module record. The
    figures (`*_png`) are added to `drawings` and appear in the dict once the caller renders it;
    without `drawings` they are drawn before this returns."""
    mine = drawings is None
    drawings = Drawings() if mine else drawings
    modules = _frames(reader, log_id)
    if not modules:
        return None
    nprocs = job.get("nprocs") or 1
    out: dict = {"notes": []}
    dxt_heatmaps(reader, log_id, job, out, drawings)
    cost = js.pd_io_cost(modules, {log_id: nprocs})
    cost["total_s"] = cost[list(COST_COLOURS)].sum(axis=1)
    out["io_cost"] = _records(cost)
    if len(cost):
        _draw(drawings, out, "io_cost_png", draw_io_cost, cost, job.get("run_time_s"))

    cats = js.pd_file_categories(modules)
    out["file_categories"] = [
        {
            "module": m,
            "rows": [
                {**r, "label": CATEGORY_LABELS[r["category"]]}
                for r in _records(cats[cats["module"] == m])
            ],
        }
        for m in js.CATEGORY_MODULES
        if m in set(cats["module"])
    ]
    if len(cats):
        _draw(drawings, out, "file_categories_png", draw_file_categories, cats)

    hist = js.pd_access_sizes(modules)
    out["access_sizes"] = _records(hist)
    if len(hist) and hist["count"].sum() > 0:
        _draw(drawings, out, "access_sizes_png", draw_access_sizes, hist)
    common = js.pd_common_access_sizes(modules)
    out["common_access"] = [
        {
            "module": m,
            "rows": _records(common[(common["module"] == m) & (common["rank"] <= 4)]),
        }
        for m in js.HIST_MODULES
        if m in set(common["module"])
    ]
    ops = js.pd_op_counts(modules)
    out["op_counts"] = _records(ops)
    if len(ops):
        _draw(drawings, out, "op_counts_png", draw_op_counts, ops)

    files = reader.read("files", ["log_id", "record_id", "name"], log_id=log_id)
    if files is not None and files.num_rows:
        roots = js.pd_data_access_by_root(modules, files.to_pandas())
        out["roots"] = _records(roots.head(MAX_ROOTS))
        out["roots_more"] = max(len(roots) - MAX_ROOTS, 0)
        if len(roots):
            _draw(drawings, out, "roots_png", draw_roots, roots)
    if mine:
        drawings.render()
    return out
