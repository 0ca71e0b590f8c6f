"""Per-job bottleneck tags with evidence (silver/bottleneck_tags): pure Spark transforms.

Reads bronze `files`, `posix`, `mpiio`, `stdio`, `lustre`, `io_ops` and silver `file_features`,
`job_features`. Every threshold is a key of conf's `tags:` section (`TagsConf`), named on the
row it decides. Sources: Drishti's triggers (hpc-io/drishti-io: `drishti/handlers/
handle_darshan.py`, `drishti/includes/module.py`; insight codes in brackets) and the keynote's
"common causes of poor I/O performance" [K]. A tag fires when its metric is above its setting
(below, for few_osts); "+ absolute" rules also need the count above `<setting>_absolute`.

- small_reads / small_writes (high) [P05/P06]: POSIX reads (writes) in the size bins below
  `small_bytes`, over all reads (writes) > small_requests + absolute.
- small_shared_reads / small_shared_writes (high) [P15/P16]: the same over shared records only.
- misaligned_file / misaligned_memory (high) [P08/P07]: POSIX_FILE (MEM)_NOT_ALIGNED over POSIX
  reads + writes > misaligned_requests.
- random_reads / random_writes (high) [P11/P13]: (reads - SEQ_READS) / reads > random_operations
  + absolute; writes alike.
- shared_file_imbalance (high) [P18]: a shared record's |SLOWEST - FASTEST_RANK_BYTES| over its
  bytes > imbalance_stragglers; the value is the worst file's.
- rank_size_imbalance (high) [P21/P22, K]: (max - min) / max of the ranks' POSIX bytes on their
  own (non-shared) records > imbalance_size.
- shared_file_time_imbalance (high) [P19]: a shared record's |SLOWEST - FASTEST_RANK_TIME| over its
  read + write + metadata time (summed over ranks, as Darshan keeps it) > imbalance_stragglers.
- stragglers (warn) [K]: job_features.rank_time_ratio > straggler_time_ratio.
- rank0_heavy (warn) [K]: rank 0's share of the job's bytes > rank0_bytes_share (nprocs > 1).
- no_collective_shared (high) [M02/M03]: independent / all MPI-IO ops on shared files >
  collective_operations + absolute.
- metadata_heavy (high) [P17]: the busiest rank's POSIX metadata time > metadata_time_rank;
  else (warn) job_features.meta_time_share > metadata_time_share.
- stdio_heavy (high) [S01]: STDIO bytes / (STDIO + POSIX bytes) > interface_stdio.
- single_stripe_shared (warn) [K]: a shared file on one Lustre stripe moving more than
  single_stripe_min_bytes; the value is the largest such file's bytes.
- few_osts (warn) [K]: distinct OSTs / min(stripes placed, ost_count) < ost_coverage.
- many_io_phases (warn) [K]: DXT/Recorder read and write ops in time order, split where the idle
  gap after everything before exceeds io_phase_gap_s: more phases than io_phases. A log without
  timed ops uses its HEATMAP bins that moved bytes instead (the message says which; phases can
  then only be as fine as the bin width).
- read_after_write (info) [K]: bytes on files with io_type RAW / all bytes > read_after_write_share
  (the keynote counts it as a pattern that performs well: a hint, not a fault).
- redundant_reads / redundant_writes (warn) [P09/P10]: the worst file's POSIX bytes read (written) /
  (POSIX_MAX_BYTE_READ (WRITTEN) + 1) > redundant_read_ratio (redundant_write_ratio).
- blocking_mpiio_reads / blocking_mpiio_writes (warn) [M06/M07]: more blocking MPI-IO reads (writes:
  independent + collective) than blocking_operations_absolute and no non-blocking or split-collective one.
- single_reader_shared (warn) [K: "all ranks open, one rank reads"]: a read-only shared record (a file
  every rank opened) of a job of several ranks whose bytes one rank moved: that rank's share (from
  SLOWEST/FASTEST_RANK_BYTES and F_VARIANCE_RANK_BYTES, see the rule) > single_reader_share.

Choices where Drishti differs or is silent: small requests count Darshan's size bins whose upper
bound is at most `small_bytes` (the bins are all Darshan keeps). A rank's metadata time is its own
records' plus an even share (1/nprocs) of the shared records' (Drishti tests each record, shared
ones holding the sum over ranks). rank_size_imbalance compares each rank's total over its own
records, leaving out ranks that moved no byte (Drishti compares the ranks of each file, which
misses file-per-process jobs). Rank 0's bytes are its own records' plus the shared records whose
slowest or fastest rank it is (a lower bound). no_collective_shared weighs the shares on shared
files instead of requiring zero collective calls job-wide. Time-share rules skip jobs with less
than `min_io_time_s` of I/O. Evidence lists at most `evidence_max` files (paths), ranks
(`rank <n>`), OSTs (`OST <n>`) or phases, most significant first. A job no rule fires on gets a
single `no_issue` row.

Drishti's own conditions for P09/P10 are inverted against their messages ("more data read than the
highest offset" fires when the job's highest offset exceeds its bytes read: a sparse read, not a
re-read); iolake tests what the message says, per file. Drishti's M06/M07 fire whenever a log has the
MPI-IO module and no non-blocking call, also with no read (write) at all; iolake needs a blocking one.
Stable codes, Drishti equivalents and recommendations: `schemas.bottleneck_tags.CATALOG`.
"""
from __future__ import annotations

from functools import reduce

import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame, Window

from schemas import SILVER

OUT = [f.name for f in SILVER["bottleneck_tags"].struct.fields]
KEY = ["log_id", "job_month"]
# Darshan's access-size histogram bins and their upper bounds in bytes
SIZE_BINS = (("0_100", 100), ("100_1K", 1024), ("1K_10K", 10240), ("10K_100K", 102400),
             ("100K_1M", 1048576), ("1M_4M", 4194304), ("4M_10M", 10485760), ("10M_100M", 104857600),
             ("100M_1G", 1073741824))
Tagged = tuple[DataFrame, DataFrame]  # a rule's rows (no evidence yet) and its evidence candidates


def _z(c) -> Column:
    return F.coalesce(F.col(c) if isinstance(c, str) else c, F.lit(0))


def _sum(*cols: str) -> Column:
    return reduce(lambda a, b: a + b, [_z(c) for c in cols], F.lit(0))


def _pct(c: str) -> Column:
    return F.col(c) * 100.0


def _rank(c: str) -> Column:
    return F.concat(F.lit("rank "), F.col(c).cast("string"))


def human_bytes(n: float) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{int(n)} bytes"


def _bytes_str(c: Column) -> Column:
    c = c.cast("double")
    return (F.when(c >= 1024**3, F.format_string("%.1f GiB", c / 1024**3))
            .when(c >= 1024**2, F.format_string("%.1f MiB", c / 1024**2))
            .when(c >= 1024, F.format_string("%.1f KiB", c / 1024))
            .otherwise(F.format_string("%.0f bytes", c)))


def small_bins(small_bytes: int) -> list[str]:
    """The size bins wholly below `small_bytes`."""
    return [b for b, upper in SIZE_BINS if upper <= small_bytes]


def _items(df: DataFrame, item: Column | None, weight: Column, prio: int = 0) -> DataFrame:
    """Evidence candidates (log_id, record_id, prio, weight, item), listed by prio then weight, highest first.
    Without `item`, the candidate is the file `record_id` (named once, in `transform`)."""
    record = F.col("record_id") if item is None else F.lit(None)
    item = F.lit(None).cast("string") if item is None else item
    return df.select("log_id", record.cast("long").alias("record_id"), F.lit(prio).alias("prio"),
                     weight.cast("double").alias("weight"), item.alias("item"))


def _files(df: DataFrame, weight: Column) -> DataFrame:
    return _items(df, None, weight)


def _emit(fired: DataFrame, tag: str, severity, metric, setting, threshold, message: Column,
          items: DataFrame) -> Tagged:
    """One tag's rows (no evidence yet) from `fired` (log_id, job_month, value, ...: a row per log it fired on)."""
    lit = lambda v: v if isinstance(v, Column) else F.lit(v)  # noqa: E731
    rows = fired.select(
        "log_id", "job_month", F.lit(tag).alias("tag"), lit(severity).alias("severity"),
        lit(metric).alias("metric"), F.col("value").cast("double").alias("value"),
        F.concat(F.lit("tags."), lit(setting)).alias("threshold_name"),
        lit(threshold).cast("double").alias("threshold"),
        message.alias("message"),
    )
    return rows, items.withColumn("tag", F.lit(tag))


class _Inputs:
    """Inputs, settings and the aggregates several rules share (lazy: no action)."""

    def __init__(self, tables: dict[str, DataFrame], file_features: DataFrame, job_features: DataFrame, tconf):
        self.t, self.ff, self.c = tables, file_features, tconf
        self.jobs = job_features.select(*KEY, "nprocs", "io_time_s", "rank_time_ratio", "meta_time_share")
        small = small_bins(tconf.small_bytes)
        self.px = tables["posix"].groupBy(*KEY, "record_id").agg(
            F.sum(_z("POSIX_READS")).alias("reads"), F.sum(_z("POSIX_WRITES")).alias("writes"),
            F.sum(_sum(*[f"POSIX_SIZE_READ_{b}" for b in small])).alias("small_r"),
            F.sum(_sum(*[f"POSIX_SIZE_WRITE_{b}" for b in small])).alias("small_w"),
            F.sum(_z("POSIX_SEQ_READS")).alias("seq_r"), F.sum(_z("POSIX_SEQ_WRITES")).alias("seq_w"),
            F.sum(_z("POSIX_FILE_NOT_ALIGNED")).alias("file_na"), F.sum(_z("POSIX_MEM_NOT_ALIGNED")).alias("mem_na"),
            F.max("POSIX_FILE_ALIGNMENT").alias("file_alignment"),
            F.sum(_z("POSIX_BYTES_READ")).alias("br"), F.sum(_z("POSIX_BYTES_WRITTEN")).alias("bw"),
            F.max("POSIX_MAX_BYTE_READ").alias("max_byte_read"), F.max("POSIX_MAX_BYTE_WRITTEN").alias("max_byte_written"),
            F.max((F.col("rank") == -1).cast("int")).cast("boolean").alias("shared"),
        )
        self.px_job = self.px.groupBy(*KEY).agg(
            *[F.sum(c).alias(c) for c in ("reads", "writes", "small_r", "small_w", "seq_r", "seq_w", "file_na",
                                          "mem_na", "br", "bw")],
            F.max("file_alignment").alias("file_alignment"))
        # per rank, over its own (non-shared) records: POSIX bytes and metadata time, POSIX + STDIO I/O time
        own = [tables[t].where(F.col("rank") >= 0).select(
            *KEY, "rank",
            (_z(f"{m}_BYTES_READ") + _z(f"{m}_BYTES_WRITTEN") if m == "POSIX" else F.lit(0)).alias("b"),
            (_z(f"{m}_F_META_TIME") if m == "POSIX" else F.lit(0.0)).alias("meta"),
            (_z(f"{m}_F_READ_TIME") + _z(f"{m}_F_WRITE_TIME") + _z(f"{m}_F_META_TIME")).alias("t"))
            for t, m in (("posix", "POSIX"), ("stdio", "STDIO"))]
        self.ranks = own[0].unionByName(own[1]).groupBy(*KEY, "rank").agg(
            F.sum("b").alias("b"), F.sum("meta").alias("meta"), F.sum("t").alias("t"))


def _small(i: _Inputs, rw: str, shared: bool = False) -> Tagged:
    c = i.c
    total, small = ("reads", "small_r") if rw == "read" else ("writes", "small_w")
    recs = i.px.where("shared") if shared else i.px
    job = recs.groupBy(*KEY).agg(F.sum(total).alias(total), F.sum(small).alias(small))
    fired = job.where(
        (F.col(small) > c.small_requests_absolute) & (F.try_divide(F.col(small), F.col(total)) > c.small_requests)
    ).withColumn("value", F.try_divide(F.col(small), F.col(total)))
    # Drishti's detail: the files holding more than half the threshold's share of the job's requests
    job_total = F.sum(total).over(Window.partitionBy("log_id"))
    files = recs.where(F.col(small) > 0).withColumn("job_total", job_total).where(
        F.col(small) > F.col("job_total") * c.small_requests / 2)
    on = " on shared files" if shared else ""
    msg = F.format_string(f"%d of %d POSIX {rw}s{on} (%.1f%%) are smaller than {human_bytes(c.small_bytes)}",
                          F.col(small), F.col(total), _pct("value"))
    kind = "shared_" if shared else ""
    return _emit(fired, f"small_{kind}{rw}s", "high", f"small_{kind}{rw}_share", "small_requests", c.small_requests,
                 msg, _files(files, F.col(small)))


def _misaligned(i: _Inputs, kind: str) -> Tagged:
    c, col = i.c, ("file_na" if kind == "file" else "mem_na")
    ops = F.col("reads") + F.col("writes")
    fired = i.px_job.where((ops > 0) & (F.try_divide(F.col(col), ops) > c.misaligned_requests)).withColumn("value", F.try_divide(F.col(col), ops))
    what = ("file offsets not aligned to the file system's %d-byte boundary" if kind == "file"
            else "memory buffers not aligned")
    args = [F.col(col), ops, _pct("value")] + ([_z("file_alignment")] if kind == "file" else [])
    msg = F.format_string(f"%d of %d POSIX requests (%.1f%%) have {what}", *args)
    return _emit(fired, f"misaligned_{kind}", "high", f"{kind}_not_aligned_share", "misaligned_requests",
                 c.misaligned_requests, msg, _files(i.px.where(F.col(col) > 0), F.col(col)))


def _random(i: _Inputs, rw: str) -> Tagged:
    c = i.c
    total, seq = ("reads", "seq_r") if rw == "read" else ("writes", "seq_w")
    rnd = F.col(total) - F.col(seq)
    fired = i.px_job.where((rnd > c.random_operations_absolute) & (F.try_divide(rnd, F.col(total)) > c.random_operations)
                           ).withColumn("value", F.try_divide(rnd, F.col(total))).withColumn("n_random", rnd)
    msg = F.format_string(f"%d of %d POSIX {rw}s (%.1f%%) are random (neither consecutive nor sequential)",
                          F.col("n_random"), F.col(total), _pct("value"))
    return _emit(fired, f"random_{rw}s", "high", f"random_{rw}_share", "random_operations", c.random_operations,
                 msg, _files(i.px.where(rnd > 0), rnd))


def _shared_file_imbalance(i: _Inputs, of: str) -> Tagged:
    """Drishti's P18 (`of` = "bytes") and P19 ("time"): per shared record, |slowest - fastest rank| over its total."""
    c = i.c
    if of == "bytes":
        diff = _z("POSIX_SLOWEST_RANK_BYTES") - _z("POSIX_FASTEST_RANK_BYTES")
        total = _z("POSIX_BYTES_READ") + _z("POSIX_BYTES_WRITTEN")
        tag, metric = "shared_file_imbalance", "shared_file_byte_imbalance"
    else:
        diff = _z("POSIX_F_SLOWEST_RANK_TIME") - _z("POSIX_F_FASTEST_RANK_TIME")
        total = _z("POSIX_F_READ_TIME") + _z("POSIX_F_WRITE_TIME") + _z("POSIX_F_META_TIME")
        tag, metric = "shared_file_time_imbalance", "shared_file_time_imbalance"
    recs = i.t["posix"].where(F.col("rank") == -1).select(
        *KEY, "record_id", F.try_divide(F.abs(diff), total).alias("imb")).where(F.col("imb") > c.imbalance_stragglers)
    fired = recs.groupBy(*KEY).agg(F.max("imb").alias("value"), F.count("*").alias("n"))
    what = "bytes differ by %.1f%% of the file's bytes" if of == "bytes" else \
        "I/O times differ by %.1f%% of the file's I/O time (all ranks' read, write and metadata time)"
    msg = F.format_string(f"%d shared file(s) with rank load imbalance: on the worst, the slowest and fastest "
                          f"ranks' {what}", F.col("n"), _pct("value"))
    return _emit(fired, tag, "high", metric, "imbalance_stragglers", c.imbalance_stragglers, msg,
                 _files(recs, F.col("imb")))


def _rank_size_imbalance(i: _Inputs) -> Tagged:
    c = i.c
    ranks = i.ranks.where(F.col("b") > 0)  # the ranks that moved bytes on their own files
    spread = Window.partitionBy("log_id")
    ranks = ranks.withColumn("mx", F.max("b").over(spread)).withColumn("mn", F.min("b").over(spread)).withColumn(
        "avg", F.avg("b").over(spread)).withColumn("n", F.count("*").over(spread))
    fired = ranks.where(F.col("n") > 1).groupBy(*KEY).agg(
        F.first("mx").alias("mx"), F.first("mn").alias("mn"), F.first("n").alias("n")).withColumn(
        "value", F.try_divide(F.col("mx") - F.col("mn"), F.col("mx"))).where(F.col("value") > c.imbalance_size)
    msg = F.format_string("ranks' own POSIX bytes range from %s to %s over %d ranks ((max - min) / max = %.1f%%)",
                          _bytes_str(F.col("mn")), _bytes_str(F.col("mx")), F.col("n"), _pct("value"))
    return _emit(fired, "rank_size_imbalance", "high", "rank_byte_imbalance", "imbalance_size", c.imbalance_size,
                 msg, _items(ranks, _rank("rank"), F.abs(F.col("b") - F.col("avg"))))


def _stragglers(i: _Inputs) -> Tagged:
    c = i.c
    fired = i.jobs.where((F.col("io_time_s") >= c.min_io_time_s) & (F.col("rank_time_ratio") > c.straggler_time_ratio)
                         ).withColumn("value", F.col("rank_time_ratio"))

    def slowest(df, m):  # the slowest rank of each shared record
        return df.where((F.col("rank") == -1) & F.col(f"{m}_SLOWEST_RANK").isNotNull()).select(
            "log_id", F.col(f"{m}_SLOWEST_RANK").alias("rank"), _z(f"{m}_F_SLOWEST_RANK_TIME").alias("t"))

    ranks = i.ranks.select("log_id", "rank", "t").unionByName(slowest(i.t["posix"], "POSIX")).unionByName(
        slowest(i.t["stdio"], "STDIO"))
    msg = F.format_string("the slowest rank spends %.1f times the fastest rank's I/O time (%.1f s of I/O)",
                          F.col("value"), F.col("io_time_s"))
    return _emit(fired, "stragglers", "warn", "rank_time_ratio", "straggler_time_ratio", c.straggler_time_ratio,
                 msg, _items(ranks, _rank("rank"), F.col("t")))


def _rank0_heavy(i: _Inputs) -> Tagged:
    c = i.c

    def part(df, m):  # a record's bytes and rank 0's part: all of its own, or as a shared record's slowest/fastest
        b = _z(f"{m}_BYTES_READ") + _z(f"{m}_BYTES_WRITTEN")
        b0 = (F.when(F.col("rank") == 0, b)
              .when((F.col("rank") == -1) & (F.col(f"{m}_SLOWEST_RANK") == 0), _z(f"{m}_SLOWEST_RANK_BYTES"))
              .when((F.col("rank") == -1) & (F.col(f"{m}_FASTEST_RANK") == 0), _z(f"{m}_FASTEST_RANK_BYTES"))
              .otherwise(F.lit(0)))
        return df.select(*KEY, "record_id", b.alias("b"), b0.alias("b0"))

    recs = part(i.t["posix"], "POSIX").unionByName(part(i.t["stdio"], "STDIO"))
    per_job = recs.groupBy(*KEY).agg(F.sum("b").alias("total"), F.sum("b0").alias("b0"),
                                     F.countDistinct(F.when(F.col("b0") > 0, F.col("record_id"))).alias("n_files"))
    fired = per_job.join(i.jobs.select("log_id", "nprocs"), "log_id", "inner").where(
        (F.col("nprocs") > 1) & (F.col("total") > 0)).withColumn("value", F.try_divide(F.col("b0"), F.col("total"))).where(
        F.col("value") > c.rank0_bytes_share)
    msg = F.format_string("rank 0 moves %.1f%% of the job's bytes (%s of %s, %d files) among %d ranks",
                          _pct("value"), _bytes_str(F.col("b0")), _bytes_str(F.col("total")), F.col("n_files"),
                          F.col("nprocs"))
    return _emit(fired, "rank0_heavy", "warn", "rank0_bytes_share", "rank0_bytes_share", c.rank0_bytes_share, msg,
                 _files(recs.where(F.col("b0") > 0), F.col("b0")))


def _no_collective_shared(i: _Inputs) -> Tagged:
    c = i.c
    files = i.t["mpiio"].groupBy(*KEY, "record_id").agg(
        ((F.max((F.col("rank") == -1).cast("int")) == 1) | (F.countDistinct("rank") > 1)).alias("shared"),
        F.sum(_sum("MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES")).alias("indep"),
        F.sum(_sum("MPIIO_COLL_READS", "MPIIO_COLL_WRITES")).alias("coll"),
    ).where("shared")
    fired = files.groupBy(*KEY).agg(F.sum("indep").alias("indep"), F.sum("coll").alias("coll")).where(
        F.col("indep") > c.collective_operations_absolute).withColumn(
        "value", F.try_divide(F.col("indep"), F.col("indep") + F.col("coll"))).where(F.col("value") > c.collective_operations)
    msg = F.format_string("%d of %d MPI-IO operations on shared files (%.1f%%) are independent, not collective",
                          F.col("indep"), F.col("indep") + F.col("coll"), _pct("value"))
    return _emit(fired, "no_collective_shared", "high", "independent_op_share", "collective_operations",
                 c.collective_operations, msg, _files(files.where(F.col("indep") > 0), F.col("indep")))


def _metadata_heavy(i: _Inputs) -> Tagged:
    c = i.c
    shared = i.t["posix"].where(F.col("rank") == -1).groupBy("log_id").agg(
        F.sum(_z("POSIX_F_META_TIME")).alias("shared_meta"))
    own = i.ranks.groupBy("log_id").agg(F.max("meta").alias("max_own"),
                                        F.collect_list(F.struct("rank", "meta")).alias("own"))
    j = i.jobs.join(shared, "log_id", "left").join(own, "log_id", "left").withColumn(
        "shared_avg", F.try_divide(_z("shared_meta"), F.greatest(_z("nprocs"), F.lit(1))))  # an even split: Darshan keeps no more
    over = F.filter("own", lambda r: r["meta"] + F.col("shared_avg") > c.metadata_time_rank)
    j = j.withColumn("max_rank", _z("max_own") + F.col("shared_avg")).withColumn(
        "n_over", F.when(F.col("shared_avg") > c.metadata_time_rank, F.col("nprocs")).otherwise(F.size(over)))
    absolute = F.col("max_rank") > c.metadata_time_rank
    share = (F.col("io_time_s") >= c.min_io_time_s) & (F.col("meta_time_share") > c.metadata_time_share)
    fired = j.where(absolute | share).withColumn("absolute", absolute).withColumn(
        "value", F.when(absolute, F.col("max_rank")).otherwise(F.col("meta_time_share")))
    # the ranks over the per-rank threshold first, then the files by metadata time
    ranks = j.select("log_id", F.explode(over).alias("r")).select("log_id", "r.rank", "r.meta")
    items = _items(ranks, _rank("rank"), F.col("meta"), prio=1).unionByName(
        _files(i.ff.where(F.col("meta_time_s") > 0), F.col("meta_time_s")))
    a = F.col("absolute")
    msg = F.when(a, F.format_string(f"%d rank(s) spend over {c.metadata_time_rank:g} s in POSIX metadata "
                                    "operations (slowest: %.1f s)", F.col("n_over"), F.col("value"))).otherwise(
        F.format_string("metadata operations take %.1f%% of the job's I/O time (%.1f s of I/O)",
                        _pct("value"), F.col("io_time_s")))
    return _emit(fired, "metadata_heavy", F.when(a, "high").otherwise("warn"),
                 F.when(a, "max_rank_meta_time_s").otherwise("meta_time_share"),
                 F.when(a, "metadata_time_rank").otherwise("metadata_time_share"),
                 F.when(a, F.lit(float(c.metadata_time_rank))).otherwise(F.lit(float(c.metadata_time_share))), msg,
                 items)


def _stdio_heavy(i: _Inputs) -> Tagged:
    c = i.c
    st = i.t["stdio"].select(*KEY, "record_id", (_z("STDIO_BYTES_READ") + _z("STDIO_BYTES_WRITTEN")).alias("b"))
    both = st.select(*KEY, "b", F.lit(0).alias("px")).unionByName(
        i.px_job.select(*KEY, F.lit(0).alias("b"), (F.col("br") + F.col("bw")).alias("px")))
    fired = both.groupBy(*KEY).agg(F.sum("b").alias("stdio"), F.sum("px").alias("posix")).where(
        F.col("stdio") + F.col("posix") > 0).withColumn("value", F.try_divide(F.col("stdio"), F.col("stdio") + F.col("posix"))
                                                        ).where(F.col("value") > c.interface_stdio)
    msg = F.format_string("%.1f%% of the job's bytes (%s) go through STDIO, a low-performance interface",
                          _pct("value"), _bytes_str(F.col("stdio")))
    return _emit(fired, "stdio_heavy", "high", "stdio_bytes_share", "interface_stdio", c.interface_stdio, msg,
                 _files(st.where(F.col("b") > 0), F.col("b")))


def _single_stripe_shared(i: _Inputs) -> Tagged:
    c = i.c
    stripes = i.t["lustre"].groupBy("log_id", "record_id").agg(F.max("LUSTRE_COMP_STRIPE_COUNT").alias("stripes"))
    files = i.ff.select(*KEY, "record_id", "n_ranks", (F.col("bytes_read") + F.col("bytes_written")).alias("b")).join(
        stripes, ["log_id", "record_id"], "inner").where(
        (F.col("stripes") == 1) & (F.col("n_ranks") > 1) & (F.col("b") > c.single_stripe_min_bytes))
    fired = files.groupBy(*KEY).agg(F.max("b").alias("value"), F.count("*").alias("n"))
    msg = F.format_string(f"%d shared file(s) moving over {human_bytes(c.single_stripe_min_bytes)} sit on a single "
                          "Lustre stripe (largest: %s)", F.col("n"), _bytes_str(F.col("value")))
    return _emit(fired, "single_stripe_shared", "warn", "single_stripe_shared_file_bytes", "single_stripe_min_bytes",
                 c.single_stripe_min_bytes, msg, _files(files, F.col("b")))


def _few_osts(i: _Inputs) -> Tagged:
    c = i.c
    # one layout per (file, component): Darshan may repeat it on several ranks' records
    comps = i.t["lustre"].dropDuplicates(["log_id", "record_id", "component"])
    per_ost = comps.select(*KEY, F.explode("LUSTRE_OST_IDS").alias("ost")).groupBy(*KEY, "ost").agg(
        F.count("*").alias("stripes"))
    fs_osts = F.lit(c.ost_count) if c.ost_count > 0 else F.max("ost") + 1
    fired = per_ost.groupBy(*KEY).agg(F.sum("stripes").alias("stripes"), F.count("*").alias("distinct"),
                                      F.least(F.sum("stripes"), fs_osts).alias("could")).withColumn(
        "value", F.try_divide(F.col("distinct"), F.col("could"))).where(F.col("value") < c.ost_coverage)
    msg = F.format_string("the job's %d Lustre stripes sit on %d distinct OSTs of the %d they could spread over",
                          F.col("stripes"), F.col("distinct"), F.col("could"))
    return _emit(fired, "few_osts", "warn", "ost_coverage", "ost_coverage", c.ost_coverage, msg,
                 _items(per_ost, F.concat(F.lit("OST "), F.col("ost").cast("string")), F.col("stripes")))


def _heatmap_ops(heatmap: DataFrame) -> DataFrame:
    """HEATMAP bins that moved bytes, as timed pseudo-ops (start and end of the bin, bytes summed
    over ranks and over POSIX, STDIO and DFS; MPI-IO's and DAOS's bytes reach those layers)."""
    h = heatmap.where(F.col("module").isin("POSIX", "STDIO", "DFS")).select(
        *KEY, "bin_width_s", F.posexplode(F.arrays_zip("read_bytes", "write_bytes")).alias("bin", "b"))
    h = h.groupBy(*KEY, "bin").agg(F.sum(_z("b.read_bytes") + _z("b.write_bytes")).alias("length"),
                                   F.max("bin_width_s").alias("w")).where(F.col("length") > 0)
    return h.select(*KEY, (F.col("bin") * F.col("w")).alias("start_s"), ((F.col("bin") + 1) * F.col("w")).alias("end_s"),
                    "length")


def _many_io_phases(i: _Inputs) -> Tagged:
    c = i.c
    ops = i.t["io_ops"].where(F.col("op").isin("read", "write") & F.col("start_s").isNotNull()).select(
        *KEY, "start_s", F.coalesce("end_s", "start_s").alias("end_s"), _z("length").alias("length"))
    # without traced ops (no DXT, the production default), Darshan 3.4+'s HEATMAP bins time the I/O
    heat = _heatmap_ops(i.t["heatmap"]).join(ops.select(*KEY).distinct(), list(KEY), "left_anti")
    ops = ops.withColumn("source", F.lit("traced")).unionByName(heat.withColumn("source", F.lit("HEATMAP")))
    order = Window.partitionBy("log_id").orderBy("start_s", "end_s")
    prev_end = F.max("end_s").over(order.rowsBetween(Window.unboundedPreceding, -1))
    ops = ops.withColumn("new", (prev_end.isNull() | (F.col("start_s") - prev_end > c.io_phase_gap_s)).cast("int"))
    ops = ops.withColumn("phase", F.sum("new").over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    phases = ops.groupBy(*KEY, "phase", "source").agg(F.min("start_s").alias("t0"), F.max("end_s").alias("t1"),
                                            F.sum("length").alias("bytes"))
    fired = phases.groupBy(*KEY).agg(F.count("*").alias("value"), F.first("source").alias("source")).where(
        F.col("value") > c.io_phases)
    msg = F.format_string(f"%s I/O comes in %d phases separated by idle gaps over {c.io_phase_gap_s:g} s",
                          F.col("source"), F.col("value"))
    return _emit(fired, "many_io_phases", "warn", "io_phases", "io_phases", c.io_phases, msg,
                 _items(phases, F.format_string("phase %d: %.2f-%.2f s", "phase", "t0", "t1"), F.col("bytes")))


def _read_after_write(i: _Inputs) -> Tagged:
    c = i.c
    ff = i.ff.select(*KEY, "record_id", (F.col("io_type") == "RAW").alias("raw"),
                     (F.col("bytes_read") + F.col("bytes_written")).alias("b"))
    fired = ff.groupBy(*KEY).agg(F.sum(F.when(F.col("raw"), F.col("b")).otherwise(0)).alias("raw_b"),
                                 F.sum("b").alias("total"), F.sum(F.col("raw").cast("long")).alias("n")).where(
        (F.col("total") > 0) & (F.col("n") > 0)).withColumn("value", F.try_divide(F.col("raw_b"), F.col("total"))).where(
        F.col("value") > c.read_after_write_share)
    msg = F.format_string("%d file(s) are read after being written, %.1f%% of the job's bytes",
                          F.col("n"), _pct("value"))
    return _emit(fired, "read_after_write", "info", "raw_bytes_share", "read_after_write_share",
                 c.read_after_write_share, msg, _files(ff.where("raw"), F.col("b")))


def _redundant(i: _Inputs, rw: str) -> Tagged:
    c = i.c
    b, mx = ("br", "max_byte_read") if rw == "read" else ("bw", "max_byte_written")
    setting = f"redundant_{rw}_ratio"
    files = i.px.where((F.col(mx) >= 0) & (F.col(b) > 0)).withColumn(
        "ratio", F.try_divide(F.col(b), F.col(mx) + 1)).where(F.col("ratio") > getattr(c, setting))
    extra = F.col(b) - F.col(mx) - 1
    fired = files.groupBy(*KEY).agg(F.max("ratio").alias("value"), F.count("*").alias("n"), F.sum(extra).alias("extra"))
    done = "read" if rw == "read" else "written"
    msg = F.format_string(f"%d file(s) are {done} beyond their highest offset {done} (%s {done} again; worst "
                          "%.1f times)", F.col("n"), _bytes_str(F.col("extra")), F.col("value"))
    return _emit(fired, f"redundant_{rw}s", "warn", f"{rw}_amplification", setting, getattr(c, setting), msg,
                 _files(files, extra))


def _blocking_mpiio(i: _Inputs, rw: str) -> Tagged:
    c = i.c
    d = "READS" if rw == "read" else "WRITES"
    files = i.t["mpiio"].groupBy(*KEY, "record_id").agg(
        F.sum(_sum(f"MPIIO_INDEP_{d}", f"MPIIO_COLL_{d}")).alias("blocking"),
        F.sum(_sum(f"MPIIO_NB_{d}", f"MPIIO_SPLIT_{d}")).alias("nonblocking"))
    fired = files.groupBy(*KEY).agg(F.sum("blocking").alias("value"), F.sum("nonblocking").alias("nb")).where(
        (F.col("nb") == 0) & (F.col("value") > c.blocking_operations_absolute))
    msg = F.format_string(f"all %d MPI-IO {rw}s are blocking: none is non-blocking (MPI_File_i{rw}*) or "
                          f"split-collective, so no {rw} overlaps computation", F.col("value"))
    return _emit(fired, f"blocking_mpiio_{rw}s", "warn", f"blocking_mpiio_{rw}s", "blocking_operations_absolute",
                 c.blocking_operations_absolute, msg, _files(files.where(F.col("blocking") > 0), F.col("blocking")))


def _single_reader_shared(i: _Inputs) -> Tagged:
    """The keynote's "all ranks open, one rank reads": a read-only shared record (Darshan keeps one for a
    file every rank opened) whose bytes one rank moved. That rank's share is the larger of the slowest and
    fastest ranks' bytes and the share the variance of the ranks' bytes implies when the others split the
    rest evenly: with n ranks, a share f gives variance B^2 (n f - 1)^2 / (n^2 (n - 1)), its maximum
    B^2 (n - 1) / n^2 when f = 1 (Darshan keeps the population variance)."""
    c = i.c
    n = F.col("nprocs").cast("double")
    b = _z("POSIX_BYTES_READ").cast("double")
    ratio = F.least(F.lit(1.0), F.greatest(F.lit(0.0), F.try_divide(_z("POSIX_F_VARIANCE_RANK_BYTES") * n * n,
                                                                     b * b * (n - 1))))
    from_var = (F.lit(1.0) + (n - 1) * F.sqrt(ratio)) / n
    direct = F.try_divide(F.greatest(_z("POSIX_SLOWEST_RANK_BYTES"), _z("POSIX_FASTEST_RANK_BYTES")).cast("double"), b)
    recs = i.t["posix"].where(F.col("rank") == -1).join(i.jobs.select("log_id", "nprocs"), "log_id", "inner").where(
        (F.col("nprocs") > 1) & (_z("POSIX_BYTES_WRITTEN") == 0) & (b > 0)).select(
        *KEY, "record_id", "nprocs", b.alias("b"), F.greatest(from_var, direct).alias("share")).where(
        F.col("share") > c.single_reader_share)
    fired = recs.groupBy(*KEY).agg(F.max("share").alias("value"), F.count("*").alias("n"),
                                   F.first("nprocs").alias("nprocs"), F.max("b").alias("b"))
    msg = F.format_string("%d read-only file(s) opened by all %d ranks are read by one rank (largest: %s; one rank "
                          "moved %.1f%% of the bytes)", F.col("n"), F.col("nprocs"), _bytes_str(F.col("b")),
                          _pct("value"))
    return _emit(fired, "single_reader_shared", "warn", "single_reader_share", "single_reader_share",
                 c.single_reader_share, msg, _files(recs, F.col("b")))


RULES = {  # tag -> rule
    "small_reads": lambda i: _small(i, "read"), "small_writes": lambda i: _small(i, "write"),
    "misaligned_file": lambda i: _misaligned(i, "file"), "misaligned_memory": lambda i: _misaligned(i, "memory"),
    "random_reads": lambda i: _random(i, "read"), "random_writes": lambda i: _random(i, "write"),
    "shared_file_imbalance": lambda i: _shared_file_imbalance(i, "bytes"), "rank_size_imbalance": _rank_size_imbalance,
    "stragglers": _stragglers, "rank0_heavy": _rank0_heavy, "no_collective_shared": _no_collective_shared,
    "metadata_heavy": _metadata_heavy, "stdio_heavy": _stdio_heavy, "single_stripe_shared": _single_stripe_shared,
    "few_osts": _few_osts, "many_io_phases": _many_io_phases, "read_after_write": _read_after_write,
    "redundant_reads": lambda i: _redundant(i, "read"), "redundant_writes": lambda i: _redundant(i, "write"),
    "small_shared_reads": lambda i: _small(i, "read", shared=True),
    "small_shared_writes": lambda i: _small(i, "write", shared=True),
    "shared_file_time_imbalance": lambda i: _shared_file_imbalance(i, "time"),
    "blocking_mpiio_reads": lambda i: _blocking_mpiio(i, "read"),
    "blocking_mpiio_writes": lambda i: _blocking_mpiio(i, "write"),
    "single_reader_shared": _single_reader_shared,
}


def _evidence(items: DataFrame, names: DataFrame, n: int) -> DataFrame:
    """Every rule's candidates -> (log_id, tag, evidence): files named once, one aggregation for all tags."""
    named = items.join(names, ["log_id", "record_id"], "left").select(
        "log_id", "tag", "prio", F.coalesce("weight", F.lit(0.0)).alias("weight"),
        F.coalesce("item", "name", F.concat(F.lit("record "), F.col("record_id").cast("string"))).alias("item"))
    ranked = F.sort_array(F.collect_list(F.struct("prio", "weight", "item")), asc=False)
    top = F.slice(F.array_distinct(F.transform(ranked, lambda s: s["item"])), 1, n)
    return named.where(F.col("item").isNotNull()).groupBy("log_id", "tag").agg(top.alias("evidence"))


def transform(tables: dict[str, DataFrame], file_features: DataFrame, job_features: DataFrame, tconf,
              only: tuple[str, ...] | None = None) -> DataFrame:
    """bronze tables + silver file/job features -> silver/bottleneck_tags rows (one per log and tag).

    `only` evaluates just those tags' rules (a job none of them fires on gets `no_issue`)."""
    i = _Inputs(tables, file_features, job_features, tconf)
    rows, items = zip(*(rule(i) for tag, rule in RULES.items() if only is None or tag in only))
    tags = reduce(DataFrame.unionByName, rows)
    names = tables["files"].select("log_id", "record_id", "name")
    evidence = _evidence(reduce(DataFrame.unionByName, items), names, tconf.evidence_max)
    tags = tags.join(evidence, ["log_id", "tag"], "left").withColumn(
        "evidence", F.coalesce(F.col("evidence"), F.array().cast("array<string>")))
    none = i.jobs.join(tags.select("log_id"), "log_id", "left_anti").select(
        *KEY, F.lit("no_issue").alias("tag"), F.lit("info").alias("severity"), F.lit("tags_fired").alias("metric"),
        F.lit(0.0).alias("value"), F.lit(None).cast("string").alias("threshold_name"),
        F.lit(None).cast("double").alias("threshold"), F.array().cast("array<string>").alias("evidence"),
        F.lit("no bottleneck rule fired").alias("message"))
    return tags.unionByName(none).select(*OUT)
