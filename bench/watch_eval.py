"""Regression-watch detectors on a year of Edison benchmark jobs (TOKIO-ABC): recall of injected
step drops against the alarm rate on the real series.

    python -m bench.watch_eval [--data DIR] [--trials N] [--seed S] [--jobs J] [--grid]
    python -m bench.watch_eval --draws 21     # the defaults over seeds 1..21: mean, range
    python -m bench.watch_eval --quick        # the defaults alone, 5 change points per series

Data: `../shared/data/tokio-abc/edison-summaries_2017-02-14-2018-02-15.csv.gz` (one row per
Darshan log, 2017-02-14..2018-02-15, Edison's Lustre scratch1..3). The series: one per
application key as the `watch` stage builds it from the lake — executable basename
(`darshan_app`), file system (`_file_system`), process-count bucket (`darshan_nprocs`, conf
`watch.nprocs_buckets`), I/O direction (read when more bytes were read than written,
`darshan_tot_bytes_{read,written}_posix`) and layout (shared when the job opened one file,
`darshan_num_opens_posix` = 1, else file-per-process). The user is the same for every job. The
metric: `darshan_agg_perf_by_slowest_posix` (MiB/s, Darshan's bandwidth by the slowest process)
in start order; rows without it are dropped. The key the issue names (exe, fs, nprocs bucket;
user constant) is measured too, last row: IOR's four modes then share one series.

Protocol (fixed seed): for each series and trial, a change point c drawn uniformly from the
runs of the second half of the series that leave 5 runs after it; the values from c on are
multiplied by 0.7 (-30%) or 0.5 (-50%). Recall@5: share of trials where the detector raises an
alarm on one of runs c..c+4. False alarms: alarms on the unmodified series before c (real noise
and real file-system events included) per 100 runs that could alarm (baseline >= min_history),
summed over trials; and on each whole unmodified series ("alarms/100 all").
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import parser, result, shared
from features.regressions import Params, detect, orient

DATA = shared("tokio-abc")
CSV = "edison-summaries_2017-02-14-2018-02-15.csv.gz"
DROPS = (0.3, 0.5)
AFTER = 5


def nprocs_bucket(n: np.ndarray, edges) -> np.ndarray:
    edges = np.asarray(edges)
    i = np.searchsorted(edges, n, side="right") - 1
    hi = np.append(edges[1:] - 1, -1)
    return np.array([f"{edges[j]}-{hi[j]}" if hi[j] >= 0 else f"{edges[j]}+" for j in i])


def edison_history(data: Path = DATA, key: str = "lake", edges=None) -> pd.DataFrame:
    """The Edison summaries as a watch history: `app`, `start` (epoch s), `fs`, `bandwidth_mib_s`."""
    from iolake.config import load_config

    edges = edges or load_config().watch.nprocs_buckets
    d = pd.read_csv(
        data / CSV,
        usecols=[
            "_datetime_start",
            "_file_system",
            "darshan_app",
            "darshan_nprocs",
            "darshan_agg_perf_by_slowest_posix",
            "darshan_tot_bytes_read_posix",
            "darshan_tot_bytes_written_posix",
            "darshan_num_opens_posix",
        ],
    )
    d = d.dropna(subset=["darshan_agg_perf_by_slowest_posix", "_datetime_start", "darshan_nprocs"])
    exe = d["darshan_app"].str.split().str[0].str.rsplit("/", n=1).str[-1]
    parts = [
        exe,
        d["_file_system"],
        pd.Series(nprocs_bucket(d["darshan_nprocs"].to_numpy(int), edges), index=d.index),
    ]
    if key == "lake":
        parts.append(
            pd.Series(
                np.where(
                    d["darshan_tot_bytes_read_posix"] > d["darshan_tot_bytes_written_posix"],
                    "read",
                    "write",
                ),
                index=d.index,
            )
        )
        parts.append(
            pd.Series(np.where(d["darshan_num_opens_posix"] > 1, "fpp", "shared"), index=d.index)
        )
    app = parts[0].astype(str)
    for p in parts[1:]:
        app = app + "|" + p.astype(str)
    return (
        pd.DataFrame(
            {
                "app": app,
                "start": d["_datetime_start"],
                "fs": d["_file_system"],
                "bandwidth_mib_s": d["darshan_agg_perf_by_slowest_posix"],
            }
        )
        .sort_values(["app", "start"], kind="mergesort")
        .reset_index(drop=True)
    )


def series(history: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    for app, g in history.groupby("app", sort=True):
        y = orient(g["bandwidth_mib_s"].to_numpy(), "lower")
        out[app] = y[~np.isnan(y)]
    return out


def change_points(ys: dict, trials: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {a: rng.integers(len(y) // 2, len(y) - AFTER + 1, size=trials) for a, y in ys.items()}


def _one_series(args) -> tuple:
    """(hits per drop, trials, alarms before c, runs before c, alarms, runs) of one series."""
    y, cps, rules, p = args
    hits = {d: 0 for d in DROPS}
    first_eligible = p.min_history + p.short_window - 1
    clean = np.array(sorted({a["t"] for r in rules for a in detect(y, r, p)}), dtype=int)
    pre_alarms = pre_runs = 0
    for c in cps:
        pre_alarms += int((clean < c).sum())
        pre_runs += max(0, c - first_eligible)
        for d in DROPS:
            yy = y.copy()
            yy[c:] += np.log1p(-d)
            ts = {a["t"] for r in rules for a in detect(yy, r, p, stop=c + AFTER)}
            hits[d] += any(c <= t < c + AFTER for t in ts)
    return hits, len(cps), pre_alarms, pre_runs, len(clean), max(0, len(y) - first_eligible)


def evaluate(ys: dict, cps: dict, rules, p: Params, pool=None) -> dict:
    """Recall@5 per drop and false-alarm rates for the union of `rules` with settings `p`
    (series spread over `pool`'s processes when given)."""
    jobs = [(y, cps[app], list(rules), p) for app, y in ys.items()]
    parts = (
        list(pool.map(_one_series, jobs)) if pool is not None else [_one_series(j) for j in jobs]
    )
    n_trials = sum(x[1] for x in parts)
    hits = {d: sum(x[0][d] for x in parts) for d in DROPS}
    pre_alarms, pre_runs, all_alarms, all_runs = (sum(x[i] for x in parts) for i in range(2, 6))
    return {
        **{f"recall@5 -{int(d * 100)}%": 100.0 * hits[d] / n_trials for d in DROPS},
        "alarms/100 pre": 100.0 * pre_alarms / max(pre_runs, 1),
        "alarms/100 all": 100.0 * all_alarms / max(all_runs, 1),
        "trials": n_trials,
    }


GRID = {  # what chose the defaults: each rule alone, the other settings as in conf/base.yaml
    "sma": [
        dict(short_window=s, sma_drop=d) for s, d in itertools.product((3, 5), (0.15, 0.2, 0.25))
    ],
    "robust_z": [
        dict(short_window=s, robust_z=z, robust_min_drop=m)
        for s, z, m in itertools.product((3, 5), (1.5, 2.0, 3.0), (0.2, 0.25))
    ],
    "cusum": [
        dict(short_window=s, cusum_k=k, cusum_h=h)
        for s, k, h in itertools.product((3, 5), (0.5, 0.75, 1.0), (5.0, 6.0, 8.0))
    ],
    "glr": [
        dict(short_window=s, glr_h=h, glr_clip=c)
        for s, h, c in itertools.product((5, 7), (3.0, 3.3, 3.6), (2.0, 2.5))
    ],
    "common": [dict(further_drop=False)]
    + [dict(rebase_rise=r) for r in (0.0, 1.0)]
    + [dict(recover=r) for r in (0.05, 0.2)]
    + [dict(min_history=m) for m in (5, 15)]
    + [dict(long_window=lw) for lw in (20, 60)],
}


def table(rows: list[dict]) -> str:
    cols = list(rows[0])
    w = {c: max(len(c), *(len(_fmt(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(w[c]) for c in cols), "  ".join("-" * w[c] for c in cols)]
    lines += ["  ".join(_fmt(r[c]).ljust(w[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def _fmt(v) -> str:
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def _settings(rule: str, p: Params) -> str:
    common = f"S={p.short_window} L={p.long_window} min={p.min_history} rebase={p.rebase_rise}"
    return {
        "sma": f"{common} drop={p.sma_drop}",
        "robust_z": f"{common} z={p.robust_z} min_drop={p.robust_min_drop}",
        "cusum": f"{common} k={p.cusum_k} h={p.cusum_h} clip={p.cusum_clip}",
        "glr": f"{common} h={p.glr_h} clip={p.glr_clip}",
    }[rule]


def draws_table(ys: dict, rules, p: Params, trials: int, draws: int, pool) -> str:
    """The defaults on `draws` independent draws of change points (seeds 1..draws): one row per
    draw, then the mean, min and max of each figure — how much one draw's recall can vary."""
    rows = []
    for seed in range(1, draws + 1):
        rows.append(
            {"seed": str(seed), **evaluate(ys, change_points(ys, trials, seed), rules, p, pool)}
        )
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    figs = [k for k in rows[0] if k not in ("seed", "trials")]
    for name, fn in (("mean", np.mean), ("min", np.min), ("max", np.max)):
        rows.append(
            {
                "seed": name,
                **{k: float(fn([r[k] for r in rows[:draws]])) for k in figs},
                "trials": sum(r["trials"] for r in rows[:draws]) if name == "mean" else "",
            }
        )
    return table(rows)


def main(argv=None) -> int:
    from iolake.config import load_config

    ap = parser(__spec__.name, __doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--trials", type=int, default=60, help="change points per series")
    ap.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes (series run in parallel)"
    )
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--grid", action="store_true", help="also sweep each rule's settings")
    ap.add_argument(
        "--draws",
        type=int,
        default=0,
        help="instead: the defaults on N draws of change points (seeds 1..N), each and mean/min/max",
    )
    ap.add_argument(
        "--quick", action="store_true", help="the defaults alone, 5 change points per series"
    )
    a = ap.parse_args(argv)
    if a.quick:
        a.trials = 5
    conf = load_config().watch
    defaults = Params.from_conf(conf)
    t0 = time.monotonic()
    hist = edison_history(a.data, "lake", conf.nprocs_buckets)
    ys = series(hist)
    cps = change_points(ys, a.trials, a.seed)
    lens = np.array([len(y) for y in ys.values()])
    print(
        f"Edison (TOKIO-ABC): {len(hist):,} jobs with a bandwidth, {len(ys)} series "
        f"(app = exe|fs|nprocs bucket|direction|layout), {lens.min()}-{lens.max()} runs each; "
        f"{a.trials} change points per series, seed {a.seed}\n"
    )
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        if a.quick:
            r = evaluate(ys, cps, conf.rules, defaults, pool)
            print(table([{"detector": "defaults: " + "+".join(conf.rules), **r}]))
            result("watch_eval", _summary(r, a.trials, time.monotonic() - t0))
            return 0
        if a.draws:
            print(draws_table(ys, conf.rules, defaults, a.trials, a.draws, pool))
            print(f"\n{time.monotonic() - t0:.0f} s")
            return 0
        alone = {
            rule: evaluate(ys, cps, [rule], defaults, pool)
            for rule in ("sma", "robust_z", "cusum", "glr")
        }
        rows = [
            {"detector": rule, "settings": _settings(rule, defaults), **r}
            for rule, r in alone.items()
        ]
        chosen = (
            alone[conf.rules[0]]
            if len(conf.rules) == 1
            else evaluate(ys, cps, conf.rules, defaults, pool)
        )
        rows.append(
            {
                "detector": "defaults: " + "+".join(conf.rules),
                "settings": "conf/base.yaml watch:",
                **chosen,
            }
        )
        for rules in (["cusum", "robust_z"], ["glr", "robust_z"]):
            rows.append(
                {
                    "detector": " + ".join(rules) + " (union)",
                    "settings": "each as in conf/base.yaml",
                    **evaluate(ys, cps, rules, defaults, pool),
                }
            )
        rows.append(
            {
                "detector": "defaults, further_drop off",
                "settings": "blind while regressed",
                **evaluate(
                    ys,
                    cps,
                    conf.rules,
                    dataclasses.replace(defaults, further_drop=not defaults.further_drop),
                    pool,
                ),
            }
        )
        ih = edison_history(a.data, "issue", conf.nprocs_buckets)
        iys = series(ih)
        rows.append(
            {
                "detector": "defaults, key exe|fs|nprocs",
                "settings": f"{len(iys)} series (IOR modes mixed)",
                **evaluate(iys, change_points(iys, a.trials, a.seed), conf.rules, defaults, pool),
            }
        )
        print(table(rows))
        if a.grid:
            print("\nsweep (each rule alone; other settings as in conf/base.yaml)")
            grid_rows = []
            for rule, variants in GRID.items():
                for v in variants:
                    p = dataclasses.replace(defaults, **v)
                    rules = conf.rules if rule == "common" else [rule]
                    label = (
                        ", ".join(f"{k}={x}" for k, x in v.items())
                        if rule == "common"
                        else _settings(rule, p)
                    )
                    grid_rows.append(
                        {
                            "detector": "+".join(rules),
                            "settings": label,
                            **evaluate(ys, cps, rules, p, pool),
                        }
                    )
                    print(table(grid_rows[-1:]).splitlines()[-1], flush=True)
            print()
            print(table(grid_rows))
    print(f"\n{time.monotonic() - t0:.0f} s")
    result("watch_eval", _summary(chosen, a.trials, time.monotonic() - t0))
    return 0


def _summary(r: dict, trials: int, seconds: float) -> str:
    """The defaults' figures in one line."""
    recall = ", ".join(f"{k} {v:.1f}%" for k, v in r.items() if k.startswith("recall"))
    return (
        f"defaults, {trials} change points per series: {recall}; {r['alarms/100 pre']:.1f} false alarms "
        f"per 100 runs ({seconds:.0f} s)"
    )


if __name__ == "__main__":
    sys.exit(main())
