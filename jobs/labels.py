"""labels: silver/file_features (or a benchmark table) -> gold/placement_labels.

Reads:  silver/file_features, bronze/logs (trace format, and the sweep run id in the file name);
        `models.benchmark_table` when set (CSV or Delta: features + per-tier bandwidth).
Writes: gold/placement_labels, rewritten whole (labels aggregate every log). Skipped when the
        table already holds labels of the current silver/file_features version.
Logic:  `features/placement_labels.py`. With `models.ground_truth` (a sweep's labels.csv) the
        agreement of the lake's labels with the sweep's per-config labels is printed.
"""
from __future__ import annotations

import sys
import time

from features import placement_labels
from iolake.config import Config
from iolake.runinfo import RunInfo
from schemas import BRONZE, GOLD, SILVER

SPEC = GOLD["placement_labels"]


def transform(ff, logs, conf: Config, source_version=None):
    """gold/placement_labels rows from the lake; no I/O, no action."""
    return placement_labels.transform(ff, logs, conf.models, source_version)


def agreement_report(spark, conf: Config, labels, echo=print) -> dict:
    """Print and return the % of sweep configs whose lake label matches the sweep's best_tier."""
    import pandas as pd

    from iolake.lake import read_or_empty, read_table

    truth = pd.read_csv(conf.models.ground_truth)
    agree = placement_labels.config_agreement(
        read_table(spark, SILVER["file_features"], conf.lake), read_or_empty(spark, BRONZE["logs"], conf.lake),
        labels, truth, conf.models.label_formats)
    strong = agree[agree.label_margin_gt_std == 1]
    out = {"configs": len(agree), "agree_pct": 100.0 * agree.agree.mean() if len(agree) else float("nan"),
           "configs_margin_gt_std": len(strong),
           "agree_pct_margin_gt_std": 100.0 * strong.agree.mean() if len(strong) else float("nan")}
    echo(f"[labels] agreement with {conf.models.ground_truth}: {out['agree_pct']:.1f}% of {out['configs']} configs; "
         f"{out['agree_pct_margin_gt_std']:.1f}% of {out['configs_margin_gt_std']} with label_margin_gt_std=1")
    return out


def run(spark, conf: Config, run: RunInfo | None = None, echo=print) -> dict:
    import pyspark.sql.functions as F

    from iolake import gates
    from iolake.lake import commit_metadata, ensure_table, read_or_empty, read_table, table_exists, table_version, with_retries

    run = run or RunInfo.new(conf)
    t0 = time.monotonic()
    commit_metadata(spark, run.run_id, run.config_digest, "labels", run.git_sha)
    bench = conf.models.benchmark_table
    if bench:
        out = placement_labels.from_benchmark(spark, placement_labels.read_benchmark(spark, bench), conf.models)
    else:
        if not table_exists(spark, SILVER["file_features"], conf.lake):
            echo("[labels] no silver/file_features yet: nothing to label")
            return {"groups": 0, "seconds": time.monotonic() - t0}
        version = table_version(spark, SILVER["file_features"], conf.lake)
        if table_exists(spark, SPEC, conf.lake):
            old = read_table(spark, SPEC, conf.lake).where(F.col("label_source") == "lake")
            if old.where(F.col("source_version") == version).limit(1).count():
                echo(f"[labels] up to date with silver/file_features version {version}")
                return {"groups": None, "seconds": time.monotonic() - t0}
        ff = read_table(spark, SILVER["file_features"], conf.lake)
        out = transform(ff, read_or_empty(spark, BRONZE["logs"], conf.lake), conf, version)
    out = out.cache()
    facts = out.groupBy().agg(F.count(F.lit(1)).alias("n"), F.sum(F.when(F.col("best_tier") == "bb", 1)).alias("bb")).first()
    n, n_bb = facts.n, facts.bb or 0
    if conf.gates.enabled and n:
        gates.validate(SPEC, out, conf.gates.sample_rows)
    ensure_table(spark, SPEC, conf.lake, conf.lake.commit_retries)
    with_retries(lambda: out.write.format("delta").mode("overwrite").save(SPEC.path(conf.lake)),
                 conf.lake.commit_retries, "overwrite placement_labels")
    summary = {"groups": n, "bb": n_bb, "pfs": n - n_bb, "source": "benchmark" if bench else "lake"}
    echo(f"[labels] {n} label groups from {summary['source']} (bb {n_bb} / pfs {n - n_bb}), "
         f"margin > {conf.models.label_min_margin}")
    if conf.models.ground_truth and not bench and n:
        summary["agreement"] = agreement_report(spark, conf, out, echo)
    out.unpersist()
    summary["seconds"] = time.monotonic() - t0
    return summary


def main(argv=None) -> int:
    from iolake.cli import stage_main

    return stage_main(run, "labels", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
