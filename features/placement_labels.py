"""Placement labels (PrismIO §V): for each group of data files with identical I/O features seen on
both tiers, the tier with the better mean bandwidth wins.

`transform(file_features, logs, mconf)` derives them from the lake; `from_benchmark(df, mconf)`
from a benchmark table (features + per-tier bandwidth, or a sweep's `labels.csv`);
`config_agreement(...)` compares lake labels with a sweep's per-config ground truth.
"""

from __future__ import annotations

import pyspark.sql.functions as F

from schemas.placement_labels import FEATURES, SPEC

TIERS = ("bb", "pfs")


def group_id(cols=FEATURES):
    """sha1 of the feature values: the same features give the same id in every run."""
    return F.sha1(
        F.concat_ws("|", *[F.coalesce(F.col(c).cast("string"), F.lit("null")) for c in cols])
    )


def data_files(ff, logs=None, formats=None, need_bandwidth: bool = True):
    """Rows of files that moved data through an interface that is not STDIO (with a bandwidth when
    `need_bandwidth`), from logs of the given trace formats (Recorder's overhead makes its
    bandwidths incomparable); `logs=None` keeps every log."""
    if logs is not None:
        ff = ff.join(
            logs.where(F.col("format").isin(list(formats))).select("log_id"), "log_id", "left_semi"
        )
    rows = ff.where((F.col("reads") + F.col("writes") > 0) & (F.col("interface") != "STDIO"))
    return rows.where(F.col("bandwidth_mib_s") > 0) if need_bandwidth else rows


def _label(per_group, min_margin: float, source: str, version):
    bb, pfs = F.col("bandwidth_mib_s_bb"), F.col("bandwidth_mib_s_pfs")
    best = F.when(bb >= pfs, F.lit("bb")).otherwise(F.lit("pfs"))
    margin = (F.greatest(bb, pfs) - F.least(bb, pfs)) / F.least(bb, pfs)
    return (
        per_group.withColumn("best_tier", best)
        .withColumn("margin", margin)
        .where(F.col("margin") > F.lit(min_margin))
        .withColumn(
            "label_margin_gt_std",
            F.abs(bb - pfs) > F.greatest(F.col("bandwidth_std_bb"), F.col("bandwidth_std_pfs")),
        )
        .withColumn("group_id", group_id())
        .withColumn("label_source", F.lit(source))
        .withColumn("source_version", F.lit(version).cast("long"))
        .select(*[F.col(f.name).cast(f.dataType) for f in SPEC.struct.fields])
    )


def transform(ff, logs, mconf, source_version=None):
    """gold/placement_labels rows from silver/file_features and bronze/logs; no I/O, no action."""
    rows = data_files(ff, logs, mconf.label_formats)
    bw = F.col("bandwidth_mib_s")
    aggs = []
    for t in TIERS:
        on = F.col("tier") == t
        aggs += [
            F.count(F.when(on, 1)).alias(f"files_{t}"),
            F.avg(F.when(on, bw)).alias(f"bandwidth_mib_s_{t}"),
            F.stddev_samp(F.when(on, bw)).alias(f"bandwidth_std_{t}"),
        ]
    per_group = (
        rows.groupBy(*FEATURES).agg(*aggs).where((F.col("files_bb") > 0) & (F.col("files_pfs") > 0))
    )
    return _label(per_group, mconf.label_min_margin, "lake", source_version)


# A sweep's labels.csv (iosweep/make_labels.py) -> the model's feature names.
SWEEP_API = {"POSIX": "POSIX", "MPIIO": "MPI-IO", "HDF5": "HDF5"}


def sweep_frame(pdf):
    """A sweep's labels.csv as a benchmark frame. Write-side flags of configs that never write are
    cleared, as no trace can reveal them (iosweep README caveat 6)."""
    import pandas as pd

    writes = pdf["num_write_passes"] > 0
    out = pd.DataFrame(
        {
            "config_id": pdf["config_id"],
            "interface": pdf["api"].map(SWEEP_API),
            "collective": pdf["collective"].astype(bool),
            "fsync": pdf["fsync"].astype(bool) & writes,
            "fsync_per_write": pdf["fsync_per_write"].astype(bool) & writes,
            "preallocate": pdf["preallocate"].astype(bool) & writes,
            "file_view": pdf["use_file_view"].astype(bool),
            "transfer_size": pdf["transfer_size"].astype("int64"),
            "rw_per_open": pdf["xfers_per_open_close"].astype(float),
            "io_type": pdf["io_type"],
            "random_access": pdf["random_offset"].astype(bool),
            "file_per_process": pdf["file_per_proc"].astype(bool),
            "unique_dir": pdf["unique_dir"].astype(bool),
            "n_ranks": pdf["nprocs"].where(pdf["file_per_proc"] == 0, 1).astype("int64"),
            "nprocs": pdf["nprocs"].astype("int64"),
            "bandwidth_mib_s_bb": pdf["eff_bw_mean_bb"].astype(float),
            "bandwidth_mib_s_pfs": pdf["eff_bw_mean_pfs"].astype(float),
            "bandwidth_std_bb": pdf["eff_bw_std_bb"].astype(float),
            "bandwidth_std_pfs": pdf["eff_bw_std_pfs"].astype(float),
            "files_bb": pdf["n_reps_bb"].astype("int64"),
            "files_pfs": pdf["n_reps_pfs"].astype("int64"),
        }
    )
    return out


def read_benchmark(spark, path: str):
    """A benchmark table from a CSV or Delta path: features + bandwidth_mib_s_bb / _pfs (or a sweep's labels.csv)."""
    import pandas as pd

    if path.endswith(".csv"):
        pdf = pd.read_csv(path)
    else:
        pdf = spark.read.format("delta").load(path).toPandas()
    if "eff_bw_mean_bb" in pdf.columns:
        pdf = sweep_frame(pdf)
    need = [*FEATURES, "bandwidth_mib_s_bb", "bandwidth_mib_s_pfs"]
    missing = [c for c in need if c not in pdf.columns]
    if missing:
        raise ValueError(f"benchmark table {path}: missing columns {', '.join(missing)}")
    for c in ("bandwidth_std_bb", "bandwidth_std_pfs"):
        if c not in pdf.columns:
            pdf[c] = float("nan")
    for c in ("files_bb", "files_pfs"):
        if c not in pdf.columns:
            pdf[c] = 1
    from models.benchmarks import cast_like

    return cast_like(pdf, SPEC, FEATURES)


def from_benchmark(spark, pdf, mconf):
    """gold/placement_labels rows from a benchmark frame (one row per configuration).
    Configurations with identical features are averaged, as lake groups are."""
    cols = [
        *FEATURES,
        "bandwidth_mib_s_bb",
        "bandwidth_mib_s_pfs",
        "bandwidth_std_bb",
        "bandwidth_std_pfs",
        "files_bb",
        "files_pfs",
    ]
    df = spark.createDataFrame(
        pdf[cols].astype({"bandwidth_std_bb": float, "bandwidth_std_pfs": float})
    )
    per_group = df.groupBy(*FEATURES).agg(
        F.sum("files_bb").alias("files_bb"),
        F.sum("files_pfs").alias("files_pfs"),
        F.avg("bandwidth_mib_s_bb").alias("bandwidth_mib_s_bb"),
        F.avg("bandwidth_mib_s_pfs").alias("bandwidth_mib_s_pfs"),
        F.max(F.nanvl("bandwidth_std_bb", F.lit(None))).alias("bandwidth_std_bb"),
        F.max(F.nanvl("bandwidth_std_pfs", F.lit(None))).alias("bandwidth_std_pfs"),
    )
    return _label(per_group, mconf.label_min_margin, "benchmark", None)


def config_of_logs(logs):
    """(log_id, run_id, config_id) of sweep logs, from their file names (`<tier>_c<config>_r<rep>`)."""
    rid = F.regexp_extract("source_uri", r"((?:bb|pfs)_c(\d+)_r\d+)\.darshan", 1)
    return (
        logs.withColumn("run_id", rid)
        .where(F.col("run_id") != "")
        .withColumn("config_id", F.regexp_extract("run_id", r"_c(\d+)_", 1).cast("long"))
        .select("log_id", "run_id", "config_id")
    )


def config_agreement(ff, logs, labels, truth_pdf, formats=("darshan",)):
    """Per sweep config: the lake label of the group holding most of its files vs the sweep's best_tier.
    Returns a pandas frame (config_id, lake_tier, best_tier, label_margin_gt_std, agree)."""
    rows = (
        data_files(ff, logs, formats)
        .join(config_of_logs(logs), "log_id", "inner")
        .withColumn("group_id", group_id())
    )
    counts = rows.groupBy("config_id", "group_id").count()
    pdf = counts.join(
        labels.select("group_id", F.col("best_tier").alias("lake_tier")), "group_id", "inner"
    ).toPandas()
    if pdf.empty:
        return pdf.assign(best_tier=[], label_margin_gt_std=[], agree=[])
    top = pdf.sort_values(["config_id", "count"], ascending=[True, False]).drop_duplicates(
        "config_id"
    )
    t = truth_pdf[["config_id", "best_tier", "label_margin_gt_std"]]
    out = top.merge(t, on="config_id", how="inner")
    return out.assign(agree=out.lake_tier == out.best_tier)[
        ["config_id", "group_id", "lake_tier", "best_tier", "label_margin_gt_std", "agree"]
    ]
