"""Placement accuracy on the IOR sweep, two ways, beside the majority-class baseline.

    python bench/placement_eval.py LAKE LABELS_CSV [classifier ...]

1. benchmark labels: labels.csv itself (per config, IOR bandwidth), features as a trace reveals them;
2. lake labels: gold/placement_labels of LAKE (per feature group, Darshan file bandwidth), with the
   `label_margin_gt_std` subset taken from labels.csv through each group's configs.
Prints accuracy mean ± std over 10 random 90/10 splits, and on the margin_gt_std subset.
"""
import sys
import time


import pandas as pd  # noqa: E402

from features.placement_labels import config_agreement, sweep_frame  # noqa: E402
from models import placement  # noqa: E402


def report(title, X, y, strong, names):
    print(f"\n{title}: {len(y)} rows, {(y == 'bb').mean():.1%} bb, {int(strong.sum())} margin_gt_std")
    print(f"{'model':<20} {'accuracy':>15} {'majority':>9} {'margin>std':>15} {'majority':>9} {'s':>5}")
    for n in names:
        t = time.monotonic()
        r = placement.fit_and_evaluate(n, X, y, n_splits=10, test_fraction=0.1, seed=42, strong=strong)
        print(f"{n:<20} {r['accuracy_mean']:.3f} ± {r['accuracy_std']:.3f} {r['baseline_mean']:>9.3f} "
              f"{r['accuracy_strong_mean']:.3f} ± {r['accuracy_strong_std']:.3f} {r['baseline_strong_mean']:>9.3f} "
              f"{time.monotonic() - t:5.1f}")


def main(argv):
    lake, csv, *names = argv
    names = names or list(placement.CLASSIFIERS)
    truth = pd.read_csv(csv)
    bench = sweep_frame(truth)
    bench["best_tier"] = truth["best_tier"]
    report("benchmark labels (labels.csv)", bench, bench.best_tier, truth.label_margin_gt_std == 1, names)

    from iolake.config import load_config
    from iolake.lake import read_table
    from iolake.spark import session_from_config
    from schemas import BRONZE, GOLD, SILVER

    conf = load_config("local", overrides={"lake": {"root": lake}, "spark": {"master": "local[2]"}})
    spark = session_from_config(conf)
    lab = read_table(spark, GOLD["placement_labels"], lake)
    agree = config_agreement(read_table(spark, SILVER["file_features"], lake), read_table(spark, BRONZE["logs"], lake),
                             lab, truth)
    print(f"\nlake labels vs labels.csv: {agree.agree.mean():.1%} of {len(agree)} configs; "
          f"{agree[agree.label_margin_gt_std == 1].agree.mean():.1%} of margin_gt_std configs")
    df = lab.toPandas()
    strong = df.group_id.isin(set(agree[agree.label_margin_gt_std == 1].group_id))
    report("lake labels (gold/placement_labels)", df, df.best_tier, strong, names)


if __name__ == "__main__":
    main(sys.argv[1:])
