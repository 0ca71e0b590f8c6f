"""Darshan's derived metrics per (log, module), as darshan-util computes them for pydarshan.

Reads the bronze module tables that darshan-util can accumulate (bronze/posix, mpiio, stdio,
dfs, daos: the modules with a `log_record_metrics` function) and bronze/jobs (`nprocs`);
writes nothing: `derived_metrics` returns a DataFrame, registered as the SQL view
`derived_metrics` by apps/views.py. One row per (log_id, module) with records.

The definitions are darshan-util 3.5.0's (darshan-hpc/darshan), the library pydarshan's
`darshan.backend.cffi_backend.accumulate_records` calls and whose results pydarshan's job
summary prints (`darshan.lib.accum.log_module_overview_table`, `log_file_count_summary_table`):

- Per record, `darshan_log_record_metrics_<module>` (darshan-util/darshan-<module>-logutils.c):
  `r_bytes` / `w_bytes` = `<M>_BYTES_READ` / `<M>_BYTES_WRITTEN`; `max_offset` =
  max(`<M>_MAX_BYTE_READ`, `<M>_MAX_BYTE_WRITTEN`) for POSIX and STDIO, -1 ("not reported") for
  MPI-IO, DFS and DAOS; a shared record (rank -1, reduced over all ranks) has `nprocs` -1 and
  `io_total_time` = `<M>_F_SLOWEST_RANK_TIME` (no meta / rw split); any other record has `nprocs` 1,
  `md_only_time` = `<M>_F_META_TIME`, `rw_only_time` = `<M>_F_READ_TIME + <M>_F_WRITE_TIME` and
  `io_total_time` their sum.
- Over the module's records, `darshan_accumulator_inject` and `darshan_accumulator_emit`
  (darshan-util/darshan-logutils-accumulator.c): `total_bytes` = sum of r_bytes + w_bytes;
  `shared_io_total_time_by_slowest` = sum of io_total_time over the shared records (each already
  its slowest rank's time); per rank >= 0 the io / rw / md times are summed, and the slowest rank
  is the one with the largest io total (the lowest such rank on a tie, none if every total is 0:
  then the `unique_*` times are 0 and `unique_io_slowest_rank` 0);
  `agg_time_by_slowest` = `unique_io_total_time_by_slowest + shared_io_total_time_by_slowest`;
  `agg_perf_by_slowest` = total_bytes / 2**20 / agg_time_by_slowest in MiB/s (0 when the time
  is 0, as darshan-util leaves it).
- Per file (record id): r_bytes and w_bytes summed over its records; `max_offset` the largest of
  its records' (at least 0), or -1 when the module does not report it; `nprocs` -1 when a
  shared record names it, else its number of records.
- Category counters (`CATEGORY_INC`, `enum darshan_file_category`), each over the files of the
  category: `all` (every file), `read_only` (read bytes > 0, no written byte), `write_only`,
  `read_write` (both > 0; a file with neither is in `all` only), `unique` (nprocs 1), `shared`
  (nprocs -1) and `partially_shared` (any other). For each: `<cat>_count`,
  `<cat>_total_read_volume_bytes`, `<cat>_total_write_volume_bytes`,
  `<cat>_max_read_volume_bytes`, `<cat>_max_write_volume_bytes` (largest per file, at least 0),
  `<cat>_total_max_offset_bytes` (sum of the files' max offsets), `<cat>_max_offset_bytes`
  (largest), both -1 when the module reports no offsets, and `<cat>_nprocs` (sum of the files'
  nprocs, -1 when a file is shared or the sum reaches the job's nprocs).
- The sizes pydarshan's file-count table prints (`darshan.lib.accum.log_file_count_summary_table`,
  "a formula based on discussion with Phil Carns"): `<cat>_max_size_bytes` = max_offset_bytes + 1,
  `<cat>_avg_size_bytes` = (total_max_offset_bytes + count) / count; null when the category is
  empty or the module reports no offsets (pydarshan prints "0" for both).

darshan-util accumulates in record order; two orders it depends on are not modelled: a file with
both a shared record and per-rank records (Darshan writes one or the other) and the order of
floating-point additions (sums may differ from darshan-util's in the last bits).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# bronze table -> (Darshan module name, counter prefix, reports max byte offsets)
MODULES: dict[str, tuple[str, str, bool]] = {
    "posix": ("POSIX", "POSIX", True),
    "mpiio": ("MPI-IO", "MPIIO", False),
    "stdio": ("STDIO", "STDIO", True),
    "dfs": ("DFS", "DFS", False),
    "daos": ("DAOS", "DAOS", False),
}

# enum darshan_file_category, in its order: name -> which files (r, w: bytes; n: nprocs)
CATEGORIES: dict[str, object] = {
    "all": lambda r, w, n: F.lit(True),
    "read_only": lambda r, w, n: (r > 0) & (w == 0),
    "write_only": lambda r, w, n: (w > 0) & (r == 0),
    "read_write": lambda r, w, n: (r > 0) & (w > 0),
    "unique": lambda r, w, n: n == 1,
    "shared": lambda r, w, n: n == -1,
    "partially_shared": lambda r, w, n: (n != 1) & (n != -1),
}
CATEGORY_FIELDS = (
    "count",
    "total_read_volume_bytes",
    "total_write_volume_bytes",
    "max_read_volume_bytes",
    "max_write_volume_bytes",
    "total_max_offset_bytes",
    "max_offset_bytes",
    "nprocs",
    "avg_size_bytes",
    "max_size_bytes",
)
METRICS = (
    "total_bytes",
    "unique_io_total_time_by_slowest",
    "unique_rw_only_time_by_slowest",
    "unique_md_only_time_by_slowest",
    "unique_io_slowest_rank",
    "shared_io_total_time_by_slowest",
    "agg_time_by_slowest",
    "agg_perf_by_slowest",
)
COLUMNS = ("log_id", "module", "nprocs", "n_records", *METRICS) + tuple(
    f"{c}_{f}" for c in CATEGORIES for f in CATEGORY_FIELDS
)


def _n(name: str, kind: str = "long") -> Column:
    """A counter, 0 where null (darshan-util's records always carry a value)."""
    zero = F.lit(0.0) if kind == "double" else F.lit(0).cast("long")
    return F.coalesce(F.col(name).cast(kind), zero)


def record_metrics(module_rows: DataFrame, table: str) -> DataFrame:
    """`darshan_log_record_metrics_<module>`: one row per record of a bronze module table."""
    module, p, offsets = MODULES[table]
    shared = F.col("rank") < 0
    md = _n(f"{p}_F_META_TIME", "double")
    rw = _n(f"{p}_F_READ_TIME", "double") + _n(f"{p}_F_WRITE_TIME", "double")
    if offsets:
        max_offset = F.greatest(_n(f"{p}_MAX_BYTE_READ"), _n(f"{p}_MAX_BYTE_WRITTEN"))
    else:
        max_offset = F.lit(-1).cast("long")
    return module_rows.select(
        "log_id",
        F.lit(module).alias("module"),
        "record_id",
        "rank",
        _n(f"{p}_BYTES_READ").alias("r_bytes"),
        _n(f"{p}_BYTES_WRITTEN").alias("w_bytes"),
        max_offset.alias("max_offset"),
        F.when(shared, _n(f"{p}_F_SLOWEST_RANK_TIME", "double"))
        .otherwise(md + rw)
        .alias("io_total_time"),
        F.when(shared, F.lit(0.0)).otherwise(md).alias("md_only_time"),
        F.when(shared, F.lit(0.0)).otherwise(rw).alias("rw_only_time"),
        F.when(shared, F.lit(-1)).otherwise(F.lit(1)).cast("long").alias("nprocs"),
    )


def _slowest_rank(records: DataFrame) -> DataFrame:
    """The rank with the largest I/O time in unique files (`darshan_accumulator_emit`)."""
    per_rank = (
        records.where(F.col("rank") >= 0)
        .groupBy("log_id", "module", "rank")
        .agg(
            F.sum("io_total_time").alias("io"),
            F.sum("rw_only_time").alias("rw"),
            F.sum("md_only_time").alias("md"),
        )
        .where(F.col("io") > 0)
    )
    # largest io time first, then the lowest rank: the first strictly larger one of C's loop
    top = F.max(F.struct("io", (-F.col("rank")).alias("neg_rank"), "rw", "md"))
    return (
        per_rank.groupBy("log_id", "module")
        .agg(top.alias("s"))
        .select(
            "log_id",
            "module",
            F.col("s.io").alias("unique_io_total_time_by_slowest"),
            F.col("s.rw").alias("unique_rw_only_time_by_slowest"),
            F.col("s.md").alias("unique_md_only_time_by_slowest"),
            (-F.col("s.neg_rank")).cast("int").alias("unique_io_slowest_rank"),
        )
    )


def _files(records: DataFrame) -> DataFrame:
    """Per file (record id): the accumulator's hash entry (`darshan_accumulator_inject`)."""
    return records.groupBy("log_id", "module", "record_id").agg(
        F.sum("r_bytes").alias("r_bytes"),
        F.sum("w_bytes").alias("w_bytes"),
        F.when(F.min("max_offset") < 0, F.lit(-1))
        .otherwise(F.greatest(F.lit(0), F.max("max_offset")))
        .cast("long")
        .alias("max_offset"),
        F.when(F.min("nprocs") < 0, F.lit(-1))
        .otherwise(F.sum("nprocs"))
        .cast("long")
        .alias("nprocs"),
    )


def _category_aggs(name: str, member: Column) -> list[Column]:
    """`CATEGORY_INC` over the files of one category, before the job's nprocs is known."""

    def when(c: Column) -> Column:
        return F.when(member, c)

    zero = F.lit(0).cast("long")
    no_offsets = F.max(when(F.col("max_offset") < 0)) == F.lit(True)
    return [
        F.count(when(F.lit(1))).alias(f"{name}_count"),
        F.coalesce(F.sum(when(F.col("r_bytes"))), zero).alias(f"{name}_total_read_volume_bytes"),
        F.coalesce(F.sum(when(F.col("w_bytes"))), zero).alias(f"{name}_total_write_volume_bytes"),
        F.greatest(zero, F.max(when(F.col("r_bytes")))).alias(f"{name}_max_read_volume_bytes"),
        F.greatest(zero, F.max(when(F.col("w_bytes")))).alias(f"{name}_max_write_volume_bytes"),
        F.when(no_offsets, F.lit(-1))
        .otherwise(F.coalesce(F.sum(when(F.col("max_offset"))), zero))
        .cast("long")
        .alias(f"{name}_total_max_offset_bytes"),
        F.when(no_offsets, F.lit(-1))
        .otherwise(F.greatest(zero, F.max(when(F.col("max_offset")))))
        .cast("long")
        .alias(f"{name}_max_offset_bytes"),
        F.coalesce(F.max(when(F.col("nprocs") < 0)), F.lit(False)).alias(f"{name}__any_shared"),
        F.coalesce(F.sum(when(F.when(F.col("nprocs") > 0, F.col("nprocs")))), zero).alias(
            f"{name}__nprocs_sum"
        ),
    ]


def _category_columns(name: str) -> list[Column]:
    """A category's output columns once the job's nprocs is joined (`CATEGORY_INC`'s last lines
    and pydarshan's sizes)."""
    c = lambda f: F.col(f"{name}_{f}")  # noqa: E731
    nprocs = (
        F.when(F.col(f"{name}__any_shared"), F.lit(-1))
        .when(F.col(f"{name}__nprocs_sum") >= F.col("nprocs"), F.lit(-1))
        .otherwise(F.col(f"{name}__nprocs_sum"))
    )
    sized = (c("count") > 0) & (c("max_offset_bytes") >= 0)
    return [
        c("count"),
        c("total_read_volume_bytes"),
        c("total_write_volume_bytes"),
        c("max_read_volume_bytes"),
        c("max_write_volume_bytes"),
        c("total_max_offset_bytes"),
        c("max_offset_bytes"),
        nprocs.cast("long").alias(f"{name}_nprocs"),
        F.when(sized, (c("total_max_offset_bytes") + c("count")) / c("count")).alias(
            f"{name}_avg_size_bytes"
        ),
        F.when(sized, c("max_offset_bytes") + 1).alias(f"{name}_max_size_bytes"),
    ]


def derived_metrics(modules: dict[str, DataFrame], jobs: DataFrame) -> DataFrame:
    """Darshan's derived metrics, one row per (log_id, module) with records (module docstring).

    `modules`: bronze table name ("posix", "mpiio", "stdio", "dfs", "daos") -> its rows; others
    are ignored (darshan-util derives no metrics for them). `jobs`: bronze/jobs (log_id, nprocs).
    """
    parts = [record_metrics(df, t) for t, df in modules.items() if t in MODULES]
    if not parts:
        raise ValueError(f"no module darshan-util accumulates among {sorted(modules)}")
    records = parts[0]
    for p in parts[1:]:
        records = records.unionByName(p)

    totals = records.groupBy("log_id", "module").agg(
        F.count(F.lit(1)).alias("n_records"),
        F.sum(F.col("r_bytes") + F.col("w_bytes")).alias("total_bytes"),
        F.coalesce(F.sum(F.when(F.col("rank") < 0, F.col("io_total_time"))), F.lit(0.0)).alias(
            "shared_io_total_time_by_slowest"
        ),
    )
    files = _files(records)
    member = {
        c: rule(F.col("r_bytes"), F.col("w_bytes"), F.col("nprocs"))
        for c, rule in CATEGORIES.items()
    }
    cats = files.groupBy("log_id", "module").agg(
        *[a for c in CATEGORIES for a in _category_aggs(c, member[c])]
    )
    job_nprocs = jobs.groupBy("log_id").agg(F.max("nprocs").alias("nprocs"))
    keys = ["log_id", "module"]
    joined = (
        totals.join(_slowest_rank(records), keys, "left")
        .join(cats, keys, "left")
        .join(job_nprocs, ["log_id"], "left")
    )
    unique_io = F.coalesce(F.col("unique_io_total_time_by_slowest"), F.lit(0.0))
    agg_time = unique_io + F.col("shared_io_total_time_by_slowest")
    return joined.select(
        "log_id",
        "module",
        "nprocs",
        "n_records",
        "total_bytes",
        unique_io.alias("unique_io_total_time_by_slowest"),
        F.coalesce(F.col("unique_rw_only_time_by_slowest"), F.lit(0.0)).alias(
            "unique_rw_only_time_by_slowest"
        ),
        F.coalesce(F.col("unique_md_only_time_by_slowest"), F.lit(0.0)).alias(
            "unique_md_only_time_by_slowest"
        ),
        F.coalesce(F.col("unique_io_slowest_rank"), F.lit(0)).alias("unique_io_slowest_rank"),
        "shared_io_total_time_by_slowest",
        agg_time.alias("agg_time_by_slowest"),
        F.when(agg_time != 0, F.col("total_bytes") / 1048576.0 / agg_time)
        .otherwise(F.lit(0.0))
        .alias("agg_perf_by_slowest"),
        *[col for c in CATEGORIES for col in _category_columns(c)],
    )
