"""Per-job features (DCA-IO Table I) from bronze and silver/file_features: pure Spark transforms.

I/O time is the slowest process's, as Darshan's "agg_perf_by_slowest" computes it: for each
rank the read + write + metadata time of the records it alone owns, the maximum over ranks,
plus the slowest rank's time of every record shared by all ranks (rank -1). Request counts,
bytes and times are POSIX's plus STDIO's (the layers every byte reaches); `seq_pct` is
POSIX's sequential share.

Stripes: `ost_count` is DCA-IO's StripeCount (§III-A, Table I: "Number of OSTs used by the
application", counted from the OST ids Darshan's Lustre module records): the distinct OSTs
across the stripes of every Lustre file the job opened (bronze/lustre LUSTRE_OST_IDS, every
layout component; negative ids, unassigned, left out). `stripe_count` / `stripe_size` stay the
layout of the job's largest Lustre file by POSIX bytes (first component), which stripe advice
compares with `lfs setstripe -c/-S`. Both are null for a job without Lustre records.

Time counters below zero are not times and count as 0 (`_t`): Darshan's ppc64 test logs carry
POSIX_F_META_TIME = -2.1e-304 (pydarshan and darshan-parser read the same bits), which would
make `meta_time_share` negative and stop the `watch` gate for the whole night's drop.
Counts and bytes below zero or at `suspect.max_counter` and above (overflowed) count as 0 too.

`suspect` / `suspect_reason`: the log's counters cannot be true (`features/suspect.py`): a rank
moving more bytes per second of the run than conf `suspect.max_bytes_per_s_per_process`, negative
or overflowed counters, timestamps after the run. The row is kept; train, labels, watch and advise
leave its throughput out (`suspect.plausible`).
"""

from __future__ import annotations

import pyspark.sql.functions as F
from pyspark.sql import DataFrame

from features import suspect
from schemas import SILVER

SIZES_SMALL = ("0_100", "100_1K")
SIZES_MEDIUM = ("1K_10K", "10K_100K")


def _z(c: str):
    return F.coalesce(F.col(c), F.lit(0))


def _t(c: str):
    """A time counter: null and negative (uninitialised) values count as 0 seconds."""
    return F.greatest(_z(c), F.lit(0.0))


def _rank_times(posix: DataFrame, stdio: DataFrame) -> DataFrame:
    def part(df, m):
        return df.select(
            "log_id",
            "rank",
            (_t(f"{m}_F_READ_TIME") + _t(f"{m}_F_WRITE_TIME") + _t(f"{m}_F_META_TIME")).alias("t"),
            _t(f"{m}_F_SLOWEST_RANK_TIME").alias("slow"),
            _t(f"{m}_F_FASTEST_RANK_TIME").alias("fast"),
        )

    both = part(posix, "POSIX").unionByName(part(stdio, "STDIO"))
    own = (
        both.where("rank >= 0")
        .groupBy("log_id", "rank")
        .agg(F.sum("t").alias("t"))
        .groupBy("log_id")
        .agg(
            F.max("t").alias("own_slowest"),
            F.min("t").alias("own_fastest"),
            F.count("*").alias("own_ranks"),
        )
    )
    shared = (
        both.where("rank = -1")
        .groupBy("log_id")
        .agg(F.sum("slow").alias("shared_slowest"), F.sum("fast").alias("shared_fastest"))
    )
    return own.join(shared, "log_id", "full")


def _counts(posix: DataFrame, stdio: DataFrame, max_counter: int) -> DataFrame:
    def n(
        c: str,
    ):  # a count: negative (unrecorded) and overflowed values count 0 (features/suspect.py)
        return suspect.sane(F.col(c), max_counter)

    px = posix.groupBy("log_id").agg(
        F.sum(n("POSIX_READS")).alias("px_reads"),
        F.sum(n("POSIX_WRITES")).alias("px_writes"),
        F.sum(_z("POSIX_SEQ_READS") + _z("POSIX_SEQ_WRITES")).alias("px_seq"),
        F.sum(
            sum(_z(f"POSIX_SIZE_{rw}_{s}") for rw in ("READ", "WRITE") for s in SIZES_SMALL)
        ).alias("small"),
        F.sum(
            sum(_z(f"POSIX_SIZE_{rw}_{s}") for rw in ("READ", "WRITE") for s in SIZES_MEDIUM)
        ).alias("medium"),
        F.sum(n("POSIX_BYTES_READ")).alias("px_br"),
        F.sum(n("POSIX_BYTES_WRITTEN")).alias("px_bw"),
        F.sum(_t("POSIX_F_READ_TIME")).alias("px_rt"),
        F.sum(_t("POSIX_F_WRITE_TIME")).alias("px_wt"),
        F.sum(_t("POSIX_F_META_TIME")).alias("px_mt"),
    )
    st = stdio.groupBy("log_id").agg(
        F.sum(n("STDIO_READS")).alias("st_reads"),
        F.sum(n("STDIO_WRITES")).alias("st_writes"),
        F.sum(n("STDIO_BYTES_READ")).alias("st_br"),
        F.sum(n("STDIO_BYTES_WRITTEN")).alias("st_bw"),
        F.sum(_t("STDIO_F_READ_TIME")).alias("st_rt"),
        F.sum(_t("STDIO_F_WRITE_TIME")).alias("st_wt"),
        F.sum(_t("STDIO_F_META_TIME")).alias("st_mt"),
    )
    return px.join(st, "log_id", "full")


def _stripes(lustre: DataFrame, posix: DataFrame) -> DataFrame:
    bytes_per_file = posix.groupBy("log_id", "record_id").agg(
        F.sum(_z("POSIX_BYTES_READ") + _z("POSIX_BYTES_WRITTEN")).alias("b")
    )
    comp0 = (
        lustre.where("component = 0")
        .select("log_id", "record_id", "LUSTRE_COMP_STRIPE_COUNT", "LUSTRE_COMP_STRIPE_SIZE")
        .dropDuplicates(["log_id", "record_id"])
    )
    j = comp0.join(bytes_per_file, ["log_id", "record_id"], "left").withColumn("b", _z("b"))
    # both settings from one file, and of files moving as many bytes the highest record id: the
    # same file whatever order the rows arrive in (a bare max_by picks by row order on a tie)
    top = F.max_by(
        F.struct("LUSTRE_COMP_STRIPE_COUNT", "LUSTRE_COMP_STRIPE_SIZE"),
        F.struct("b", "record_id"),
    )
    return (
        j.groupBy("log_id")
        .agg(top.alias("t"))
        .select(
            "log_id",
            F.col("t.LUSTRE_COMP_STRIPE_COUNT").alias("stripe_count"),
            F.col("t.LUSTRE_COMP_STRIPE_SIZE").alias("stripe_size"),
        )
    )


def _osts(lustre: DataFrame) -> DataFrame:
    ost = lustre.select("log_id", F.explode("LUSTRE_OST_IDS").alias("ost")).where(F.col("ost") >= 0)
    return (
        lustre.select("log_id")
        .distinct()
        .join(
            ost.groupBy("log_id").agg(F.countDistinct("ost").alias("ost_count")), "log_id", "left"
        )
    )


def transform(tables: dict[str, DataFrame], file_features: DataFrame, sconf) -> DataFrame:
    """silver/job_features of the logs of `tables["jobs"]`; `sconf`: conf `suspect:` (the flags)."""
    jobs = tables["jobs"]
    ff = file_features.groupBy("log_id").agg(
        F.sum(((F.col("reads") + F.col("writes")) > 0).cast("long")).alias("file_count"),
        F.sum(
            ((F.col("n_ranks") > 1) & ((F.col("reads") + F.col("writes")) > 0)).cast("long")
        ).alias("shared_file_count"),
        F.array_sort(F.collect_set("interface")).alias("interfaces"),
        F.array_sort(F.collect_set("tier")).alias("tiers"),
    )
    df = (
        jobs.join(_counts(tables["posix"], tables["stdio"], sconf.max_counter), "log_id", "left")
        .join(_rank_times(tables["posix"], tables["stdio"]), "log_id", "left")
        .join(_stripes(tables["lustre"], tables["posix"]), "log_id", "left")
        .join(_osts(tables["lustre"]), "log_id", "left")
        .join(ff, "log_id", "left")
        .join(suspect.flags(tables, sconf), "log_id", "left")
    )
    read_t = _z("px_rt") + _z("st_rt")
    write_t = _z("px_wt") + _z("st_wt")
    meta_t = _z("px_mt") + _z("st_mt")
    slowest = _z("own_slowest") + _z("shared_slowest")
    fastest = F.when(_z("own_ranks") >= F.col("nprocs"), _z("own_fastest")).otherwise(
        F.lit(0.0)
    ) + _z("shared_fastest")
    moved = _z("px_br") + _z("px_bw") + _z("st_br") + _z("st_bw")
    total_px = _z("px_reads") + _z("px_writes")
    return df.select(
        "log_id",
        "job_month",
        "jobid",
        "uid",
        F.regexp_extract(F.coalesce("exe", F.lit("")), r"^\s*(?:\S*/)?(\S+)", 1).alias("program"),
        F.timestamp_seconds("start_time_sec").alias("start_time"),
        "run_time_s",
        "nprocs",
        F.col("stripe_count").cast("long"),
        F.col("stripe_size").cast("long"),
        _z("file_count").cast("long").alias("file_count"),
        _z("shared_file_count").cast("long").alias("shared_file_count"),
        F.when(total_px > 0, 100.0 * _z("px_seq") / total_px).alias("seq_pct"),
        F.col("small").cast("long").alias("small_requests"),
        F.col("medium").cast("long").alias("medium_requests"),
        (_z("px_reads") + _z("st_reads")).cast("long").alias("read_requests"),
        (_z("px_writes") + _z("st_writes")).cast("long").alias("write_requests"),
        (_z("px_br") + _z("st_br")).cast("long").alias("bytes_read"),
        (_z("px_bw") + _z("st_bw")).cast("long").alias("bytes_written"),
        read_t.alias("read_time_s"),
        write_t.alias("write_time_s"),
        meta_t.alias("meta_time_s"),
        F.when(read_t + write_t + meta_t > 0, meta_t / (read_t + write_t + meta_t)).alias(
            "meta_time_share"
        ),
        slowest.alias("io_time_s"),
        F.when(slowest > 0, moved / 1048576.0 / slowest).alias("throughput_mib_s"),
        slowest.alias("slowest_rank_time_s"),
        fastest.alias("fastest_rank_time_s"),
        F.when(fastest > 0, slowest / fastest).alias("rank_time_ratio"),
        "interfaces",
        "tiers",
        F.col("ost_count").cast("long"),
        F.coalesce(F.col("suspect"), F.lit(False)).alias("suspect"),
        "suspect_reason",
    ).select(*[f.name for f in SILVER["job_features"].struct.fields])
