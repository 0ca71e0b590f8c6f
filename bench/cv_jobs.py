"""The file bandwidth model's grouped cross-validation, one split at a time against `models.cv_jobs`
splits at once in threads, on the rows `train` fits, in one run.

    .venv/bin/python bench/cv_jobs.py LAKE [--jobs 2] [--rounds 1] [--models random_forest ...]

LAKE is a corpus lake (`bench/pipeline_scale.py --keep`). Its data files with a bandwidth are read
and sampled by `train`'s own function (`jobs.train.file_model_rows`: `data_files`, then
`sample_groups(within="log_id")` past `models.max_train_rows`), split groups by
`file_split_groups`, `models.splits` grouped splits). For each
regressor, `bandwidth.fit_and_evaluate` runs with `n_jobs=1` and with `--jobs`, alternating which goes
first each round; it prints the best seconds of each, their ratio, and whether every figure the two
returned is equal (it must be: each split has its own estimator and seed).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iolake.config import load_config  # noqa: E402
from jobs.train import file_model_rows, file_split_groups  # noqa: E402
from models import bandwidth, evaluation  # noqa: E402
from models.bandwidth import FILE_FEATURES  # noqa: E402


def train_rows(lake: Path, m) -> tuple[pd.DataFrame, pd.Series, list]:
    """(X, bandwidth, folds) of the file model, as `train` builds them from LAKE."""
    from iolake.spark import build_session

    spark = build_session("cv-jobs", "local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "8",
                                                  "spark.ui.showConsoleProgress": "false"})
    read = lambda t: spark.read.format("delta").load(str(lake / t))  # noqa: E731
    rows, note = file_model_rows(read("silver/file_features"), read("bronze/logs"), m)
    spark.stop()
    if note:
        print(note)
    groups = file_split_groups(rows, "bandwidth/file", print)
    X = rows[list(FILE_FEATURES)].reset_index(drop=True)
    return X, rows.bandwidth_mib_s.astype(float).reset_index(drop=True), evaluation.splits(
        groups, m.splits, m.test_fraction, m.seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lake", type=Path)
    ap.add_argument("--jobs", type=int, default=2, help="splits at once in the threaded run")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--models", nargs="+", help="regressors (default: conf's models.regressors)")
    args = ap.parse_args()

    m = load_config("local").models
    X, bw, folds = train_rows(args.lake, m)
    print(f"{len(X):,} rows, {len(folds)} grouped splits")
    print(f"| regressor | one split at a time | {args.jobs} at once | ratio | same figures |")
    print("|---|---|---|---|---|")
    total = [0.0, 0.0]
    for name in args.models or m.regressors:
        best, results = {1: float("inf"), args.jobs: float("inf")}, {}
        for r in range(args.rounds):
            for n in ((1, args.jobs) if r % 2 == 0 else (args.jobs, 1)):
                t = time.perf_counter()
                results[n] = bandwidth.fit_and_evaluate(name, X, bw, folds, seed=m.seed, n_jobs=n)
                best[n] = min(best[n], time.perf_counter() - t)
        total = [total[0] + best[1], total[1] + best[args.jobs]]
        print(f"| {name} | {best[1]:.1f} s | {best[args.jobs]:.1f} s | {best[args.jobs] / best[1]:.2f} | "
              f"{results[1] == results[args.jobs]} |", flush=True)
    print(f"| all | {total[0]:.1f} s | {total[1]:.1f} s | {total[1] / total[0]:.2f} | |")


if __name__ == "__main__":
    main()
