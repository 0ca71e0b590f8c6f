"""labels: silver/file_features (or a benchmark table) -> gold/placement_labels.

Reads:  silver/file_features, bronze/logs (trace format, and the sweep run id in the file name),
        silver/job_features (its suspect logs' files label nothing: features/suspect.py);
        `models.benchmark_table` when set (CSV or Delta: features + per-tier bandwidth);
        `models.default_benchmark` when the lake yields too few two-tier label groups.
Writes: gold/placement_labels, rewritten whole (labels aggregate every log). Skipped when the
        table already holds labels of the current silver/file_features version.
Logic:  `features/placement_labels.py`. With `models.ground_truth` (a sweep's labels.csv) the
        agreement of the lake's labels with the sweep's per-config labels is printed.
"""

from __future__ import annotations

import sys

from features import placement_labels
from iolake.cli import entry_points
from iolake.config import Config

FF, LOGS, OUT = "silver/file_features", "bronze/logs", "gold/placement_labels"
JF = "silver/job_features"


def transform(ff, logs, conf: Config, source_version=None):
    """gold/placement_labels rows from the lake; no I/O, no action."""
    return placement_labels.transform(ff, logs, conf.models, source_version)


def agreement_report(ctx, labels) -> dict:
    """Print and return the % of sweep configs whose lake label matches the sweep's best_tier."""
    import pandas as pd

    conf, echo = ctx.conf, ctx.echo
    truth = pd.read_csv(conf.models.ground_truth)
    agree = placement_labels.config_agreement(
        ctx.read(FF), ctx.read(LOGS), labels, truth, conf.models.label_formats
    )
    strong = agree[agree.label_margin_gt_std == 1]
    out = {
        "configs": len(agree),
        "agree_pct": 100.0 * agree.agree.mean() if len(agree) else float("nan"),
        "configs_margin_gt_std": len(strong),
        "agree_pct_margin_gt_std": 100.0 * strong.agree.mean() if len(strong) else float("nan"),
    }
    echo(
        f"[labels] agreement with {conf.models.ground_truth}: {out['agree_pct']:.1f}% of {out['configs']} configs; "
        f"{out['agree_pct_margin_gt_std']:.1f}% of {out['configs_margin_gt_std']} with label_margin_gt_std=1"
    )
    return out


MIN_GROUPS, MIN_PER_TIER = 10, 2  # fewer lake label groups than this cannot train (jobs/train.py)


def _from_benchmark(ctx, path: str):
    from models.benchmarks import resolve

    return placement_labels.from_benchmark(
        ctx.spark, placement_labels.read_benchmark(ctx.spark, resolve(path)), ctx.conf.models
    )


def _counts(out):
    import pyspark.sql.functions as F

    facts = (
        out.groupBy()
        .agg(F.count(F.lit(1)).alias("n"), F.sum(F.when(F.col("best_tier") == "bb", 1)).alias("bb"))
        .first()
    )
    return facts.n, facts.bb or 0


def execute(ctx) -> dict:
    """Labels from the benchmark table or the lake, rewritten whole unless already up to date. When
    the lake yields too few two-tier label groups to train on, `models.default_benchmark` (the
    shipped IOR-sweep table unless set otherwise) gives the labels instead, and the run says so."""
    import pyspark.sql.functions as F

    from models.benchmarks import describe

    conf, echo = ctx.conf, ctx.echo
    m = conf.models
    bench, source = m.benchmark_table, "lake"
    if bench:
        out, source = _from_benchmark(ctx, bench), "benchmark"
    else:
        if not ctx.exists(FF):
            echo("[labels] no silver/file_features yet: nothing to label")
            return {"groups": 0}
        version = ctx.version(FF)
        if ctx.exists(OUT):
            old = ctx.read(OUT)
            if old.where(F.col("source_version") == version).limit(1).count():
                echo(f"[labels] up to date with silver/file_features version {version}")
                return {"groups": None}
        from features import suspect

        bad = suspect.suspect_ids(ctx.read(JF)).cache()
        n_bad = bad.count()
        if n_bad:
            echo(f"[labels] {n_bad:,} suspect logs left out (their throughput cannot be true)")
        ff = ctx.read(FF).join(bad, "log_id", "left_anti")
        out = transform(ff, ctx.read(LOGS), conf, version).cache()
        n, n_bb = _counts(out)
        if (n < MIN_GROUPS or min(n_bb, n - n_bb) < MIN_PER_TIER) and m.default_benchmark:
            echo(
                f"[labels] the lake gives {n} two-tier label groups (bb {n_bb} / pfs {n - n_bb}): too few to "
                f"train on; labels from models.default_benchmark = {describe(m.default_benchmark)}"
            )
            out.unpersist()
            # stamped with the lake version it stands in for, so an unchanged lake is not relabelled
            out = _from_benchmark(ctx, m.default_benchmark).withColumn(
                "source_version", F.lit(version).cast("long")
            )
            source = "benchmark"
    out = out.cache()
    n, n_bb = _counts(out)
    ctx.write(OUT, out, mode="overwrite")
    summary = {"groups": n, "bb": n_bb, "pfs": n - n_bb, "source": source}
    echo(
        f"[labels] {n} label groups from {source} (bb {n_bb} / pfs {n - n_bb}), "
        f"margin > {m.label_min_margin}"
    )
    if m.ground_truth and source == "lake" and n:
        summary["agreement"] = agreement_report(ctx, out)
    out.unpersist()
    return summary


run, main = entry_points("labels")


if __name__ == "__main__":
    sys.exit(main())
