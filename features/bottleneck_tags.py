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
- rank_read_imbalance / rank_write_imbalance (high) [P22/P21, K]: (max - min) / max of the POSIX
  bytes each rank read (wrote) on its own (non-shared) records, over the ranks that read (wrote)
  any, > imbalance_size: a job that only writes never gets the read tag.
- shared_file_time_imbalance (high) [P19]: a shared record's |SLOWEST - FASTEST_RANK_TIME| over its
  read + write + metadata time (summed over ranks, as Darshan keeps it) > imbalance_stragglers.
- stragglers (warn) [K]: job_features.rank_time_ratio > straggler_time_ratio.
- rank0_heavy (warn) [K]: rank 0's share of the job's bytes > rank0_bytes_share (nprocs > 1).
- no_collective_shared_reads / no_collective_shared_writes (high) [M02/M03]: independent / all
  MPI-IO reads (writes) on shared files > collective_operations + absolute (independent reads
  (writes)).
- metadata_heavy (high) [P17]: the busiest rank's POSIX metadata time > metadata_time_rank;
  else (warn) job_features.meta_time_share > metadata_time_share.
- stdio_heavy (high) [S01]: STDIO bytes / (STDIO + POSIX bytes) > interface_stdio.
- single_stripe_shared (warn) [K]: a shared file on one Lustre stripe moving more than
  single_stripe_min_bytes; the value is the largest such file's bytes.
- few_osts (warn) [K]: distinct OSTs / min(stripes placed, ost_count) < ost_coverage.
- many_io_phases (warn) [K]: DXT/Recorder read and write ops in time order, split where the idle
  gap after everything before exceeds io_phase_gap_s: more phases than io_phases (an op whose end
  is null or precedes its start ends at its start). A log without
  timed ops uses its HEATMAP bins that moved bytes instead (the message says which; phases can
  then only be as fine as the bin width).
- read_after_write (info) [K]: bytes on files with io_type RAW / all bytes > read_after_write_share
  (the keynote counts it as a pattern that performs well: a hint, not a fault).
- redundant_reads / redundant_writes (warn) [P09/P10]: the worst file's POSIX bytes read (written) /
  (POSIX_MAX_BYTE_READ (WRITTEN) + 1) > redundant_read_ratio (redundant_write_ratio), when the
  files past the ratio move more bytes again (bytes - highest offset - 1, summed) than
  redundant_min_bytes and than redundant_min_share of the job's POSIX bytes read and written.
- blocking_mpiio_reads / blocking_mpiio_writes (warn) [M06/M07]: more blocking MPI-IO reads (writes:
  independent + collective) than blocking_operations_absolute and no non-blocking or split-collective one.
- single_reader_shared (warn) [K: "all ranks open, one rank reads"]: a read-only shared record (a file
  every rank opened) of a job of several ranks whose bytes one rank moved: that rank's share (from
  SLOWEST/FASTEST_RANK_BYTES and F_VARIANCE_RANK_BYTES, see the rule) > single_reader_share.

Choices where Drishti differs or is silent: small requests count Darshan's size bins whose upper
bound is at most `small_bytes` (the bins are all Darshan keeps). A rank's metadata time is its own
records' plus an even share (1/nprocs) of the shared records' (Drishti tests each record, shared
ones holding the sum over ranks). rank_read_imbalance and rank_write_imbalance compare each rank's
total over its own records, leaving out ranks that moved no byte (Drishti compares the ranks of each
file, which misses file-per-process jobs), once for reads and once for writes. Rank 0's bytes are
its own records' plus the shared records whose slowest or fastest rank it is (a lower bound).
no_collective_shared_* weigh the shares on shared files instead of requiring zero collective reads
(writes) job-wide. Time-share rules skip jobs with less than `min_io_time_s` of I/O. Evidence lists
at most `evidence_max` files (paths), ranks (`rank <n>`), OSTs (`OST <n>`) or phases, most
significant first. A job no rule fires on gets a single `no_issue` row.

Drishti's own conditions for P09/P10 are inverted against their messages ("more data read than the
highest offset" fires when the job's highest offset exceeds its bytes read: a sparse read, not a
re-read); iolake tests what the message says, per file, and needs an amount worth a warning
(Drishti has no floor). Drishti's M06/M07 fire whenever a log has the MPI-IO module and no
non-blocking call, also with no read (write) at all; iolake needs a blocking one.
Stable codes, Drishti equivalents and recommendations: `schemas.bottleneck_tags.CATALOG`.

Implementation (a small plan, few passes): one aggregation per (log, record) over a union of bronze
`posix`, `stdio`, `mpiio`, `lustre` and silver `file_features` rows holds every per-record quantity
a rule sums or maxes (POSIX rows carry the job's nprocs for single_reader_shared), numbers only so
that Spark hashes it instead of sorting, the file's name from bronze `files` joined after it; one
aggregation per (log, rank) over POSIX and STDIO rows, one per (log, OST) and the I/O phases (io_ops
summed per half-gap time bin, then a window over the bins: `traced_phases`, or bronze/phases, which
ingest computes per log with its twin `log_phases`; or HEATMAP bins) are the other sources. A second
aggregation turns the union of those rows and job_features into one wide row per log, on which every
rule is a column expression (`RULES`: tag -> `Rule`): an array of `when(fires, struct(...))` tag
rows, nulls filtered out, exploded (or `no_issue`). No joins but the names' and a broadcast of
nprocs. Evidence candidates (prio, weight, item, tag) are built on the record, rank, OST and phase
rows and collected into the same row per log (plus the per-log rank lists of metadata_heavy and
rank_read_imbalance / rank_write_imbalance); each tag row then ranks its own (`_evidence`). A record
offers its largest weight per tag: the ranking keeps an item's first (largest) occurrence, so the
lists are those of a candidate per raw row. `python -m bench.transform_ab --stage tags` checks the
rows against another revision's.
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame, Window

from schemas import SILVER
from schemas.bottleneck_tags import NO_ISSUE

if TYPE_CHECKING:
    import pyarrow as pa

OUT = [f.name for f in SILVER["bottleneck_tags"].struct.fields]
KEY = ["log_id", "job_month"]
# Darshan's access-size histogram bins and their upper bounds in bytes
SIZE_BINS = (
    ("0_100", 100),
    ("100_1K", 1024),
    ("1K_10K", 10240),
    ("10K_100K", 102400),
    ("100K_1M", 1048576),
    ("1M_4M", 4194304),
    ("4M_10M", 10485760),
    ("10M_100M", 104857600),
    ("100M_1G", 1073741824),
)
COL = F.col


def _z(c) -> Column:
    return F.coalesce(COL(c) if isinstance(c, str) else c, F.lit(0))


def _sum(*cols: str) -> Column:
    return reduce(lambda a, b: a + b, [_z(c) for c in cols], F.lit(0))


def _pct(c: Column) -> Column:
    return c * 100.0


def _rank(c: Column) -> Column:
    return F.concat(F.lit("rank "), c.cast("string"))


def human_bytes(n: float) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{int(n)} bytes"


def _bytes_str(c: Column) -> Column:
    c = c.cast("double")
    return (
        F.when(c >= 1024**3, F.format_string("%.1f GiB", c / 1024**3))
        .when(c >= 1024**2, F.format_string("%.1f MiB", c / 1024**2))
        .when(c >= 1024, F.format_string("%.1f KiB", c / 1024))
        .otherwise(F.format_string("%.0f bytes", c))
    )


def small_bins(small_bytes: int) -> list[str]:
    """The size bins wholly below `small_bytes`."""
    return [b for b, upper in SIZE_BINS if upper <= small_bytes]


def _lit(v) -> Column:
    return v if isinstance(v, Column) else F.lit(v)


def _aliased(cols: dict[str, Column]) -> list[Column]:
    return [c.alias(name) for name, c in cols.items()]


# --- one row per (log, record) of posix, stdio, mpiio, lustre, files and file_features ----------------


def _posix_rows(posix: DataFrame, jobs: DataFrame, c) -> DataFrame:
    """Per POSIX record row, every quantity a rule sums or ranks (nprocs joined for single_reader_shared)."""
    small = small_bins(c.small_bytes)
    shared = COL("rank") == -1
    imb_b = F.try_divide(
        F.abs(_z("POSIX_SLOWEST_RANK_BYTES") - _z("POSIX_FASTEST_RANK_BYTES")),
        _z("POSIX_BYTES_READ") + _z("POSIX_BYTES_WRITTEN"),
    )
    imb_t = F.try_divide(
        F.abs(_z("POSIX_F_SLOWEST_RANK_TIME") - _z("POSIX_F_FASTEST_RANK_TIME")),
        _z("POSIX_F_READ_TIME") + _z("POSIX_F_WRITE_TIME") + _z("POSIX_F_META_TIME"),
    )
    b, share = _single_reader(c)
    share = F.when(shared & (COL("nprocs") > 1) & (_z("POSIX_BYTES_WRITTEN") == 0) & (b > 0), share)
    reader = share > c.single_reader_share
    rows = posix.join(F.broadcast(jobs.select("log_id", "nprocs")), "log_id", "left")
    return rows.select(
        *KEY,
        "record_id",
        *_aliased(
            {
                "reads": _z("POSIX_READS"),
                "writes": _z("POSIX_WRITES"),
                "small_r": _sum(*[f"POSIX_SIZE_READ_{k}" for k in small]),
                "small_w": _sum(*[f"POSIX_SIZE_WRITE_{k}" for k in small]),
                "seq_r": _z("POSIX_SEQ_READS"),
                "seq_w": _z("POSIX_SEQ_WRITES"),
                "file_na": _z("POSIX_FILE_NOT_ALIGNED"),
                "mem_na": _z("POSIX_MEM_NOT_ALIGNED"),
                "file_alignment": COL("POSIX_FILE_ALIGNMENT"),
                "br": _z("POSIX_BYTES_READ"),
                "bw": _z("POSIX_BYTES_WRITTEN"),
                "max_byte_read": COL("POSIX_MAX_BYTE_READ"),
                "max_byte_written": COL("POSIX_MAX_BYTE_WRITTEN"),
                "px_shared": shared.cast("int"),
                "imb_bytes": F.when(shared & (imb_b > c.imbalance_stragglers), imb_b),
                "imb_time": F.when(shared & (imb_t > c.imbalance_stragglers), imb_t),
                "sr_share": F.when(reader, share),
                "sr_b": F.when(reader, b),
                **_rank0_parts("POSIX"),
            }
        ),
    )


def _single_reader(c) -> tuple[Column, Column]:
    """A shared record's bytes read and the share of them one rank moved: the larger of the slowest and
    fastest ranks' bytes and the share the variance of the ranks' bytes implies when the others split the
    rest evenly: with n ranks, a share f gives variance B^2 (n f - 1)^2 / (n^2 (n - 1)), its maximum
    B^2 (n - 1) / n^2 when f = 1 (Darshan keeps the population variance)."""
    n = COL("nprocs").cast("double")
    b = _z("POSIX_BYTES_READ").cast("double")
    ratio = F.least(
        F.lit(1.0),
        F.greatest(
            F.lit(0.0), F.try_divide(_z("POSIX_F_VARIANCE_RANK_BYTES") * n * n, b * b * (n - 1))
        ),
    )
    from_var = (F.lit(1.0) + (n - 1) * F.sqrt(ratio)) / n
    direct = F.try_divide(
        F.greatest(_z("POSIX_SLOWEST_RANK_BYTES"), _z("POSIX_FASTEST_RANK_BYTES")).cast("double"), b
    )
    return b, F.greatest(from_var, direct)


# the modules whose shared records name a slowest rank -> its columns' prefix; a record has one shared row per
# module (the module tables' keys hold the rank), so its slowest rank is a pair of numbers, not a list
_SLOW = {"POSIX": "px", "STDIO": "st"}


def _rank0_parts(m: str) -> dict[str, Column]:
    """A record's bytes and rank 0's part: all of its own, or as a shared record's slowest/fastest rank;
    and a shared record's slowest rank with its time (straggler evidence)."""
    b = _z(f"{m}_BYTES_READ") + _z(f"{m}_BYTES_WRITTEN")
    shared = COL("rank") == -1
    b0 = (
        F.when(COL("rank") == 0, b)
        .when(shared & (COL(f"{m}_SLOWEST_RANK") == 0), _z(f"{m}_SLOWEST_RANK_BYTES"))
        .when(shared & (COL(f"{m}_FASTEST_RANK") == 0), _z(f"{m}_FASTEST_RANK_BYTES"))
        .otherwise(F.lit(0))
    )
    slow = shared & COL(f"{m}_SLOWEST_RANK").isNotNull()
    p = _SLOW[m]
    return {
        "rk_b": b,
        "rk_b0": b0,
        f"{p}_slow_rank": F.when(slow, COL(f"{m}_SLOWEST_RANK")),
        f"{p}_slow_t": F.when(slow, _z(f"{m}_F_SLOWEST_RANK_TIME")),
    }


def _stdio_rows(stdio: DataFrame) -> DataFrame:
    return stdio.select(
        *KEY,
        "record_id",
        *_aliased(
            {"stdio_b": _z("STDIO_BYTES_READ") + _z("STDIO_BYTES_WRITTEN"), **_rank0_parts("STDIO")}
        ),
    )


def _mpiio_rows(mpiio: DataFrame) -> DataFrame:
    return mpiio.select(
        *KEY,
        "record_id",
        *_aliased(
            {
                "mpi_rank": COL("rank"),
                "mpi_m1": (COL("rank") == -1).cast("int"),
                "indep_r": _z("MPIIO_INDEP_READS"),
                "coll_r": _z("MPIIO_COLL_READS"),
                "indep_w": _z("MPIIO_INDEP_WRITES"),
                "coll_w": _z("MPIIO_COLL_WRITES"),
                "block_r": _sum("MPIIO_INDEP_READS", "MPIIO_COLL_READS"),
                "nb_r": _sum("MPIIO_NB_READS", "MPIIO_SPLIT_READS"),
                "block_w": _sum("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES"),
                "nb_w": _sum("MPIIO_NB_WRITES", "MPIIO_SPLIT_WRITES"),
            }
        ),
    )


def _ff_rows(ff: DataFrame, lustre: DataFrame) -> DataFrame:
    b = COL("bytes_read") + COL("bytes_written")
    raw = COL("io_type") == "RAW"
    files = ff.select(
        *KEY,
        "record_id",
        *_aliased(
            {
                "ff_b": b,
                "ff_raw": raw.cast("long"),
                "ff_raw_b": F.when(raw, b).otherwise(0),
                "ff_n_ranks": COL("n_ranks"),
                "ff_meta": COL("meta_time_s"),
            }
        ),
    )
    return files.unionByName(
        lustre.select(*KEY, "record_id", COL("LUSTRE_COMP_STRIPE_COUNT").alias("stripes")),
        allowMissingColumns=True,
    )


_REDUNDANT = (
    ("read", "br", "max_byte_read"),
    ("write", "bw", "max_byte_written"),
)  # rw, bytes, highest offset


def _union(frames: list[DataFrame]) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


def _records(t: dict[str, DataFrame], ff: DataFrame, jobs: DataFrame, c) -> DataFrame:
    """One row per (log, record) over every record table: what any rule sums, maxes or names (the file's name
    from bronze files, joined after the aggregation: with only numbers to aggregate Spark plans a hash
    aggregation, not the sort-based one a string or a list buffer needs)."""
    feed = _union(
        [
            _posix_rows(t["posix"], jobs, c),
            _stdio_rows(t["stdio"]),
            _mpiio_rows(t["mpiio"]),
            _ff_rows(ff, t["lustre"]),
        ]
    )
    sums = (
        "reads",
        "writes",
        "small_r",
        "small_w",
        "seq_r",
        "seq_w",
        "file_na",
        "mem_na",
        "br",
        "bw",
        "rk_b",
        "rk_b0",
        "stdio_b",
        "indep_r",
        "coll_r",
        "indep_w",
        "coll_w",
        "block_r",
        "nb_r",
        "block_w",
        "nb_w",
        "ff_b",
        "ff_raw",
        "ff_raw_b",
    )
    maxes = (
        "file_alignment",
        "max_byte_read",
        "max_byte_written",
        "imb_bytes",
        "imb_time",
        "sr_share",
        "sr_b",
        "stripes",
        "ff_n_ranks",
        "ff_meta",
    )
    recs = feed.groupBy(*KEY, "record_id").agg(
        *[F.sum(x).alias(x) for x in sums],
        *[F.max(x).alias(x) for x in maxes],
        *[F.count(x).alias(f"n_{x}") for x in ("imb_bytes", "imb_time", "sr_share")],
        F.max("px_shared").cast("boolean").alias("shared"),
        F.max("rk_b0").alias("rk_b0_max"),
        F.max("stdio_b").alias("stdio_b_max"),
        *[
            F.max(f"{p}_slow_{x}").alias(f"{p}_slow_{x}")
            for p in _SLOW.values()
            for x in ("rank", "t")
        ],
        ((F.max("mpi_m1") == 1) | (F.min("mpi_rank") != F.max("mpi_rank"))).alias("mpi_shared"),
    )
    # a shared record's slowest rank with its time, per module (POSIX, STDIO): straggler evidence
    slow = F.filter(
        F.array(
            *[
                F.when(
                    COL(f"{p}_slow_rank").isNotNull(),
                    F.struct(COL(f"{p}_slow_rank").alias("rank"), COL(f"{p}_slow_t").alias("t")),
                )
                for p in _SLOW.values()
            ]
        ),
        lambda x: x.isNotNull(),
    )
    recs = recs.withColumn("slow", slow).join(
        t["files"].select(*KEY, "record_id", "name"), [*KEY, "record_id"], "left"
    )
    ratio = {rw: F.try_divide(COL(b), COL(mx) + 1) for rw, b, mx in _REDUNDANT}
    red = {
        rw: (COL(mx) >= 0) & (COL(b) > 0) & (ratio[rw] > getattr(c, f"redundant_{rw}_ratio"))
        for rw, b, mx in _REDUNDANT
    }
    return recs.select(
        "*",
        *_aliased(
            {
                **{f"ratio_{rw}": r for rw, r in ratio.items()},
                **{f"red_{rw}": r for rw, r in red.items()},
                "ss_b": F.when(
                    (COL("stripes") == 1)
                    & (COL("ff_n_ranks") > 1)
                    & (COL("ff_b") > c.single_stripe_min_bytes),
                    COL("ff_b"),
                ),
            }
        ),
    )


def _record_aggs(c) -> list[Column]:
    """Per log, from the record rows."""
    sh, when = COL("shared"), F.when
    red = {}
    for rw, b, mx in _REDUNDANT:
        r = COL(f"red_{rw}")
        red |= {
            f"red_{rw}_max": F.max(when(r, COL(f"ratio_{rw}"))),
            f"red_{rw}_n": F.count(when(r, 1)),
            f"red_{rw}_extra": F.sum(when(r, COL(b) - COL(mx) - 1)),
        }
    return _aliased(
        {
            **{
                x: F.sum(x)
                for x in (
                    "reads",
                    "writes",
                    "small_r",
                    "small_w",
                    "seq_r",
                    "seq_w",
                    "file_na",
                    "mem_na",
                    "br",
                    "bw",
                    "rk_b",
                    "rk_b0",
                    "stdio_b",
                    "block_r",
                    "nb_r",
                    "block_w",
                    "nb_w",
                    "ff_b",
                    "ff_raw",
                    "ff_raw_b",
                )
            },
            "file_alignment": F.max("file_alignment"),
            **{
                f"sh_{x}": F.sum(when(sh, COL(x)))
                for x in ("reads", "writes", "small_r", "small_w")
            },
            # the requests of the files with small ones (Drishti names the files over half the threshold's share)
            **{
                f"ev_{p}{x}": F.sum(when(cond & (COL(s) > 0), COL(x)))
                for x, s in (("reads", "small_r"), ("writes", "small_w"))
                for p, cond in (("", F.lit(True)), ("sh_", sh))
            },
            **{x: F.max(x) for x in ("imb_bytes", "imb_time", "sr_share")},
            **{f"n_{x}": F.sum(f"n_{x}") for x in ("imb_bytes", "imb_time", "sr_share")},
            "sr_b": F.max("sr_b"),
            "rk_files": F.count(when(COL("rk_b0_max") > 0, COL("record_id"))),
            **{
                f"mpi_{x}_{k}": F.sum(when(COL("mpi_shared"), COL(f"{x}_{k}")))
                for x in ("indep", "coll")
                for k in "rw"
            },
            "ss_max": F.max("ss_b"),
            "ss_n": F.count("ss_b"),
            **red,
        }
    )


# --- per rank, per OST, per I/O phase ------------------------------------------------------------------


def _ranks(t: dict[str, DataFrame]) -> DataFrame:
    """Per (log, rank) over POSIX and STDIO: POSIX bytes read (`rank_br`) and written (`rank_bw`; not
    `br`, `bw`: the record rows' names, summed in the same per-log aggregation) and metadata time,
    POSIX + STDIO I/O time. Rank -1 (the shared records) holds the shared records' POSIX metadata
    time."""
    rows = [
        t[name]
        .where(COL("rank") >= -1)
        .select(
            *KEY,
            "rank",
            (_z(f"{m}_BYTES_READ") if m == "POSIX" else F.lit(0)).alias("rank_br"),
            (_z(f"{m}_BYTES_WRITTEN") if m == "POSIX" else F.lit(0)).alias("rank_bw"),
            (_z(f"{m}_F_META_TIME") if m == "POSIX" else F.lit(0.0)).alias("meta"),
            (_z(f"{m}_F_READ_TIME") + _z(f"{m}_F_WRITE_TIME") + _z(f"{m}_F_META_TIME")).alias("t"),
        )
        for name, m in (("posix", "POSIX"), ("stdio", "STDIO"))
    ]
    return (
        rows[0]
        .unionByName(rows[1])
        .groupBy(*KEY, "rank")
        .agg(*[F.sum(x).alias(x) for x in ("rank_br", "rank_bw", "meta", "t")])
    )


def _rank_aggs() -> list[Column]:
    own = COL("rank") >= 0
    sizes = {}
    for k in "rw":  # the ranks that read (wrote) bytes on their own files
        b = COL(f"rank_b{k}")
        moved = own & (b > 0)
        sizes |= {
            f"rs_{k}_n": F.count(F.when(moved, 1)),
            f"rs_{k}_max": F.max(F.when(moved, b)),
            f"rs_{k}_min": F.min(F.when(moved, b)),
            f"rs_{k}_avg": F.avg(F.when(moved, b)),
            f"rs_{k}": F.collect_list(F.when(moved, F.struct("rank", b.alias("b")))),
        }
    return _aliased(
        {
            "max_own": F.max(F.when(own, COL("meta"))),
            "n_own": F.count(F.when(own, 1)),
            "own": F.collect_list(F.when(own, F.struct("rank", "meta"))),
            "shared_meta": F.max(F.when(COL("rank") == -1, COL("meta"))),
            **sizes,
        }
    )


def _osts(lustre: DataFrame) -> DataFrame:
    """Stripes per (log, OST), one layout per (file, component): Darshan may repeat it on several ranks' records."""
    comps = lustre.dropDuplicates(["log_id", "record_id", "component"])
    return (
        comps.select(*KEY, F.explode("LUSTRE_OST_IDS").alias("ost"))
        .groupBy(*KEY, "ost")
        .agg(F.count("*").alias("ost_stripes"))
    )


def _ost_aggs() -> list[Column]:
    return [
        F.sum("ost_stripes").alias("ost_total"),
        F.count("ost_stripes").alias("ost_distinct"),
        F.max("ost").alias("ost_max"),
    ]


def _heatmap_ops(heatmap: DataFrame) -> DataFrame:
    """HEATMAP bins that moved bytes, as timed pseudo-ops (start and end of the bin, bytes summed
    over ranks and over POSIX, STDIO and DFS; MPI-IO's and DAOS's bytes reach those layers)."""
    h = heatmap.where(COL("module").isin("POSIX", "STDIO", "DFS")).select(
        *KEY,
        "bin_width_s",
        F.posexplode(F.arrays_zip("read_bytes", "write_bytes")).alias("bin", "b"),
    )
    h = (
        h.groupBy(*KEY, "bin")
        .agg(
            F.sum(_z("b.read_bytes") + _z("b.write_bytes")).alias("length"),
            F.max("bin_width_s").alias("w"),
        )
        .where(COL("length") > 0)
    )
    return h.select(
        *KEY,
        (COL("bin") * COL("w")).alias("start_s"),
        ((COL("bin") + 1) * COL("w")).alias("end_s"),
        "length",
    )


def _split_phases(ops: DataFrame, gap: float) -> DataFrame:
    """Timed rows (`start_s`, `end_s`, `length`) of each log put in time order (start, then end) and split where
    the start is more than `gap` after the largest end before it; phase: 1, 2, ... (the running sum of those
    splits, the first row's included)."""
    order = Window.partitionBy("log_id").orderBy("start_s", "end_s")
    prev_end = F.max("end_s").over(order.rowsBetween(Window.unboundedPreceding, -1))
    ops = ops.withColumn("new", (prev_end.isNull() | (COL("start_s") - prev_end > gap)).cast("int"))
    ops = ops.withColumn(
        "phase", F.sum("new").over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    return ops.groupBy(*KEY, "phase").agg(
        F.min("start_s").alias("t0"), F.max("end_s").alias("t1"), F.sum("length").alias("bytes")
    )


def traced_phases(io_ops: DataFrame, gap: float) -> DataFrame:
    """Each log's traced I/O phases (`log_id, job_month, phase, t0, t1, bytes`): its DXT/Recorder reads and writes
    in time order, split where the idle gap after everything before exceeds `gap` (io_phase_gap_s); t0 is a
    phase's first start, t1 its last end, bytes its ops' lengths summed (a null length counts 0). Logs without a
    timed read or write have no row. `log_phases` is the per-log twin ingest computes (its docstring: the
    rules on NaN, infinite and signed-zero times; Spark orders NaN above every number, in `>` too).

    An op ends no earlier than it starts (a null or earlier end counts as its start). Ops that start
    within one time bin narrower than the gap are always in one phase (the later one starts less than
    the gap after the earlier one's start, so after the running end), so the ops are first summed per
    (log, bin) (start, end, bytes), map-side and without a sort, and only those bins are put in time
    order: the phases are the same as ordering every op (one row per DXT segment), at a fraction of
    the cost (`python -m bench.transform_ab --stage tags`). The bins are half the gap wide: starts
    in one differ by at most half the gap, whatever the rounding of the division."""
    start = COL("start_s")
    ops = io_ops.where(COL("op").isin("read", "write") & start.isNotNull()).select(
        *KEY,
        "start_s",
        F.greatest(F.coalesce("end_s", "start_s"), start).alias("end_s"),
        _z("length").alias("length"),
    )
    # bins half the gap wide (rint: no overflow on a hostile start), so rounding cannot stretch one past it
    ops = (
        ops.groupBy(*KEY, (F.rint(start / F.lit(gap / 2)) if gap > 0 else start).alias("bin"))
        .agg(
            F.min("start_s").alias("start_s"),
            F.max("end_s").alias("end_s"),
            F.sum("length").alias("length"),
        )
        .drop("bin")
    )
    return _split_phases(ops, gap)


def _phases(t: dict[str, DataFrame], c, traced: DataFrame | None = None) -> DataFrame:
    """I/O phases per log (`*KEY, phase, source, t0, t1, bytes`): `traced` (default: `traced_phases` of
    io_ops; or bronze/phases, which ingest computed with `log_phases`), source "traced"; a log without a
    traced row has its HEATMAP bins that moved bytes instead, as ops (`_heatmap_ops`) in time order split the
    same way, source "HEATMAP".

    A log has either kind, never both, so each is ordered on its own: the same phases as ordering the union.
    `traced` is read once: the HEATMAP phases of a log with a traced row are dropped after the union (a window
    over the log's few phase rows), not by an anti-join against `traced`, which made Spark compute the traced
    phases of io_ops (a scan of every segment) twice."""
    gap = c.io_phase_gap_s
    if traced is None:
        traced = traced_phases(t["io_ops"], gap)
    # without traced ops (no DXT, the production default), Darshan 3.4+'s HEATMAP bins time the I/O
    heat = _split_phases(_heatmap_ops(t["heatmap"]), gap)
    cols = [*KEY, "phase", "source", "t0", "t1", "bytes"]
    both = (
        traced.withColumn("source", F.lit("traced"))
        .select(*cols)
        .unionByName(heat.withColumn("source", F.lit("HEATMAP")).select(*cols))
    )
    is_traced = COL("source") == "traced"
    has_traced = F.max(is_traced.cast("int")).over(Window.partitionBy(*KEY))
    return (
        both.withColumn("_traced", has_traced)
        .where(is_traced | (COL("_traced") == 0))
        .select(*cols)
    )


# the rows of `log_phases`, in this order (the caller adds log_id and job_month)
PHASE_ARROW_FIELDS = (("phase", "int64"), ("t0", "float64"), ("t1", "float64"), ("bytes", "int64"))


def _first_zero_sign(x: np.ndarray, starts: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`out` (a min or max per group of `x`, groups starting at `starts`) where it is zero takes the sign of the
    group's first zero: Spark's min and max keep the value they hold on a tie, and -0.0 ties 0.0."""
    zero = out == 0
    if zero.any():
        at = np.flatnonzero(x == 0)
        group = np.searchsorted(starts, at, side="right") - 1
        g, first = np.unique(
            group, return_index=True
        )  # at is ascending: the first zero of each group
        out = out.copy()
        hit = zero[g]
        out[g[hit]] = x[at[first[hit]]]
    return out


def log_phases(io_ops, gap: float) -> pa.Table:
    """One log's traced I/O phases from its decoded `io_ops` (Arrow): the per-log twin of `traced_phases`,
    computed at ingest, whose rows (`phase, t0, t1, bytes`, in phase order; no log_id, job_month) it gives
    bit for bit; none when the log (or None) has no timed read or write. Spark's rules, kept in numpy:

    - ops: `op` read or write with a non-null `start_s` (a NaN start is not null: it stays); end =
      greatest(coalesce(end_s, start_s), start_s), where NaN is greater than every number (either NaN gives
      NaN); a null length counts 0.
    - bins: rint(start / (gap / 2)) (the start itself when gap <= 0); all NaN bins are one, -0.0 is 0.0.
      Per bin and then per phase: min start (NaN above every number: NaN only if all are), max end (NaN if
      any is), summed length. Of -0.0 and 0.0, min and max keep the first seen: in a bin, the first in the
      table's order (Spark's row order: the same on a log's rows read in order); in a phase, in time order.
    - bins in (start, end) order, NaN after +inf (two bins never share a start: the bins are disjoint runs
      of starts, NaN's one bin); a bin opens a phase when it is the first or its start minus the largest end
      before it (NaN if any is; inf - inf is NaN) is over `gap`. Spark compares NaN as above every number
      too: a NaN difference is over any gap, so a NaN start or running end opens a phase at every bin after
      it; phase: 1, 2, ...

    Vectorised (lexsort, ufunc reduceat and accumulate): a DXT log can hold millions of ops. A bytes sum
    past int64 wraps here where ANSI Spark fails."""
    return phases_of(io_ops, gap)[0]


def phases_of(io_ops, gap: float, log=None) -> tuple:
    """`log_phases` of many logs at once: `io_ops` holds their ops (a log's rows in its order, the logs
    in any order), `log` (numpy, one per row; None: one log) says whose each row is. Returns (the
    rows, the `log` value of each row). The log is the outermost key of every grouping and ordering,
    and the running end restarts at each log's first bin, so a log's rows are those `log_phases`
    gives on its ops alone. Ingest phases a staged file's logs in one call (a log at a time, numpy
    and Arrow's per-call overhead would dominate)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = pa.schema([pa.field(n, getattr(pa, t)()) for n, t in PHASE_ARROW_FIELDS])
    none = (schema.empty_table(), np.zeros(0, np.int64))
    if io_ops is None or io_ops.num_rows == 0:
        return none
    keep = pc.fill_null(
        pc.and_kleene(
            pc.is_in(io_ops["op"], value_set=pa.array(["read", "write"])),
            pc.is_valid(io_ops["start_s"]),
        ),
        False,
    )
    ops = io_ops.select(["start_s", "end_s", "length"]).filter(keep)
    if ops.num_rows == 0:
        return none
    log = (
        np.zeros(ops.num_rows, np.int64)
        if log is None
        else np.asarray(log, np.int64)[keep.to_numpy(zero_copy_only=False)]
    )

    def floats(col):  # nulls as NaN: read validity first where it matters
        return np.asarray(col.to_numpy(), dtype=np.float64)

    start = floats(ops["start_s"])
    end_valid = np.asarray(pc.is_valid(ops["end_s"]).to_numpy(), dtype=bool)
    end = np.where(end_valid, floats(ops["end_s"]), start)  # coalesce(end_s, start_s)
    end = np.where(
        (np.isnan(start) & ~np.isnan(end)) | (start > end), start, end
    )  # greatest(end, start)
    length = np.asarray(pc.fill_null(ops["length"], 0).to_numpy(), dtype=np.int64)

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        bins = (np.rint(start / (gap / 2)) if gap > 0 else start) + 0.0  # -0.0 + 0.0 is 0.0
        by_bin = np.lexsort(
            (bins, log)
        )  # ops of a bin together, in their order (lexsort is stable); NaN last
        sb, lb = bins[by_bin], log[by_bin]
        cuts = np.flatnonzero(
            np.r_[
                True,
                (lb[1:] != lb[:-1])
                | ((sb[1:] != sb[:-1]) & ~(np.isnan(sb[1:]) & np.isnan(sb[:-1]))),
            ]
        )
        s, e = start[by_bin], end[by_bin]
        b_start = _first_zero_sign(s, cuts, np.fmin.reduceat(s, cuts))
        b_end = _first_zero_sign(e, cuts, np.maximum.reduceat(e, cuts))
        b_len = np.add.reduceat(length[by_bin], cuts)
        b_log = lb[cuts]

        order = np.lexsort((b_end, b_start, b_log))  # NaN sorts last, as Spark's
        b_start, b_end, b_len, b_log = b_start[order], b_end[order], b_len[order], b_log[order]
        first = np.r_[True, b_log[1:] != b_log[:-1]]  # a log's first bin
        prev_end = _running_max(b_end, np.flatnonzero(first))[:-1]  # NaN once any is
        idle = b_start[1:] - prev_end
        new = np.r_[
            True, first[1:] | (idle > gap) | (np.isnan(idle) & ~np.isnan(gap))
        ]  # NaN is over every number
        cuts = np.flatnonzero(new)
        t0 = _first_zero_sign(b_start, cuts, np.fmin.reduceat(b_start, cuts))
        t1 = _first_zero_sign(b_end, cuts, np.maximum.reduceat(b_end, cuts))
        nbytes = np.add.reduceat(b_len, cuts)
        p_log = b_log[cuts]
        k = np.arange(len(cuts), dtype=np.int64)
        opens = np.maximum.accumulate(
            np.where(np.r_[True, p_log[1:] != p_log[:-1]], k, 0)
        )  # a log's first phase
    return pa.table(
        [pa.array(k - opens + 1), pa.array(t0), pa.array(t1), pa.array(nbytes)], schema=schema
    ), p_log


def _running_max(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The running maximum of `x` restarting at each of `starts` (ascending, the first 0); NaN from the first NaN
    of a run on (np.maximum's)."""
    if len(starts) == 1:
        return np.maximum.accumulate(x)
    out = np.empty_like(x)
    for a, b in zip(starts, np.r_[starts[1:], len(x)]):
        np.maximum.accumulate(x[a:b], out=out[a:b])
    return out


def _phase_aggs() -> list[Column]:
    return [
        F.count("source").alias("n_phases"),
        F.first("source", ignorenulls=True).alias("phase_source"),
    ]


def _job_aggs() -> list[Column]:
    return [
        *[F.max(x).alias(x) for x in ("nprocs", "io_time_s", "rank_time_ratio", "meta_time_share")],
        (F.count("has_job") > 0).alias("has_job"),
    ]


# --- the rules: column expressions on the one row per log -------------------------------------------------


class Rule(NamedTuple):
    fires: Column
    value: Column
    severity: str | Column
    metric: str | Column
    setting: str | Column
    threshold: float | Column
    message: Column
    ev_min: Column | None = None  # evidence keeps the candidates whose `need` is above this
    evidence: Column | None = (
        None  # candidates from the row per log (ranks), beside those of the rows it sums
    )


def _small(c, rw: str, shared: bool = False) -> Rule:
    total, small = ("reads", "small_r") if rw == "read" else ("writes", "small_w")
    p = "sh_" if shared else ""
    n, s = COL(p + total), COL(p + small)
    value = F.try_divide(s, n)
    on, kind = (" on shared files", "shared_") if shared else ("", "")
    msg = F.format_string(
        f"%d of %d POSIX {rw}s{on} (%.1f%%) are smaller than {human_bytes(c.small_bytes)}",
        s,
        n,
        _pct(value),
    )
    # Drishti's detail: the files holding more than half the threshold's share of the requests of those with small ones
    return Rule(
        (s > c.small_requests_absolute) & (value > c.small_requests),
        value,
        "high",
        f"small_{kind}{rw}_share",
        "small_requests",
        c.small_requests,
        msg,
        COL(f"ev_{p}{total}") * c.small_requests / 2,
    )


def _misaligned(c, kind: str) -> Rule:
    col = COL("file_na" if kind == "file" else "mem_na")
    ops = COL("reads") + COL("writes")
    value = F.try_divide(col, ops)
    what = (
        "file offsets not aligned to the file system's %d-byte boundary"
        if kind == "file"
        else "memory buffers not aligned"
    )
    args = [col, ops, _pct(value)] + ([_z("file_alignment")] if kind == "file" else [])
    msg = F.format_string(f"%d of %d POSIX requests (%.1f%%) have {what}", *args)
    return Rule(
        (ops > 0) & (value > c.misaligned_requests),
        value,
        "high",
        f"{kind}_not_aligned_share",
        "misaligned_requests",
        c.misaligned_requests,
        msg,
    )


def _random(c, rw: str) -> Rule:
    total, seq = ("reads", "seq_r") if rw == "read" else ("writes", "seq_w")
    rnd = COL(total) - COL(seq)
    value = F.try_divide(rnd, COL(total))
    msg = F.format_string(
        f"%d of %d POSIX {rw}s (%.1f%%) are random (neither consecutive nor sequential)",
        rnd,
        COL(total),
        _pct(value),
    )
    return Rule(
        (rnd > c.random_operations_absolute) & (value > c.random_operations),
        value,
        "high",
        f"random_{rw}_share",
        "random_operations",
        c.random_operations,
        msg,
    )


def _shared_file_imbalance(c, of: str) -> Rule:
    """Drishti's P18 (`of` = "bytes") and P19 ("time"): per shared record, |slowest - fastest rank| over its total."""
    value, n = COL(f"imb_{of}"), COL(f"n_imb_{of}")
    tag, metric = (
        ("shared_file_imbalance", "shared_file_byte_imbalance")
        if of == "bytes"
        else ("shared_file_time_imbalance", "shared_file_time_imbalance")
    )
    what = (
        "bytes differ by %.1f%% of the file's bytes"
        if of == "bytes"
        else "I/O times differ by %.1f%% of the file's I/O time (all ranks' read, write and metadata time)"
    )
    msg = F.format_string(
        f"%d shared file(s) with rank load imbalance: on the worst, the slowest and fastest "
        f"ranks' {what}",
        n,
        _pct(value),
    )
    return Rule(n > 0, value, "high", metric, "imbalance_stragglers", c.imbalance_stragglers, msg)


def _rank_size_imbalance(c, rw: str) -> Rule:
    """Drishti's P22 (`rw` = "read") and P21 ("write"): (max - min) / max of the bytes each rank read
    (wrote) on its own files, over the ranks that read (wrote) any; evidence: the ranks furthest from
    the mean. A job whose ranks read (write) nothing on their own files never fires."""
    k = rw[0]
    mx, mn, n = COL(f"rs_{k}_max"), COL(f"rs_{k}_min"), COL(f"rs_{k}_n")
    value = F.try_divide(mx - mn, mx)
    done = "read" if rw == "read" else "written"
    msg = F.format_string(
        f"POSIX bytes {done} by ranks on their own files range from %s to %s over %d ranks "
        "((max - min) / max = %.1f%%)",
        _bytes_str(mn),
        _bytes_str(mx),
        n,
        _pct(value),
    )
    tag = f"rank_{rw}_imbalance"
    return Rule(
        (n > 1) & (value > c.imbalance_size),
        value,
        "high",
        f"rank_{rw}_byte_imbalance",
        "imbalance_size",
        c.imbalance_size,
        msg,
        evidence=F.transform(
            COL(f"rs_{k}"),
            lambda r: _cand(tag, F.abs(r["b"] - COL(f"rs_{k}_avg")), _rank(r["rank"])),
        ),
    )


def _stragglers(c) -> Rule:
    value = COL("rank_time_ratio")
    msg = F.format_string(
        "the slowest rank spends %.1f times the fastest rank's I/O time (%.1f s of I/O)",
        value,
        COL("io_time_s"),
    )
    return Rule(
        (COL("io_time_s") >= c.min_io_time_s) & (value > c.straggler_time_ratio),
        value,
        "warn",
        "rank_time_ratio",
        "straggler_time_ratio",
        c.straggler_time_ratio,
        msg,
    )


def _rank0_heavy(c) -> Rule:
    b0, total = COL("rk_b0"), COL("rk_b")
    value = F.try_divide(b0, total)
    msg = F.format_string(
        "rank 0 moves %.1f%% of the job's bytes (%s of %s, %d files) among %d ranks",
        _pct(value),
        _bytes_str(b0),
        _bytes_str(total),
        COL("rk_files"),
        COL("nprocs"),
    )
    return Rule(
        (COL("nprocs") > 1) & (total > 0) & (value > c.rank0_bytes_share),
        value,
        "warn",
        "rank0_bytes_share",
        "rank0_bytes_share",
        c.rank0_bytes_share,
        msg,
    )


def _no_collective_shared(c, rw: str) -> Rule:
    """Drishti's M02 (`rw` = "read") and M03 ("write"): the independent share of the MPI-IO reads
    (writes) on shared files; a job with no such read (write) has no share and never fires."""
    indep, coll = COL(f"mpi_indep_{rw[0]}"), COL(f"mpi_coll_{rw[0]}")
    ops = indep + coll
    value = F.try_divide(indep, ops)
    msg = F.format_string(
        f"%d of %d MPI-IO {rw}s on shared files (%.1f%%) are independent, not collective",
        indep,
        ops,
        _pct(value),
    )
    return Rule(
        (indep > c.collective_operations_absolute) & (value > c.collective_operations),
        value,
        "high",
        f"independent_{rw}_share",
        "collective_operations",
        c.collective_operations,
        msg,
    )


def _shared_avg() -> Column:
    """A rank's share of the shared records' metadata time: an even split, Darshan keeps no more."""
    return F.try_divide(_z("shared_meta"), F.greatest(_z("nprocs"), F.lit(1)))


def _meta_ranks_over(c) -> Column:
    """The own-record ranks whose metadata time, with their share of the shared records', exceeds metadata_time_rank."""
    avg = _shared_avg()
    return F.filter(
        F.when(COL("n_own") > 0, COL("own")), lambda r: r["meta"] + avg > c.metadata_time_rank
    )


def _metadata_heavy(c) -> Rule:
    avg = _shared_avg()
    max_rank = _z("max_own") + avg
    n_over = F.when(avg > c.metadata_time_rank, COL("nprocs")).otherwise(
        F.size(_meta_ranks_over(c))
    )
    a = max_rank > c.metadata_time_rank
    share = (COL("io_time_s") >= c.min_io_time_s) & (COL("meta_time_share") > c.metadata_time_share)
    value = F.when(a, max_rank).otherwise(COL("meta_time_share"))
    msg = F.when(
        a,
        F.format_string(
            f"%d rank(s) spend over {c.metadata_time_rank:g} s in POSIX metadata "
            "operations (slowest: %.1f s)",
            n_over,
            value,
        ),
    ).otherwise(
        F.format_string(
            "metadata operations take %.1f%% of the job's I/O time (%.1f s of I/O)",
            _pct(value),
            COL("io_time_s"),
        )
    )
    return Rule(
        COL("has_job") & (a | share),
        value,
        F.when(a, "high").otherwise("warn"),
        F.when(a, "max_rank_meta_time_s").otherwise("meta_time_share"),
        F.when(a, "metadata_time_rank").otherwise("metadata_time_share"),
        F.when(a, F.lit(float(c.metadata_time_rank))).otherwise(
            F.lit(float(c.metadata_time_share))
        ),
        msg,
        # the ranks over the per-rank threshold first (prio 1), then the files by metadata time
        evidence=F.transform(
            _meta_ranks_over(c), lambda r: _cand("metadata_heavy", r["meta"], _rank(r["rank"]), 1)
        ),
    )


def _stdio_heavy(c) -> Rule:
    stdio, both = _z("stdio_b"), _z("stdio_b") + _z(COL("br") + COL("bw"))
    value = F.try_divide(stdio, both)
    msg = F.format_string(
        "%.1f%% of the job's bytes (%s) go through STDIO, a low-performance interface",
        _pct(value),
        _bytes_str(stdio),
    )
    return Rule(
        (both > 0) & (value > c.interface_stdio),
        value,
        "high",
        "stdio_bytes_share",
        "interface_stdio",
        c.interface_stdio,
        msg,
    )


def _single_stripe_shared(c) -> Rule:
    value = COL("ss_max")
    msg = F.format_string(
        f"%d shared file(s) moving over {human_bytes(c.single_stripe_min_bytes)} sit on a single "
        "Lustre stripe (largest: %s)",
        COL("ss_n"),
        _bytes_str(value),
    )
    return Rule(
        COL("ss_n") > 0,
        value,
        "warn",
        "single_stripe_shared_file_bytes",
        "single_stripe_min_bytes",
        c.single_stripe_min_bytes,
        msg,
    )


def _few_osts(c) -> Rule:
    fs_osts = F.lit(c.ost_count) if c.ost_count > 0 else COL("ost_max") + 1
    could = F.least(COL("ost_total"), fs_osts)
    value = F.try_divide(COL("ost_distinct"), could)
    msg = F.format_string(
        "the job's %d Lustre stripes sit on %d distinct OSTs of the %d they could spread over",
        COL("ost_total"),
        COL("ost_distinct"),
        could,
    )
    return Rule(
        (COL("ost_distinct") > 0) & (value < c.ost_coverage),
        value,
        "warn",
        "ost_coverage",
        "ost_coverage",
        c.ost_coverage,
        msg,
    )


def _many_io_phases(c) -> Rule:
    n = COL("n_phases")
    msg = F.format_string(
        f"%s I/O comes in %d phases separated by idle gaps over {c.io_phase_gap_s:g} s",
        COL("phase_source"),
        n,
    )
    return Rule((n > 0) & (n > c.io_phases), n, "warn", "io_phases", "io_phases", c.io_phases, msg)


def _read_after_write(c) -> Rule:
    value = F.try_divide(COL("ff_raw_b"), COL("ff_b"))
    msg = F.format_string(
        "%d file(s) are read after being written, %.1f%% of the job's bytes",
        COL("ff_raw"),
        _pct(value),
    )
    return Rule(
        (COL("ff_b") > 0) & (COL("ff_raw") > 0) & (value > c.read_after_write_share),
        value,
        "info",
        "raw_bytes_share",
        "read_after_write_share",
        c.read_after_write_share,
        msg,
    )


def _redundant(c, rw: str) -> Rule:
    """Drishti's P09 (`rw` = "read") and P10 ("write") as their messages say: files whose bytes read
    (written) exceed their highest offset + 1 by more than the ratio, when the bytes moved again over
    all of them exceed redundant_min_bytes and redundant_min_share of the job's POSIX bytes (read
    and written): a few bytes of an index rewritten in a large job are no bottleneck."""
    value, n, extra = COL(f"red_{rw}_max"), COL(f"red_{rw}_n"), COL(f"red_{rw}_extra")
    share = F.try_divide(extra, COL("br") + COL("bw"))
    done = "read" if rw == "read" else "written"
    msg = F.format_string(
        f"%d file(s) are {done} beyond their highest offset {done} (%s {done} again, %.1f%% of "
        "the job's bytes; worst %.1f times)",
        n,
        _bytes_str(extra),
        _pct(share),
        value,
    )
    setting = f"redundant_{rw}_ratio"
    fires = (n > 0) & (extra > c.redundant_min_bytes) & (share > c.redundant_min_share)
    return Rule(fires, value, "warn", f"{rw}_amplification", setting, getattr(c, setting), msg)


def _blocking_mpiio(c, rw: str) -> Rule:
    value = COL(f"block_{rw[0]}")
    msg = F.format_string(
        f"all %d MPI-IO {rw}s are blocking: none is non-blocking (MPI_File_i{rw}*) or "
        f"split-collective, so no {rw} overlaps computation",
        value,
    )
    return Rule(
        (COL(f"nb_{rw[0]}") == 0) & (value > c.blocking_operations_absolute),
        value,
        "warn",
        f"blocking_mpiio_{rw}s",
        "blocking_operations_absolute",
        c.blocking_operations_absolute,
        msg,
    )


def _single_reader_shared(c) -> Rule:
    """The keynote's "all ranks open, one rank reads": a read-only shared record (Darshan keeps one for a
    file every rank opened) whose bytes one rank moved (see `_single_reader`)."""
    value, n = COL("sr_share"), COL("n_sr_share")
    msg = F.format_string(
        "%d read-only file(s) opened by all %d ranks are read by one rank (largest: %s; one rank "
        "moved %.1f%% of the bytes)",
        n,
        COL("nprocs"),
        _bytes_str(COL("sr_b")),
        _pct(value),
    )
    return Rule(
        n > 0,
        value,
        "warn",
        "single_reader_share",
        "single_reader_share",
        c.single_reader_share,
        msg,
    )


RULES = {  # tag -> rule (conf's `tags:` -> Rule on the row per log)
    "small_reads": lambda c: _small(c, "read"),
    "small_writes": lambda c: _small(c, "write"),
    "misaligned_file": lambda c: _misaligned(c, "file"),
    "misaligned_memory": lambda c: _misaligned(c, "memory"),
    "random_reads": lambda c: _random(c, "read"),
    "random_writes": lambda c: _random(c, "write"),
    "shared_file_imbalance": lambda c: _shared_file_imbalance(c, "bytes"),
    "stragglers": _stragglers,
    "rank0_heavy": _rank0_heavy,
    "metadata_heavy": _metadata_heavy,
    "stdio_heavy": _stdio_heavy,
    "single_stripe_shared": _single_stripe_shared,
    "few_osts": _few_osts,
    "many_io_phases": _many_io_phases,
    "read_after_write": _read_after_write,
    "redundant_reads": lambda c: _redundant(c, "read"),
    "redundant_writes": lambda c: _redundant(c, "write"),
    "small_shared_reads": lambda c: _small(c, "read", shared=True),
    "small_shared_writes": lambda c: _small(c, "write", shared=True),
    "shared_file_time_imbalance": lambda c: _shared_file_imbalance(c, "time"),
    "blocking_mpiio_reads": lambda c: _blocking_mpiio(c, "read"),
    "blocking_mpiio_writes": lambda c: _blocking_mpiio(c, "write"),
    "single_reader_shared": _single_reader_shared,
    "rank_read_imbalance": lambda c: _rank_size_imbalance(c, "read"),
    "rank_write_imbalance": lambda c: _rank_size_imbalance(c, "write"),
    "no_collective_shared_reads": lambda c: _no_collective_shared(c, "read"),
    "no_collective_shared_writes": lambda c: _no_collective_shared(c, "write"),
}
RANK_TAGS = {
    "rank_read_imbalance",
    "rank_write_imbalance",
    "stragglers",
    "metadata_heavy",
}  # the rules that need the per-rank rows

# --- evidence: candidates (prio, weight, item, tag, need) of every source, collected on the row per log ------

_CAND = "struct<prio:int,weight:double,item:string,tag:string,need:double>"


def _no_cands() -> Column:
    return F.array().cast(f"array<{_CAND}>")


def _cand(
    tag: str, weight: Column, item: Column | None = None, prio: int = 0, need: Column | None = None
) -> Column:
    """One evidence candidate; without `item`, the record's file (its name in bronze files, else `record <id>`)."""
    if item is None:
        item = F.coalesce(COL("name"), F.concat(F.lit("record "), COL("record_id").cast("string")))
    return F.struct(
        F.lit(prio).alias("prio"),
        F.coalesce(weight.cast("double"), F.lit(0.0)).alias("weight"),
        item.cast("string").alias("item"),
        F.lit(tag).alias("tag"),
        (F.lit(None) if need is None else need).cast("double").alias("need"),
    )


def _record_cands(c, tags: set[str]) -> Column:
    """A record row's candidates for `tags`: the file, weighted by what makes it count (a record stands for its
    rows with its largest weight: the ranking keeps an item's first, largest, occurrence)."""
    when, sh = F.when, COL("shared")
    out = {}
    for (rw, b, mx), k in zip(_REDUNDANT, "rw"):
        small, rnd = COL(f"small_{k}"), COL(f"{rw}s") - COL(f"seq_{k}")
        out |= {
            f"small_{rw}s": when(small > 0, _cand(f"small_{rw}s", small, need=small)),
            f"small_shared_{rw}s": when(
                sh & (small > 0), _cand(f"small_shared_{rw}s", small, need=small)
            ),
            f"random_{rw}s": when(rnd > 0, _cand(f"random_{rw}s", rnd)),
            f"redundant_{rw}s": when(
                COL(f"red_{rw}"), _cand(f"redundant_{rw}s", COL(b) - COL(mx) - 1)
            ),
            f"blocking_mpiio_{rw}s": when(
                COL(f"block_{k}") > 0, _cand(f"blocking_mpiio_{rw}s", COL(f"block_{k}"))
            ),
            f"no_collective_shared_{rw}s": when(
                COL("mpi_shared") & (COL(f"indep_{k}") > 0),
                _cand(f"no_collective_shared_{rw}s", COL(f"indep_{k}")),
            ),
        }
    for tag, col in (
        ("misaligned_file", "file_na"),
        ("misaligned_memory", "mem_na"),
        ("rank0_heavy", "rk_b0_max"),
        ("stdio_heavy", "stdio_b_max"),
        ("metadata_heavy", "ff_meta"),
    ):
        out[tag] = when(COL(col) > 0, _cand(tag, COL(col)))
    for tag, col in (
        ("shared_file_imbalance", "imb_bytes"),
        ("shared_file_time_imbalance", "imb_time"),
        ("single_reader_shared", "sr_b"),
        ("single_stripe_shared", "ss_b"),
    ):
        out[tag] = when(COL(col).isNotNull(), _cand(tag, COL(col)))
    out["read_after_write"] = when(COL("ff_raw") > 0, _cand("read_after_write", COL("ff_b")))
    picked = [col for tag, col in out.items() if tag in tags]
    cands = (
        F.filter(F.array(*picked), lambda x: x.isNotNull()).cast(f"array<{_CAND}>")
        if picked
        else _no_cands()
    )
    if "stragglers" in tags:  # the slowest rank of each shared record
        cands = F.concat(
            cands, F.transform("slow", lambda s: _cand("stragglers", s["t"], _rank(s["rank"])))
        )
    return cands.cast(f"array<{_CAND}>")


def _evidence(n: int) -> Column:
    """A tag row's top `n` items among its log's candidates (`cands`), most significant first (prio, weight,
    then item); those of the small-request rules need more than the row's `ev_min`."""

    def keep(x):
        return (
            (x["tag"] == COL("tag"))
            & x["item"].isNotNull()
            & (COL("ev_min").isNull() | (x["need"] > COL("ev_min")))
        )

    ranked = F.sort_array(F.filter("cands", keep), asc=False)
    return F.slice(F.array_distinct(F.transform(ranked, lambda x: x["item"])), 1, n)


def _tag_row(tag: str, r: Rule) -> Column:
    return F.when(
        r.fires,
        F.struct(
            F.lit(tag).alias("tag"),
            _lit(r.severity).alias("severity"),
            _lit(r.metric).alias("metric"),
            r.value.cast("double").alias("value"),
            F.concat(F.lit("tags."), _lit(r.setting)).alias("threshold_name"),
            _lit(r.threshold).cast("double").alias("threshold"),
            r.message.alias("message"),
            (F.lit(None) if r.ev_min is None else r.ev_min).cast("double").alias("ev_min"),
        ),
    )


_TAG = (
    "struct<tag:string,severity:string,metric:string,value:double,threshold_name:string,threshold:double,"
    "message:string,ev_min:double>"
)


def _fired(per_log: DataFrame, rules: dict[str, Rule], n: int) -> DataFrame:
    """Every rule on the row per log: the rows of the tags that fire (or one `no_issue` row for a job none fires
    on), then each one's evidence from the log's candidates."""
    fired = F.filter(
        F.array(*[_tag_row(tag, r) for tag, r in rules.items()]), lambda x: x.isNotNull()
    )
    none = F.struct(
        F.lit(NO_ISSUE).alias("tag"),
        F.lit("info").alias("severity"),
        F.lit("tags_fired").alias("metric"),
        F.lit(0.0).alias("value"),
        F.lit(None).cast("string").alias("threshold_name"),
        F.lit(None).cast("double").alias("threshold"),
        F.lit("no bottleneck rule fired").alias("message"),
        F.lit(None).cast("double").alias("ev_min"),
    )
    rows = (
        F.when((F.size(fired) == 0) & COL("has_job"), F.array(none))
        .otherwise(fired)
        .cast(f"array<{_TAG}>")
    )
    cands = F.concat(
        COL("cands"),
        *[F.coalesce(r.evidence, _no_cands()) for r in rules.values() if r.evidence is not None],
    )
    return (
        per_log.select(*KEY, cands.alias("cands"), F.explode(rows).alias("t"))
        .select(*KEY, "cands", "t.*")
        .withColumn("evidence", _evidence(n))
        .select(*OUT)
    )


def transform(
    tables: dict[str, DataFrame],
    file_features: DataFrame,
    job_features: DataFrame,
    tconf,
    only: tuple[str, ...] | None = None,
    traced: DataFrame | None = None,
) -> DataFrame:
    """bronze tables + silver file/job features -> silver/bottleneck_tags rows (one per log and tag).

    `only` evaluates just those tags' rules (a job none of them fires on gets `no_issue`). `traced`: the
    traced phases (`_phases`), by default `traced_phases` of `tables["io_ops"]`."""
    c = tconf
    rules = {tag: rule(c) for tag, rule in RULES.items() if only is None or tag in only}
    tags = set(rules)
    jobs = job_features.select(*KEY, "nprocs", "io_time_s", "rank_time_ratio", "meta_time_share")
    recs = _records(tables, file_features, jobs, c).withColumn("cands", _record_cands(c, tags))
    feed = [(recs, _record_aggs(c))]
    if RANK_TAGS & tags:
        ranks = _ranks(tables)
        if "stragglers" in tags:
            ranks = ranks.withColumn(
                "cands",
                F.when(
                    COL("rank") >= 0, F.array(_cand("stragglers", COL("t"), _rank(COL("rank"))))
                ).cast(f"array<{_CAND}>"),
            )
        feed.append((ranks, _rank_aggs()))
    if "few_osts" in tags:
        osts = _osts(tables["lustre"]).withColumn(
            "cands",
            F.array(
                _cand(
                    "few_osts",
                    COL("ost_stripes"),
                    F.concat(F.lit("OST "), COL("ost").cast("string")),
                )
            ).cast(f"array<{_CAND}>"),
        )
        feed.append((osts, _ost_aggs()))
    if "many_io_phases" in tags:
        phases = _phases(tables, c, traced).withColumn(
            "cands",
            F.array(
                _cand(
                    "many_io_phases",
                    COL("bytes"),
                    F.format_string("phase %d: %.2f-%.2f s", "phase", "t0", "t1"),
                )
            ).cast(f"array<{_CAND}>"),
        )
        feed.append((phases, _phase_aggs()))
    feed.append((jobs.withColumn("has_job", F.lit(1)), _job_aggs()))
    # one row per log: every source's rows in one union, one aggregation; the candidates collected alongside
    per_log = (
        _union([df for df, _ in feed])
        .groupBy(*KEY)
        .agg(
            *[a for _, aggs in feed for a in aggs],
            F.flatten(F.collect_list("cands")).alias("cands"),
        )
    )
    return _fired(per_log, rules, c.evidence_max)
