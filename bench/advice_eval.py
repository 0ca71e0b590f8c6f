"""How good is the what-if advice (features/what_if.py) on configurations the model never saw?

    python -m bench.advice_eval [BENCHMARK_CSV] [--model lightgbm] [--min-speedup 1.2 ...]
    python -m bench.advice_eval --quick      # the first 3 transfer-size groups, threshold 1.1
    python -m bench.advice_eval --lookup-cost 100000 2000   # precedents' look-up, RUNS ASKS

On the IOR sweep (default: the shipped `models/benchmarks/iosweep.csv`, 270 configurations run
on both tiers): the configurations identical in every IOR parameter but the transfer size (and
the data per transfer: block size, segments, transfers per open) form groups. For each group,
the per-file bandwidth model (`models/bandwidth.py`, the `train` recipe) is fitted on every
OTHER configuration of the sweep; then each configuration of the group, started on each tier,
asks the advice for a transfer size (among the group's) and a tier. The measured bandwidth of
the advised (size, tier) — IOR's own, `bandwidth_mib_s_<tier>` — is compared with the group's
best measured (size, tier), and with the current setting's, beside the plain rule "always the
largest transfer size" (on the current tier). The group's other sizes are other IOR runs, which
move more bytes per open at larger sizes, so the search here is not capped at the bytes of an
open (`Space.cap_per_open`, on in the pipeline).

A third strategy, **precedents** (`features/precedents.py`, issue 40): the group is one application,
its configurations its runs. A start knows its own run (its configuration on its starting tier) and
the other configurations' runs on both tiers; it does not know its own configuration on the other
tier (that run never happened: leave-one-out drops the start's configuration, except the run it
made). The baseline is the median measured bandwidth of the runs with the start's setting (its own
run and any other configuration of the group with the same transfer size on the same tier); each
other run's ratio is its bandwidth over that baseline; runs are grouped by their (transfer size,
tier), and the start moves to the setting with the highest median ratio when that median reaches
the threshold (as the what-if needs its predicted speed-up to), else stays. Scored like the rest,
on the group's measured bandwidth of the chosen setting.

Prints, per min-speedup threshold: the share of starts whose choice reaches >= 90% of the group's
best, the share more than 10% below the current setting, and the same for precedents, the plain
rule and for staying put. Goal: >= 90%, better than the rule, <= 5% more than 10% below now.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from bench.common import parser, result
from features import what_if
from models import bandwidth, benchmarks
from models.bandwidth import FILE_FEATURES
from models.benchmarks.derive import IOR_PARAMS, TIERS

# the data per transfer varies within a group; every other IOR parameter is the group's key
PER_TRANSFER = ("transfer_size", "block_size", "segments", "xfers_per_open_close")
GROUP_PARAMS = tuple(p for p in IOR_PARAMS if p not in PER_TRANSFER)


def transfer_groups(pdf: pd.DataFrame) -> pd.Series:
    """Group number of each configuration among those identical but for transfer size; -1 when its
    group has a single transfer size."""
    keys = [f"ior_{p}" for p in GROUP_PARAMS]
    gid = pdf.groupby(keys, dropna=False).ngroup()
    sizes = pdf.groupby(gid).ior_transfer_size.transform("nunique")
    return gid.where(sizes >= 2, -1)


def placement_model(pdf: pd.DataFrame, classifier: str, seed: int = 0):
    """rows -> predicted_tier, probability: the placement recipe fitted on `pdf`'s label groups."""
    from models import placement
    from models.pyfunc import Placement
    from schemas import SILVER
    from schemas.placement_labels import FEATURES

    lab = benchmarks.cast_like(label_groups(pdf), SILVER["file_features"], FEATURES)
    est = placement.build_estimator(classifier, seed=seed).fit(lab[list(FEATURES)], lab.best_tier)
    return lambda frame: Placement(est, FEATURES).predict(None, frame)


def label_groups(pdf: pd.DataFrame, min_margin: float = 0.05) -> pd.DataFrame:
    """The benchmark's placement labels as `labels` builds them: mean IOR bandwidth per tier over
    configurations with identical features, the faster tier, margins of at most `min_margin` dropped."""
    from schemas.placement_labels import FEATURES

    g = (
        pdf.groupby(list(FEATURES), dropna=False)
        .agg(bb=("bandwidth_mib_s_bb", "mean"), pfs=("bandwidth_mib_s_pfs", "mean"))
        .reset_index()
    )
    g["best_tier"] = np.where(g.bb >= g.pfs, "bb", "pfs")
    margin = (g[["bb", "pfs"]].max(axis=1) - g[["bb", "pfs"]].min(axis=1)) / g[["bb", "pfs"]].min(
        axis=1
    )
    return g[margin > min_margin].reset_index(drop=True)


def precedent_pick(
    members: pd.DataFrame, config_id, start_tier: str, threshold: float
) -> tuple[tuple[int, str], int]:
    """The precedent strategy's (transfer size, tier) for the start (`config_id` on `start_tier`) and
    the number of runs behind it (0 when it stays): see the module's docstring."""
    me = members[members.config_id == config_id].iloc[0]
    now = (int(me.ior_transfer_size), start_tier)
    runs = [(now, float(getattr(me, f"bandwidth_mib_s_{start_tier}")))]  # the start's own run
    runs += [
        ((int(r.ior_transfer_size), t), float(getattr(r, f"bandwidth_mib_s_{t}")))
        for r in members[members.config_id != config_id].itertuples()
        for t in TIERS
    ]
    base = float(np.median([bw for s, bw in runs if s == now]))
    ratios: dict = {}
    for s, bw in runs[1:]:
        if s != now:
            ratios.setdefault(s, []).append(bw / base)
    if not ratios:
        return now, 0
    best = max(ratios, key=lambda s: (float(np.median(ratios[s])), len(ratios[s])))
    if float(np.median(ratios[best])) < threshold:
        return now, 0
    return best, len(ratios[best])


def evaluate(
    pdf: pd.DataFrame,
    model: str = "lightgbm",
    thresholds=(1.0, 1.1, 1.2, 1.5),
    seed: int = 0,
    dimensions=("tier", "transfer_size"),
    tier_from: str = "placement",
    classifier: str = "lightgbm",
    smaller_transfers: bool = False,
    monotone: bool = True,
    groups: int | None = None,
) -> pd.DataFrame:
    """One row per (threshold, configuration in a transfer-size group, starting tier): current,
    advised and group-best (size, tier) and their measured bandwidths, and the plain rule's.
    `tier_from`: `placement` (a `classifier` placement model, fitted without the group, picks the
    tier) or `bandwidth` (the tier is searched with the bandwidth model like the other dimensions).
    `groups`: only the first that many transfer-size groups."""
    pdf = pdf.reset_index(drop=True)
    gid = transfer_groups(pdf)
    rows_all = benchmarks.file_rows(pdf)
    out = []
    for g in sorted(set(gid) - {-1})[:groups]:
        members = pdf[gid == g]
        train = rows_all[~rows_all.config_id.isin(members.config_id)]
        est = bandwidth.build_estimator(model, level="file", seed=seed, monotone=monotone).fit(
            train[list(FILE_FEATURES)], np.log(train.bandwidth_mib_s.to_numpy(float))
        )

        def predict(frame, est=est):
            return np.exp(est.predict(frame[list(FILE_FEATURES)]))

        place = (
            placement_model(pdf[~pdf.config_id.isin(members.config_id)], classifier, seed)
            if tier_from == "placement"
            else None
        )
        # measured IOR bandwidth per (transfer size, tier) of the group
        measured = {
            (int(r.ior_transfer_size), t): getattr(r, f"bandwidth_mib_s_{t}")
            for r in members.itertuples()
            for t in TIERS
        }
        measured = pd.Series(measured).groupby(level=[0, 1]).mean().to_dict()
        best_key = max(measured, key=measured.get)
        largest = int(members.ior_transfer_size.max())
        starts = benchmarks.cast_like(
            members, __import__("schemas").SILVER["file_features"], FILE_FEATURES[:-1]
        )
        for thr in thresholds:
            space = what_if.Space(
                tiers=TIERS,
                transfer_sizes=tuple(sorted({k[0] for k in measured})),
                dimensions=tuple(dimensions),
                min_speedup=thr,
                smaller_transfers=smaller_transfers,
                cap_per_open=False,
            )
            for t in TIERS:
                files = starts.assign(tier=t)
                # the search varies the features' transfer size; IOR's is the truth the group is keyed on
                files = files.assign(
                    transfer_size=members.ior_transfer_size.astype("int64").to_numpy()
                )
                for (_, cfg), res in zip(
                    members.iterrows(), what_if.search(files, predict, space, place)
                ):
                    now = (int(cfg.ior_transfer_size), t)
                    pick = (
                        (int(res.best["transfer_size"]), res.best["tier"])
                        if what_if.advised(res, thr)
                        else now
                    )
                    rule = (largest, t)
                    prec, prec_runs = precedent_pick(members, cfg.config_id, t, thr)
                    out.append(
                        {
                            "threshold": thr,
                            "group": g,
                            "config_id": cfg.config_id,
                            "start_tier": t,
                            "current": now,
                            "advised": pick,
                            "best": best_key,
                            "bw_current": measured[now],
                            "bw_advised": measured.get(pick, np.nan),
                            "bw_best": measured[best_key],
                            "bw_rule": measured[rule],
                            "precedent": prec,
                            "precedent_runs": prec_runs,
                            "bw_precedent": measured[prec],
                            "predicted_speedup": res.speedup,
                        }
                    )
    return pd.DataFrame(out)


def summary(ev: pd.DataFrame) -> pd.DataFrame:
    def share(mask):
        return float(np.mean(mask))

    rows = []
    for thr, d in ev.groupby("threshold"):
        rows.append(
            {
                "threshold": thr,
                "starts": len(d),
                "groups": d.group.nunique(),
                "advice_ge90_best": share(d.bw_advised >= 0.9 * d.bw_best),
                "advice_gt10_below_now": share(d.bw_advised < 0.9 * d.bw_current),
                "advice_changed": share(d.advised != d.current),
                "precedent_ge90_best": share(d.bw_precedent >= 0.9 * d.bw_best),
                "precedent_gt10_below_now": share(d.bw_precedent < 0.9 * d.bw_current),
                "precedent_changed": share(d.precedent != d.current),
                "rule_ge90_best": share(d.bw_rule >= 0.9 * d.bw_best),
                "rule_gt10_below_now": share(d.bw_rule < 0.9 * d.bw_current),
                "stay_ge90_best": share(d.bw_current >= 0.9 * d.bw_best),
                "advice_mean_of_best": float(np.mean(d.bw_advised / d.bw_best)),
                "precedent_mean_of_best": float(np.mean(d.bw_precedent / d.bw_best)),
                "rule_mean_of_best": float(np.mean(d.bw_rule / d.bw_best)),
            }
        )
    return pd.DataFrame(rows)


def lookup_cost(n_runs: int, n_asks: int, rounds: int = 2) -> int:
    """`--lookup-cost`: `precedents.precedents` on `n_runs` random runs of 50 applications and
    `n_asks` tag asks, with its bucketed look-up ("bucket") against a scan of each job's
    application's runs ("scan", the look-up before it), alternating; both must give the same rows."""
    import random

    from bench.common import alternate
    from features import precedents as P
    from features.advice import TAG_DIMENSION

    rng = random.Random(1)
    base = {"uid": 7, "nprocs_bucket": "8-31", "fs": "/scratch", "direction": "write",
            "layout": "shared", "tier": "pfs"}  # fmt: skip
    values = {"exe": [f"app{i}" for i in range(50)], "transfer_class": [1 << 16, 1 << 20, 1 << 22],
              "api": ["MPI-IO", "POSIX"], "file_layout": ["shared file", "file per process"],
              "stripe_count": [None, 1, 4]}  # fmt: skip
    runs = pd.DataFrame(
        [
            {
                "log_id": f"R{i}",
                **base,
                **{k: rng.choice(v) for k, v in values.items()},
                "throughput": rng.uniform(10, 500),
            }
            for i in range(n_runs)
        ]  # fmt: skip
    )
    asks = pd.DataFrame(
        [
            {
                "log_id": f"R{rng.randrange(n_runs)}",
                "kind": "tag",
                "item": "small_writes",
                "current": None,
                "advised": None,
            }
            for _ in range(n_asks)
        ]  # fmt: skip
    )
    key = ["exe", "uid", "nprocs_bucket", "fs", "direction", "layout"]

    class Scan(P._Buckets):  # every run of the job's application, `one` filters them
        def __init__(self, recs, key_parts):
            super().__init__(recs, key_parts)
            self.keep = [p for p in self.key_parts if p not in P.KEY_PART_OF.values()]
            self.apps: dict[tuple, list[dict]] = {}
            for r in recs:
                self.apps.setdefault(tuple(r[p] for p in self.keep), []).append(r)

        def of(self, j, dims):
            return self.apps[tuple(j[p] for p in self.keep)]

    bucketed = P._Buckets

    def timed(way):
        P._Buckets = Scan if way == "scan" else bucketed
        try:
            t0 = time.perf_counter()
            out = P.precedents(runs, asks, key, TAG_DIMENSION)
            return time.perf_counter() - t0, out.sort_values("log_id").reset_index(drop=True)
        finally:
            P._Buckets = bucketed

    best, last = alternate(rounds, timed, names=("scan", "bucket"))
    same = last["scan"].equals(last["bucket"])
    result(
        "advice_eval",
        f"precedents look-up, {n_runs:,} runs, {n_asks:,} asks: scan {best['scan']:.2f} s, "
        f"bucket {best['bucket']:.2f} s, scan/bucket {best['scan'] / best['bucket']:.1f}; "
        f"rows {'identical' if same else 'DIFFER'}",
    )
    return 0 if same else 1


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("benchmark", nargs="?", default=str(benchmarks.SHIPPED["iosweep"]))
    ap.add_argument("--model", default="lightgbm")
    ap.add_argument("--min-speedup", type=float, nargs="+", default=[1.0, 1.1, 1.2, 1.5])
    ap.add_argument(
        "--transfer-size-only",
        action="store_true",
        help="keep the tier; vary the transfer size alone",
    )
    ap.add_argument("--tier-from", choices=("placement", "bandwidth"), default="placement")
    ap.add_argument(
        "--classifier",
        default="lightgbm",
        help="the placement model's kind (--tier-from placement)",
    )
    ap.add_argument("--smaller-transfers", action="store_true", help="advise smaller requests too")
    ap.add_argument(
        "--unconstrained",
        action="store_true",
        help="the bandwidth model free in transfer size (models/bandwidth.py `monotone=False`)",
    )
    ap.add_argument("--groups", type=int, help="only the first N transfer-size groups")
    ap.add_argument("--quick", action="store_true", help="the first 3 groups, threshold 1.1")
    ap.add_argument("--lookup-cost", nargs=2, type=int, metavar=("RUNS", "ASKS"),
                    help="time precedents' look-up on random runs (see lookup_cost), exit")  # fmt: skip
    a = ap.parse_args(argv)
    if a.lookup_cost:
        return lookup_cost(*a.lookup_cost)
    if a.quick:
        a.groups, a.min_speedup = 3, [1.1]
    pdf = pd.read_csv(a.benchmark)
    t0 = time.perf_counter()
    dims = ("transfer_size",) if a.transfer_size_only else ("tier", "transfer_size")
    ev = evaluate(
        pdf,
        a.model,
        a.min_speedup,
        dimensions=dims,
        tier_from=a.tier_from,
        classifier=a.classifier,
        smaller_transfers=a.smaller_transfers,
        monotone=not a.unconstrained,
        groups=a.groups,
    )
    s = summary(ev)
    print(
        f"{a.benchmark}: {s.groups.iloc[0]} groups of configurations identical but for transfer size, "
        f"{ev.config_id.nunique()} configurations x 2 starting tiers; model {a.model} fitted without each group; "
        f"advice varies {', '.join(dims)}; tier from the {a.tier_from} model"
        f"{' (' + a.classifier + ')' if a.tier_from == 'placement' else ''}; "
        f"{'any' if a.smaller_transfers else 'larger'} transfer sizes; "
        f"{'unconstrained' if a.unconstrained else 'non-decreasing'} in transfer size "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(s.round(3).to_string(index=False))
    row = s[s.threshold == (1.2 if 1.2 in a.min_speedup else a.min_speedup[0])].iloc[0]
    result(
        "advice_eval",
        f"threshold {row.threshold}: advice >= 90% of the best on {row.advice_ge90_best:.1%} "
        f"of {int(row.starts)} starts (precedents {row.precedent_ge90_best:.1%}, rule "
        f"{row.rule_ge90_best:.1%}), > 10% below now on {row.advice_gt10_below_now:.1%} "
        f"(precedents {row.precedent_gt10_below_now:.1%})",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
