"""The file bandwidth model's training sample past `models.max_train_rows`: whole feature groups
(the earlier way) against every group cut to one level (`jobs.train.sample_groups(within=
"log_id")`, the way `train` samples now), scored on the same held-out rows, in one run.

    .venv/bin/python bench/train_sample.py LAKE [--caps 20000 200000] [--draws 3]

LAKE is a corpus lake (`bench/pipeline_scale.py --keep`). Its data files with a bandwidth, from
Darshan logs (what `train` reads: `features.placement_labels.data_files`), are grouped as `train`
groups them: the connected components of (feature group, log). A seeded 20% of the components is
held out (every one of their rows is a test row); the rest is the pool. For each cap, each way
and each draw (the sample's seed), the pool is sampled, lightgbm (the file model's default kind,
monotone in the transfer size) and the median-per-tier rule are fit on the sample, and both are
scored on the held-out rows: MdAPE and R²(log) (`models.bandwidth.metrics`). It prints the means
over the draws with the rows and feature groups each sample kept and the fit's seconds.

A cap of about 4% of the pool is what the default cap (200,000) is to a million logs (~5 M file
rows): the 100,000-log corpus lake gives ~470,000 such rows.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from features.placement_labels import data_files  # noqa: E402
from jobs.train import file_split_groups, sample_groups  # noqa: E402
from models import bandwidth, evaluation  # noqa: E402
from models.bandwidth import FILE_FEATURES  # noqa: E402
from schemas.placement_labels import FEATURES  # noqa: E402

WAYS = {"whole groups": None, "every group, cut": "log_id"}


def held_out_logs(rows: pd.DataFrame, fraction: float, seed: int) -> set:
    """The logs of a seeded `fraction` of the split groups (components of feature group x log)."""
    split = file_split_groups(rows, "train_sample", print)
    ids = np.unique(split)
    test = np.random.default_rng(seed).choice(ids, max(1, int(round(fraction * len(ids)))), replace=False)
    return set(rows.log_id[np.isin(split, test)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lake", type=Path)
    ap.add_argument("--caps", type=int, nargs="+", default=[20_000, 200_000])
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--test-fraction", type=float, default=0.2)
    args = ap.parse_args()

    from iolake.spark import build_session

    spark = build_session("train-sample", "local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "8",
                                                        "spark.ui.showConsoleProgress": "false"})
    read = lambda t: spark.read.format("delta").load(str(args.lake / t))  # noqa: E731
    files = data_files(read("silver/file_features"), read("bronze/logs"), ["darshan"]).select(
        "log_id", *FILE_FEATURES, "bandwidth_mib_s")
    rows = files.toPandas()
    test_logs = held_out_logs(rows, args.test_fraction, 42)
    test = rows[rows.log_id.isin(test_logs)]
    pool = files.join(spark.createDataFrame(pd.DataFrame({"log_id": sorted(test_logs)})), "log_id", "left_anti")
    pool = pool.cache()
    n_pool = pool.count()
    print(f"{len(rows):,} data files, {len(np.unique(evaluation.feature_groups(rows, FEATURES))):,} feature groups; "
          f"held out {len(test):,} rows of {len(test_logs):,} logs; pool {n_pool:,} rows")
    print("| cap | way | rows kept | feature groups kept | lightgbm MdAPE | R²(log) | median rule MdAPE | R²(log) "
          "| fit s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cap in args.caps:
        for way, within in WAYS.items():
            out = []
            for draw in range(args.draws):
                sampled, _ = sample_groups(pool, list(FEATURES), cap, draw, within=within)
                s = sampled.orderBy("log_id", *FILE_FEATURES, "bandwidth_mib_s").toPandas()
                t = time.perf_counter()
                est = bandwidth.build_estimator("lightgbm", level="file", seed=0).fit(
                    s[list(FILE_FEATURES)], np.log(s.bandwidth_mib_s.to_numpy(float)))
                fit = time.perf_counter() - t
                m = bandwidth.metrics(test.bandwidth_mib_s, np.exp(est.predict(test[list(FILE_FEATURES)])))
                b = bandwidth.metrics(test.bandwidth_mib_s, bandwidth.median_rule(s, s.bandwidth_mib_s, test))
                out.append({"rows": len(s), "groups": len(np.unique(evaluation.feature_groups(s, FEATURES))),
                            "mdape": m["mdape_pct"], "r2": m["r2_log"], "b_mdape": b["mdape_pct"],
                            "b_r2": b["r2_log"], "fit": fit})
            r = pd.DataFrame(out).mean()
            print(f"| {cap:,} | {way} | {r.rows:,.0f} | {r.groups:,.0f} | {r.mdape:.1f}% | {r.r2:.3f} | "
                  f"{r.b_mdape:.1f}% | {r.b_r2:.3f} | {r.fit:.1f} |", flush=True)


if __name__ == "__main__":
    main()
