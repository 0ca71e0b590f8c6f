"""Model figures on grouped splits, beside their baselines, without MLflow or Spark.

    python -m bench.models_eval [BENCHMARK_CSV] [--lake LAKE --labels LABELS_CSV] [--splits N]
    python -m bench.models_eval --quick      # placement only, 2 splits

BENCHMARK_CSV defaults to the shipped `models/benchmarks/iosweep.csv`. Prints, on the same
10 grouped splits `train` uses (models/evaluation.py; 20% of split groups held out):
1. placement: every classifier's accuracy, on all label groups and on those whose tier gap
   exceeds the repetitions' spread (`label_margin_gt_std`), beside the majority class and the
   true-parameter reference (a decision tree given IOR's own parameters);
2. bandwidth per file and per job: MdAPE, MAPE, R², R²(log) per regressor beside the
   median-per-tier rule and the true-parameter reference (lightgbm given IOR's own parameters and
   the tier: models.bandwidth.reference_estimator); and per configuration against IOR's own effective, read and write
   bandwidths (separate read and write models).
With --lake (a lake that ingested the sweep) and --labels (its labels.csv): how often the lake's
own per-configuration labels (mean Darshan file bandwidth per tier) agree with IOR's.
Labels are aggregated by identical trace features as `labels` does (features/placement_labels.py).
"""

import sys
import time

import numpy as np
import pandas as pd

from bench.common import parser, result
from models import bandwidth, benchmarks, evaluation, placement
from models.bandwidth import FILE_FEATURES, JOB_FEATURES
from schemas.placement_labels import FEATURES

SPLITS, TEST_FRACTION, SEED, MIN_MARGIN = 10, 0.2, 42, 0.05


def label_groups(pdf: pd.DataFrame) -> pd.DataFrame:
    """features/placement_labels.from_benchmark in pandas: mean per identical features, the faster tier."""
    g = (
        pdf.groupby(list(FEATURES), dropna=False)
        .agg(
            bb=("bandwidth_mib_s_bb", "mean"),
            pfs=("bandwidth_mib_s_pfs", "mean"),
            std_bb=("bandwidth_std_bb", "max"),
            std_pfs=("bandwidth_std_pfs", "max"),
            **(
                {
                    f"ior_{p}": (f"ior_{p}", "first")
                    for p in [c[4:] for c in pdf.columns if c.startswith("ior_")]
                }
            ),
        )
        .reset_index()
    )
    g["best_tier"] = np.where(g.bb >= g.pfs, "bb", "pfs")
    g["margin"] = (g[["bb", "pfs"]].max(axis=1) - g[["bb", "pfs"]].min(axis=1)) / g[
        ["bb", "pfs"]
    ].min(axis=1)
    g["strong"] = (g.bb - g.pfs).abs() > g[["std_bb", "std_pfs"]].max(axis=1)
    return g[g.margin > MIN_MARGIN].reset_index(drop=True)


def show_placement(pdf: pd.DataFrame, splits: int = SPLITS) -> dict:
    """Prints each classifier's figures; returns {model: mean accuracy}."""
    lab = label_groups(pdf)
    X, y, strong = lab[list(FEATURES)], lab.best_tier, lab.strong
    folds = evaluation.splits(evaluation.feature_groups(lab, FEATURES), splits, TEST_FRACTION, SEED)
    print(
        f"placement: {len(lab)} label groups ({(y == 'bb').mean():.1%} bb), {int(strong.sum())} with margin > std; "
        f"{splits} grouped splits, {TEST_FRACTION:.0%} held out"
    )
    print(
        f"{'model':<22} {'accuracy':>15} {'majority':>9} {'margin>std':>15} {'majority':>9} {'s':>6}"
    )
    params = lab[[c for c in lab.columns if c.startswith("ior_")]]
    runs = [(n, None) for n in placement.CLASSIFIERS]
    if len(params.columns):
        runs.append(("reference_true_params", placement.reference_estimator(params)))
    acc = {}
    for name, est in runs:
        t = time.monotonic()
        r = placement.fit_and_evaluate(
            name, params if est else X, y, folds, strong=strong, seed=0, estimator=est
        )
        print(
            f"{name:<22} {r['accuracy_mean']:.3f} ± {r['accuracy_std']:.3f} {r['baseline_mean']:>9.3f} "
            f"{r['accuracy_strong_mean']:.3f} ± {r['accuracy_strong_std']:.3f} {r['baseline_strong_mean']:>9.3f} "
            f"{time.monotonic() - t:6.1f}"
        )
        acc[name] = r["accuracy_mean"]
    return acc


def show_bandwidth(
    rows: pd.DataFrame,
    features,
    target: str,
    level: str,
    groups,
    label: str | None = None,
    pdf: pd.DataFrame | None = None,
    splits: int = SPLITS,
) -> None:
    """`pdf`: the benchmark frame, whose own `ior_*` parameters give the true-parameter reference
    row (models.bandwidth.reference_estimator, fed by benchmarks.reference_rows) on the same folds."""
    X, bw = rows[list(features)].reset_index(drop=True), rows[target].reset_index(drop=True)
    folds = evaluation.splits(groups, splits, TEST_FRACTION, SEED)
    print(f"\nbandwidth/{label or level}: {len(X)} rows, tiers {sorted(X.tier.unique())}")
    print(
        f"{'model':<22} {'MdAPE %':>8} {'MAPE %':>8} {'R²':>7} {'R²(log)':>8}"
        f"   median rule: {'MdAPE %':>8} {'R²(log)':>8}"
    )
    runs = [(name, X, None) for name in bandwidth.REGRESSORS]
    P = benchmarks.reference_rows(rows, pdf) if pdf is not None else None
    if P is not None:
        runs.append(
            ("reference_true_params", P.reset_index(drop=True), bandwidth.reference_estimator(P))
        )
    for name, Xr, est in runs:
        r = bandwidth.fit_and_evaluate(name, Xr, bw, folds, level=level, estimator=est)
        print(
            f"{name:<22} {r['mdape_pct_mean']:8.1f} {r['mape_pct_mean']:8.0f} {r['r2_mean']:7.3f} "
            f"{r['r2_log_mean']:8.3f}   {'':>12} {r['baseline_mdape_pct_mean']:8.1f} {r['baseline_r2_log_mean']:8.3f}"
        )


def show_lake_labels(lake: str, labels_csv: str) -> None:
    """Lake labels (mean Darshan file bandwidth per config and tier) vs IOR's labels per config."""
    from iolake.lake import arrow
    from schemas import TABLES

    ff = arrow.read(lake, TABLES["file_features"]).to_pandas()
    logs = arrow.read(lake, TABLES["logs"], columns=["log_id", "source_uri"]).to_pandas()
    cfg = logs.source_uri.str.extract(r"(?:bb|pfs)_c(\d+)_r\d+\.darshan$")[0]
    logs = logs.assign(config_id=pd.to_numeric(cfg)).dropna(subset=["config_id"])
    d = ff.merge(logs[["log_id", "config_id"]], on="log_id")
    d = d[(d.reads + d.writes > 0) & (d.interface != "STDIO") & (d.bandwidth_mib_s > 0)]
    bw = d.groupby(["config_id", "tier"]).bandwidth_mib_s.mean().unstack()
    lake_tier = pd.Series(np.where(bw.bb >= bw.pfs, "bb", "pfs"), index=bw.index)
    truth = pd.read_csv(labels_csv).set_index("config_id")
    common = truth.index.intersection(lake_tier.index)
    agree = lake_tier[common] == truth.best_tier[common]
    strong = truth.label_margin_gt_std[common] == 1
    print(
        f"\nlake labels vs IOR labels: agree on {agree.mean():.1%} of {len(common)} configs, "
        f"{agree[strong].mean():.1%} of {int(strong.sum())} with margin > std"
    )


def ior_rows(pdf: pd.DataFrame, prefix: str) -> pd.DataFrame:
    """Per (configuration, tier) rows with IOR's own `<prefix>bandwidth_mib_s_<tier>` as the target
    (`read_`, `write_` or `` for the effective bandwidth), where the configuration has it."""
    from schemas import SILVER

    parts = []
    for t in benchmarks.TIERS:
        col = f"{prefix}bandwidth_mib_s_{t}"
        part = pdf[list(FEATURES)].assign(
            tier=t, bandwidth_mib_s=pd.to_numeric(pdf[col]), config_id=pdf.config_id
        )
        parts.append(part[part.bandwidth_mib_s > 0])
    return benchmarks.cast_like(
        pd.concat(parts, ignore_index=True), SILVER["file_features"], FEATURES
    )


def main(argv=None) -> int:
    p = parser(__spec__.name, __doc__)
    p.add_argument("benchmark", nargs="?", default=str(benchmarks.SHIPPED["iosweep"]))
    p.add_argument("--lake")
    p.add_argument("--labels")
    p.add_argument(
        "--splits", type=int, default=SPLITS, help="grouped splits (train's: %(default)s)"
    )
    p.add_argument("--quick", action="store_true", help="placement only, on 2 splits")
    a = p.parse_args(argv)
    splits = 2 if a.quick else a.splits
    t0 = time.monotonic()
    pdf = pd.read_csv(a.benchmark)
    acc = show_placement(pdf, splits)
    best = max((n for n in acc if n != "reference_true_params"), key=acc.get)
    line = f"placement, {splits} splits: best {best} accuracy {acc[best]:.3f}"
    if a.quick:
        result("models_eval", f"{line} ({time.monotonic() - t0:.0f} s)")
        return 0
    key = pdf.set_index("config_id")[list(FEATURES)].astype(str).agg("\x1f".join, axis=1)
    files = benchmarks.file_rows(pdf)
    show_bandwidth(
        files,
        FILE_FEATURES,
        "bandwidth_mib_s",
        "file",
        pd.factorize(files.config_id.map(key))[0],
        pdf=pdf,
        splits=splits,
    )
    for prefix, label in (("", "IOR effective"), ("read_", "IOR read"), ("write_", "IOR write")):
        rows = ior_rows(pdf, prefix)  # separate read and write models where the data has both
        show_bandwidth(
            rows,
            FILE_FEATURES,
            "bandwidth_mib_s",
            "file",
            pd.factorize(rows.config_id.map(key))[0],
            label=f"{label} (per configuration)",
            pdf=pdf,
            splits=splits,
        )
    jobs = benchmarks.job_rows(pdf)
    show_bandwidth(
        jobs,
        JOB_FEATURES,
        "throughput_mib_s",
        "job",
        pd.factorize(jobs.config_id.map(key))[0],
        pdf=pdf,
        splits=splits,
    )
    if a.lake and a.labels:
        show_lake_labels(a.lake, a.labels)
    result("models_eval", f"{line} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
