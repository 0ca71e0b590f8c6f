"""Pure I/O time of logs with HEATMAP and no DXT: the counter spans alone (before) against the
spans cut to the non-empty HEATMAP bins (after), with the lower bound and the bins' union.

For every Darshan log of ../shared/data/darshan whose MANIFEST.csv `modules` has HEATMAP and not
DXT (or the logs given with `--logs`), decoded by the project's decoder: `before` is the cover of
its READ/WRITE START/END spans whole (the HEATMAP rows left out: what the covering set gave before
bounds), `after` its `pure_io_time_s` now (`features.covering_sets.log_covers`), `lower` its
`pure_io_time_min_s`, `bins` the union of non-empty bins re-binned to the widest width
(`apps.analysis.timeline.rebin`). Prints one line per log, largest `before` first, and the totals.

    python -m bench.heatmap_bounds [--logs FILE ...] [--top N]
"""

from __future__ import annotations

import csv
import sys

import numpy as np

from bench.common import parser, result, shared


def figures(path: str) -> dict | None:
    """before / after / lower / bins seconds and the time source of one log, or None without a cover."""
    from apps.analysis.timeline import common_bins, rebin
    from features.covering_sets import HEATMAP_BIN, log_members, log_rows
    from readers.darshan import decode_darshan

    t = decode_darshan(path)
    rows = log_rows(t)
    if rows is None:
        return None
    kind = rows[0]
    now = log_members(*rows)
    was = log_members(*[c[kind != HEATMAP_BIN] for c in rows])
    if now is None or was is None:
        return None
    heat = t.get("heatmap")
    bins = float("nan")
    if heat is not None and heat.num_rows:
        h = heat.to_pandas()
        width, nbins = common_bins(h)
        total = np.zeros(nbins, dtype="int64")
        for r in h.itertuples():
            both = np.asarray(r.read_bytes, "int64") + np.asarray(r.write_bytes, "int64")
            total += rebin(both, float(r.bin_width_s), width, nbins)
        bins = float(np.count_nonzero(total) * width)
    return {
        "nprocs": int(t["jobs"].column("nprocs")[0].as_py()),
        "before": float(was[2]["pure_io_time_s"][0]),
        "after": float(now[2]["pure_io_time_s"][0]),
        "lower": float(now[3][2]),
        "bins": bins,
        "source": now[3][0],
        "run_time_s": float(t["jobs"].column("run_time_s")[0].as_py() or 0.0),
    }


def manifest_logs() -> list[str]:
    root = shared("darshan")
    with open(root / "MANIFEST.csv") as fh:
        return [
            str(root / r["path"])
            for r in csv.DictReader(fh)
            if "HEATMAP" in r["modules"] and "DXT" not in r["modules"]
        ]


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("--logs", nargs="*", help="these logs instead of the shared corpus's")
    ap.add_argument("--top", type=int, default=10, help="lines printed (largest `before` first)")
    ap.add_argument("--quick", action="store_true", help="the first 5 logs only")
    args = ap.parse_args(argv)
    logs = args.logs or manifest_logs()
    if args.quick:
        logs = logs[:5]
    got = {}
    for p in logs:
        f = figures(p)
        if f is not None:
            got[p] = f
    order = sorted(got, key=lambda p: -got[p]["before"])
    print(
        f"{'nprocs':>6} {'run s':>9} {'before s':>10} {'after s':>10} {'lower s':>10} {'bins s':>10}  log"
    )
    for p in order[: args.top]:
        f = got[p]
        print(
            f"{f['nprocs']:>6} {f['run_time_s']:>9.1f} {f['before']:>10.3f} {f['after']:>10.3f} "
            f"{f['lower']:>10.3f} {f['bins']:>10.3f}  {p.rsplit('/', 1)[-1][:60]} ({f['source']})"
        )
    b = sum(f["before"] for f in got.values())
    a = sum(f["after"] for f in got.values())
    shrunk = sum(f["after"] < f["before"] - 1e-9 for f in got.values())
    ok = all(f["lower"] <= f["after"] <= f["bins"] + 1e-9 for f in got.values())
    result(
        "heatmap_bounds",
        f"{len(got)} logs covered: before {b:,.1f} s, after {a:,.1f} s in all ({a / b:.3f}); "
        f"{shrunk} shorter; lower <= after <= bins on every log: {ok}",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
