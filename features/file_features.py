"""Per-file I/O features (PrismIO Table I) from the bronze module tables: pure Spark transforms.

Rules (each a column below; `L` is the file's data layer: MPI-IO when the file has MPI-IO
records — HDF5 files included, IOR and most HDF5 builds go through MPI-IO — else POSIX,
else STDIO):
- interface: HDF5 if the file has an H5F record (or H5F calls in a Recorder trace), else MPI-IO,
  POSIX or STDIO by the records present. The data layer is MPI-IO only if MPI-IO moved bytes.
- n_ranks: all `nprocs` for a record Darshan reduced over ranks (rank -1), else distinct ranks.
  file_per_process: one rank touched it in a job of more than one rank... or of one rank.
- unique_dir: a file-per-process file alone (among the log's data files) in its directory.
- collective: MPI-IO collective reads or writes > 0. file_view: MPI-IO set_view calls > 0.
- fsync_per_write: POSIX fsyncs >= POSIX writes > 0. fsync: any sync that is not part of a
  whole number per write (IOR's `-Y` issues two per write; `-e` adds one per write phase),
  or MPI_File_sync.
- preallocate: an MPI-IO file whose first POSIX write precedes its first MPI-IO write (ROMIO's
  MPI_File_preallocate writes the extent outside any MPI-IO write call).
- transfer_size: L's most frequent access size (Darshan's ACCESS1), over the file's ranks (the
  larger size when two ranks' ACCESS1 counts tie).
- rw_per_open: data operations per open-to-close session. HDF5: H5D reads + writes per H5F open.
  Otherwise L's reads + writes over its sessions, where sessions = min(opens, passes x ranks):
  applications (IOR, ROMIO) also open files to stat or size them, and a pass over the file
  (bytes moved / extent, rounded, at least 1) needs at least one open per rank. MPI-IO opens
  are the collective ones when there are any.
- io_type: from the bytes L moved against the file's extent (POSIX max byte + 1) and the order
  of first write and first read: RO/RAR (reads only; RAR when more than 1.5 extents were read),
  WO/WAW likewise, RAW when the first write precedes the first read, WAR otherwise.
- consecutive/sequential/random ops and the RAW/WAR order: from `io_ops` where the log has DXT
  segments at the file's data layer (`io_type_source = ops`): per rank and direction, data-sized
  operations (length = transfer size, so HDF5 metadata does not count) in time order; an op is
  consecutive when it starts where the previous ended, sequential when it starts after the
  previous start, random otherwise. Without DXT, Darshan's POSIX CONSEC/SEQ counters
  (sequential excludes consecutive); as Darshan never counts a rank's first access at offset 0
  sequential, the ops judged are the ops less one per rank and direction, and random = judged -
  SEQ. random_access: random ops above `features.random_fraction` of the ops judged.
- io_time_s: the slowest rank's I/O time for a shared record, else read + write + meta time;
  bandwidth_mib_s = bytes moved / io_time_s.
"""

from __future__ import annotations

from functools import reduce

import pyspark.sql.functions as F
from pyspark.sql import DataFrame

from schemas import BRONZE, SILVER

KEY = ["log_id", "job_month", "record_id"]
NOT_DATA = ("<STDIN>", "<STDOUT>", "<STDERR>")
ROLLUP_COLUMNS = [f.name for f in BRONZE["file_rollups"].struct.fields]


def _s(*cols: str):
    return reduce(lambda a, b: a + b, [F.coalesce(F.col(c), F.lit(0)) for c in cols])


def _first_ts(col: str):
    return F.min(F.when(F.col(col) > 0, F.col(col)))


def _access1(module: str):
    """The record's most frequent access size over its rows (ranks): the ACCESS1 size of the row
    with the largest ACCESS1 count, the larger size on a tie (Spark's bare `max_by` would pick
    either, by the order its partial aggregates meet)."""
    count, size = F.col(f"{module}_ACCESS1_COUNT"), F.col(f"{module}_ACCESS1_ACCESS")
    return F.max_by(size, F.when(count.isNotNull(), F.struct(count, size)))


def posix_per_file(posix: DataFrame) -> DataFrame:
    p = posix
    return p.groupBy(*KEY).agg(
        F.max((F.col("rank") == -1).cast("int")).alias("px_shared"),
        F.countDistinct("rank").alias("px_ranks"),
        F.sum("POSIX_OPENS").alias("px_opens"),
        F.sum("POSIX_READS").alias("px_reads"),
        F.sum("POSIX_WRITES").alias("px_writes"),
        F.sum(_s("POSIX_FSYNCS", "POSIX_FDSYNCS")).alias("px_syncs"),
        F.sum("POSIX_BYTES_READ").alias("px_bytes_read"),
        F.sum("POSIX_BYTES_WRITTEN").alias("px_bytes_written"),
        F.max(F.greatest("POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN")).alias("px_max_byte"),
        F.sum("POSIX_CONSEC_READS").alias("px_consec_r"),
        F.sum("POSIX_CONSEC_WRITES").alias("px_consec_w"),
        F.sum("POSIX_SEQ_READS").alias("px_seq_r"),
        F.sum("POSIX_SEQ_WRITES").alias("px_seq_w"),
        _access1("POSIX").alias("px_access1"),
        F.sum("POSIX_F_READ_TIME").alias("px_read_time"),
        F.sum("POSIX_F_WRITE_TIME").alias("px_write_time"),
        F.sum("POSIX_F_META_TIME").alias("px_meta_time"),
        F.max("POSIX_F_SLOWEST_RANK_TIME").alias("px_slowest"),
        _first_ts("POSIX_F_READ_START_TIMESTAMP").alias("px_first_read"),
        _first_ts("POSIX_F_WRITE_START_TIMESTAMP").alias("px_first_write"),
    )


def mpiio_per_file(mpiio: DataFrame) -> DataFrame:
    return mpiio.groupBy(*KEY).agg(
        F.max((F.col("rank") == -1).cast("int")).alias("mp_shared"),
        F.countDistinct("rank").alias("mp_ranks"),
        F.sum("MPIIO_INDEP_OPENS").alias("mp_indep_opens"),
        F.sum("MPIIO_COLL_OPENS").alias("mp_coll_opens"),
        F.sum(
            _s("MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS")
        ).alias("mp_reads"),
        F.sum(
            _s("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES")
        ).alias("mp_writes"),
        F.sum(_s("MPIIO_COLL_READS", "MPIIO_COLL_WRITES")).alias("mp_coll_ops"),
        F.sum("MPIIO_VIEWS").alias("mp_views"),
        F.sum("MPIIO_SYNCS").alias("mp_syncs"),
        F.sum("MPIIO_BYTES_READ").alias("mp_bytes_read"),
        F.sum("MPIIO_BYTES_WRITTEN").alias("mp_bytes_written"),
        _access1("MPIIO").alias("mp_access1"),
        F.sum("MPIIO_F_READ_TIME").alias("mp_read_time"),
        F.sum("MPIIO_F_WRITE_TIME").alias("mp_write_time"),
        F.sum("MPIIO_F_META_TIME").alias("mp_meta_time"),
        F.max("MPIIO_F_SLOWEST_RANK_TIME").alias("mp_slowest"),
        _first_ts("MPIIO_F_READ_START_TIMESTAMP").alias("mp_first_read"),
        _first_ts("MPIIO_F_WRITE_START_TIMESTAMP").alias("mp_first_write"),
    )


def stdio_per_file(stdio: DataFrame) -> DataFrame:
    return stdio.groupBy(*KEY).agg(
        F.max((F.col("rank") == -1).cast("int")).alias("st_shared"),
        F.countDistinct("rank").alias("st_ranks"),
        F.sum("STDIO_OPENS").alias("st_opens"),
        F.sum("STDIO_READS").alias("st_reads"),
        F.sum("STDIO_WRITES").alias("st_writes"),
        F.sum("STDIO_FLUSHES").alias("st_syncs"),
        F.sum("STDIO_BYTES_READ").alias("st_bytes_read"),
        F.sum("STDIO_BYTES_WRITTEN").alias("st_bytes_written"),
        F.max(F.greatest("STDIO_MAX_BYTE_READ", "STDIO_MAX_BYTE_WRITTEN")).alias("st_max_byte"),
        F.sum("STDIO_F_READ_TIME").alias("st_read_time"),
        F.sum("STDIO_F_WRITE_TIME").alias("st_write_time"),
        F.sum("STDIO_F_META_TIME").alias("st_meta_time"),
        F.max("STDIO_F_SLOWEST_RANK_TIME").alias("st_slowest"),
        _first_ts("STDIO_F_READ_START_TIMESTAMP").alias("st_first_read"),
        _first_ts("STDIO_F_WRITE_START_TIMESTAMP").alias("st_first_write"),
    )


def tier_expr(rules, default: str):
    expr = None
    for r in rules:
        conds = []
        if r.path_prefix:
            conds.append(F.col("file_name").startswith(r.path_prefix))
        if r.fs_type:
            conds.append(F.col("fs_type") == F.lit(r.fs_type))
        if not conds:
            continue
        cond = reduce(lambda a, b: a | b, conds)
        expr = F.when(cond, F.lit(r.tier)) if expr is None else expr.when(cond, F.lit(r.tier))
    return F.lit(default) if expr is None else expr.otherwise(F.lit(default))


def file_rollups(tables: dict[str, DataFrame]) -> DataFrame:
    """Each file record's counters rolled up over its ranks, per module (`px_*`, `mp_*`, `st_*`),
    its HDF5 evidence (`is_h5`: true or null; `h5_opens`, `h5_rw`), name, mount and the job's
    nprocs: what the rules of `from_rollups` read, from the bronze tables (jobs, files, posix,
    mpiio, stdio, h5f, h5d, io_ops; op_patterns' H5F rows if given). Ingest computes the same rows
    per log where it decodes it (`log_file_rollups`, bronze/file_rollups)."""
    jobs = tables["jobs"].select("log_id", "nprocs")
    files = tables["files"].select(
        "log_id", "record_id", F.col("name").alias("file_name"), "mount_point", "fs_type"
    )
    px = posix_per_file(tables["posix"])
    mp = mpiio_per_file(tables["mpiio"])
    st = stdio_per_file(tables["stdio"])
    h5_calls = (
        tables["io_ops"]
        .where(F.col("func").startswith("H5F") & F.col("record_id").isNotNull())
        .select(*KEY)
    )
    if "op_patterns" in tables:  # the logs ingest patterned: their H5F calls, one row per file
        h5_calls = h5_calls.unionByName(
            tables["op_patterns"].where(F.col("h5f_calls")).select(*KEY)
        )
    h5 = (
        tables["h5f"].select(*KEY).unionByName(h5_calls).distinct().withColumn("is_h5", F.lit(True))
    )
    h5rw = _h5_ops_per_file(tables["h5f"], tables["h5d"], tables["files"])

    recs = px.select(*KEY).unionByName(mp.select(*KEY)).unionByName(st.select(*KEY)).distinct()
    return (
        recs.join(px, KEY, "left")
        .join(mp, KEY, "left")
        .join(st, KEY, "left")
        .join(h5, KEY, "left")
        .join(h5rw, ["log_id", "record_id"], "left")
        .join(files, ["log_id", "record_id"], "left")
        .join(jobs, ["log_id"], "left")
    ).select(*ROLLUP_COLUMNS)


def transform(tables: dict[str, DataFrame], fconf, rolled: DataFrame | None = None) -> DataFrame:
    """bronze tables (jobs, files, posix, mpiio, stdio, h5f, h5d, io_ops) -> silver/file_features
    rows, with `rolled` (bronze/file_rollups rows) for the logs ingest rolled up: a log is in one or
    the other."""
    r = file_rollups(tables)
    if rolled is not None:
        r = r.unionByName(rolled.select(*ROLLUP_COLUMNS))
    return from_rollups(r, tables["io_ops"], tables.get("op_patterns"), fconf)


def from_rollups(df: DataFrame, io_ops: DataFrame, patterns: DataFrame | None, fconf) -> DataFrame:
    """silver/file_features from the files' rollups (`file_rollups`) and their DXT access pattern
    (`io_ops`, or bronze/op_patterns for the logs ingest patterned): the rules of the module
    docstring, row by row, then the per-directory count of `unique_dir`."""
    df = df.where(~F.coalesce(F.col("file_name"), F.lit("")).isin(*NOT_DATA)).where(
        ~F.coalesce(F.col("file_name"), F.lit("")).startswith("heatmap:")
    )
    has_mp = (
        F.coalesce(F.col("mp_bytes_read"), F.lit(0))
        + F.coalesce(F.col("mp_bytes_written"), F.lit(0))
    ) > 0
    has_px = F.col("px_ranks").isNotNull()
    layer = F.when(has_mp, "MPI-IO").when(has_px, "POSIX").otherwise("STDIO")
    df = df.withColumn("layer", layer)

    def by_layer(mp_col, px_col, st_col):
        return (
            F.when(F.col("layer") == "MPI-IO", F.col(mp_col))
            .when(F.col("layer") == "POSIX", F.col(px_col))
            .otherwise(F.col(st_col))
        )

    shared = (
        F.greatest(
            *[F.coalesce(F.col(c), F.lit(0)) for c in ("px_shared", "mp_shared", "st_shared")]
        )
        == 1
    )
    ranks = F.greatest(
        *[F.coalesce(F.col(c), F.lit(0)) for c in ("px_ranks", "mp_ranks", "st_ranks")]
    )
    df = (
        df.withColumn("interface", F.when(F.col("is_h5"), "HDF5").otherwise(F.col("layer")))
        .withColumn(
            "n_ranks",
            F.when(shared, F.greatest(F.col("nprocs"), F.lit(1))).otherwise(ranks).cast("long"),
        )
        .withColumn("file_per_process", ~shared & (F.col("n_ranks") == 1))
        .withColumn(
            "reads", F.coalesce(by_layer("mp_reads", "px_reads", "st_reads"), F.lit(0)).cast("long")
        )
        .withColumn(
            "writes",
            F.coalesce(by_layer("mp_writes", "px_writes", "st_writes"), F.lit(0)).cast("long"),
        )
        .withColumn(
            "opens",
            F.coalesce(
                F.when(
                    F.col("layer") == "MPI-IO",
                    F.when(F.col("mp_coll_opens") > 0, F.col("mp_coll_opens")).otherwise(
                        F.col("mp_indep_opens")
                    ),
                )
                .when(F.col("layer") == "POSIX", F.col("px_opens"))
                .otherwise(F.col("st_opens")),
                F.lit(0),
            ).cast("long"),
        )
        .withColumn(
            "bytes_read",
            F.coalesce(by_layer("mp_bytes_read", "px_bytes_read", "st_bytes_read"), F.lit(0)).cast(
                "long"
            ),
        )
        .withColumn(
            "bytes_written",
            F.coalesce(
                by_layer("mp_bytes_written", "px_bytes_written", "st_bytes_written"), F.lit(0)
            ).cast("long"),
        )
        .withColumn("extent", F.coalesce(F.col("px_max_byte"), F.col("st_max_byte")) + 1)
        .withColumn(
            "transfer_size",
            F.coalesce(
                F.when(F.col("layer") == "MPI-IO", F.col("mp_access1")).when(
                    F.col("layer") == "POSIX", F.col("px_access1")
                ),
                F.when(
                    F.col("reads") + F.col("writes") > 0,
                    (
                        (F.col("bytes_read") + F.col("bytes_written"))
                        / (F.col("reads") + F.col("writes"))
                    ).cast("long"),
                ),
            ).cast("long"),
        )
    )
    df = _io_type(df)
    df = _with_ops_pattern(df, io_ops, patterns)
    px_writes = F.coalesce(F.col("px_writes"), F.lit(0))
    px_syncs = F.coalesce(F.col("px_syncs"), F.lit(0))
    fpw = (px_writes > 0) & (px_syncs >= px_writes)
    # Darshan's last byte read/written starts at 0, so each rank's first read (write) at offset 0 is
    # neither consecutive nor sequential; the DXT rule only judges ops that have a predecessor.
    # Counters alike: one op per rank and direction has none (the record's ranks; all nprocs for a
    # shared record Darshan reduced), so a few ops per rank are not "random" for their first one.
    firsts = F.least(_s("px_reads"), F.col("n_ranks")) + F.least(_s("px_writes"), F.col("n_ranks"))
    total_px = F.greatest(_s("px_reads", "px_writes") - firsts, F.lit(0))
    random_ops = F.greatest(total_px - _s("px_seq_r", "px_seq_w"), F.lit(0))
    consec = _s("px_consec_r", "px_consec_w")
    prealloc = (F.col("layer") == "MPI-IO") & (F.col("px_first_write") < F.col("mp_first_write"))
    read_t = by_layer("mp_read_time", "px_read_time", "st_read_time")
    write_t = by_layer("mp_write_time", "px_write_time", "st_write_time")
    meta_t = by_layer("mp_meta_time", "px_meta_time", "st_meta_time")
    slowest = by_layer("mp_slowest", "px_slowest", "st_slowest")
    io_time = F.when(shared & (slowest > 0), slowest).otherwise(
        F.coalesce(read_t, F.lit(0.0))
        + F.coalesce(write_t, F.lit(0.0))
        + F.coalesce(meta_t, F.lit(0.0))
    )
    moved = F.col("bytes_read") + F.col("bytes_written")
    df = (
        df.withColumn("collective", F.coalesce(F.col("mp_coll_ops") > 0, F.lit(False)))
        .withColumn("file_view", F.coalesce(F.col("mp_views") > 0, F.lit(False)))
        .withColumn("fsync_per_write", fpw)
        .withColumn(
            "fsync",
            (F.when(fpw, (px_syncs % px_writes) != 0).otherwise(px_syncs > 0))
            | (F.coalesce(F.col("mp_syncs"), F.lit(0)) > 0),
        )
        .withColumn("preallocate", F.coalesce(prealloc, F.lit(False)))
        .withColumn(
            "_passes",
            F.greatest(
                F.lit(1.0),
                F.round(F.col("bytes_read") / F.col("extent"))
                + F.round(F.col("bytes_written") / F.col("extent")),
            ),
        )
        .withColumn(
            "_sessions", F.least(F.col("opens").cast("double"), F.col("_passes") * F.col("n_ranks"))
        )
        .withColumn(
            "rw_per_open",
            F.when(
                F.col("is_h5") & (F.col("h5_opens") > 0) & (F.col("h5_rw") > 0),
                F.col("h5_rw") / F.col("h5_opens"),
            ).when(F.col("_sessions") > 0, (F.col("reads") + F.col("writes")) / F.col("_sessions")),
        )
        .withColumn(
            "consecutive_ops", F.coalesce(F.col("op_consec"), F.when(has_px, consec)).cast("long")
        )
        .withColumn(
            "sequential_ops",
            F.coalesce(F.col("op_seq"), F.when(has_px, _s("px_seq_r", "px_seq_w") - consec)).cast(
                "long"
            ),
        )
        .withColumn(
            "random_ops", F.coalesce(F.col("op_random"), F.when(has_px, random_ops)).cast("long")
        )
        .withColumn("read_time_s", read_t)
        .withColumn("write_time_s", write_t)
        .withColumn("meta_time_s", meta_t)
        .withColumn("io_time_s", io_time)
        .withColumn("bandwidth_mib_s", F.when(io_time > 0, moved / 1048576.0 / io_time))
        .withColumn(
            "random_access",
            F.coalesce(
                F.when(
                    F.col("op_n") > 0,
                    F.col("op_random") / F.col("op_n") > F.lit(fconf.random_fraction),
                ),
                F.when(total_px > 0, random_ops / total_px > F.lit(fconf.random_fraction)),
                F.lit(False),
            ),
        )
        .withColumn("unique_dir_name", F.regexp_extract(F.col("file_name"), r"^(.*)/[^/]*$", 1))
        .withColumn("tier", tier_expr(fconf.tier_rules, fconf.default_tier))
    )
    data = (F.col("reads") + F.col("writes")) > 0
    per_dir = (
        df.where(data & (F.col("layer") != "STDIO"))
        .groupBy("log_id", "unique_dir_name")
        .agg(F.count("*").alias("_files_in_dir"))
    )
    df = df.join(per_dir, ["log_id", "unique_dir_name"], "left").withColumn(
        "unique_dir",
        F.coalesce(
            F.col("file_per_process") & (F.col("_files_in_dir") == 1) & (F.col("nprocs") > 1),
            F.lit(False),
        ),
    )
    return df.select(*[f.name for f in SILVER["file_features"].struct.fields])


def _io_type(df: DataFrame) -> DataFrame:
    first_read = F.coalesce(
        F.when(F.col("layer") == "MPI-IO", F.col("mp_first_read")),
        F.col("px_first_read"),
        F.col("st_first_read"),
    )
    first_write = F.coalesce(
        F.when(F.col("layer") == "MPI-IO", F.col("mp_first_write")),
        F.col("px_first_write"),
        F.col("st_first_write"),
    )
    rpass = F.col("bytes_read") / F.col("extent")
    wpass = F.col("bytes_written") / F.col("extent")
    r = F.col("bytes_read") > 0
    w = F.col("bytes_written") > 0
    io_type = (
        F.when(
            r & w, F.when(F.coalesce(first_write < first_read, F.lit(True)), "RAW").otherwise("WAR")
        )
        .when(r, F.when(rpass > 1.5, "RAR").otherwise("RO"))
        .when(w, F.when(wpass > 1.5, "WAW").otherwise("WO"))
        .otherwise("none")
    )
    return df.withColumn("io_type", io_type).withColumn("io_type_source", F.lit("counters"))


def _h5_ops_per_file(h5f: DataFrame, h5d: DataFrame, files: DataFrame) -> DataFrame:
    """HDF5 data operations (H5D reads + writes of the file's datasets) and H5F opens per file."""
    names = files.select("log_id", "record_id", "name")
    ds = h5d.join(names, ["log_id", "record_id"], "inner").select(
        "log_id",
        F.regexp_extract("name", r"^(.*):/", 1).alias("file_name"),
        (
            F.coalesce(F.col("H5D_READS"), F.lit(0)) + F.coalesce(F.col("H5D_WRITES"), F.lit(0))
        ).alias("rw"),
    )
    ds = ds.groupBy("log_id", "file_name").agg(F.sum("rw").alias("h5_rw"))
    opens = h5f.groupBy("log_id", "record_id").agg(F.sum("H5F_OPENS").alias("h5_opens"))
    opens = opens.join(names, ["log_id", "record_id"], "inner").withColumnRenamed(
        "name", "file_name"
    )
    return opens.join(ds, ["log_id", "file_name"], "left").select(
        "log_id", "record_id", "h5_opens", "h5_rw"
    )


def _with_ops_pattern(
    df: DataFrame, io_ops: DataFrame, patterns: DataFrame | None = None
) -> DataFrame:
    """Access pattern and RAW/WAR order from DXT segments at the file's data layer, where present:
    `ops_pattern_stats` over `io_ops`, and for the logs ingest counted, their `patterns`
    (bronze/op_patterns) row of the file's source and transfer size. A log is in one or the other."""
    want = df.select(
        "log_id",
        "record_id",
        "transfer_size",
        F.when(F.col("layer") == "MPI-IO", "DXT_MPIIO").otherwise("DXT_POSIX").alias("source"),
    )
    stats = ops_pattern_stats(io_ops, want)
    if patterns is not None:
        stats = stats.unionByName(patterns_at_transfer_size(patterns, want))
    df = df.join(stats, ["log_id", "record_id"], "left")
    both = (
        (F.col("io_type").isin("RAW", "WAR"))
        & F.col("op_first_read").isNotNull()
        & F.col("op_first_write").isNotNull()
    )
    return df.withColumn(
        "io_type",
        F.when(
            both, F.when(F.col("op_first_write") < F.col("op_first_read"), "RAW").otherwise("WAR")
        ).otherwise(F.col("io_type")),
    ).withColumn(
        "io_type_source",
        F.when(F.col("op_n").isNotNull(), "ops").otherwise(F.col("io_type_source")),
    )


def patterns_at_transfer_size(patterns: DataFrame, want: DataFrame) -> DataFrame:
    """`ops_pattern_stats`' columns from bronze/op_patterns: the row of each wanted file's source
    and length = transfer size (ingest counted every length; `log_op_patterns`)."""
    cols = ["op_n", "op_consec", "op_seq", "op_random", "op_first_read", "op_first_write"]
    p = patterns.where(~F.col("h5f_calls")).select("log_id", "record_id", "source", "length", *cols)
    return (
        want.join(p, ["log_id", "record_id", "source"], "inner")
        .where(F.col("length") == F.col("transfer_size"))
        .select("log_id", "record_id", *cols)
    )


def ops_pattern_stats(io_ops: DataFrame, want: DataFrame) -> DataFrame:
    """Per (log_id, record_id) of `want` (log_id, record_id, source, transfer_size): the ops judged
    (`op_n`: those with a predecessor), consecutive, sequential and random ones, and the first read
    and write start, from the `source` segments of length transfer_size (rules: module docstring)."""
    from pyspark.sql import Window

    ops = io_ops.where(F.col("op").isin("read", "write")).join(
        want, ["log_id", "record_id", "source"], "inner"
    )
    data = ops.where(F.col("length") == F.col("transfer_size"))
    w = Window.partitionBy("log_id", "record_id", "rank", "op").orderBy("start_s", "seq")
    data = data.withColumn("prev_off", F.lag("offset").over(w)).withColumn(
        "prev_end", F.lag(F.col("offset") + F.col("length")).over(w)
    )
    has_prev = F.col("prev_off").isNotNull()
    consec = has_prev & (F.col("offset") == F.col("prev_end"))
    seq = has_prev & ~consec & (F.col("offset") > F.col("prev_off"))
    return data.groupBy("log_id", "record_id").agg(
        F.sum(has_prev.cast("long")).alias("op_n"),
        F.sum(consec.cast("long")).alias("op_consec"),
        F.sum(seq.cast("long")).alias("op_seq"),
        F.sum((has_prev & ~consec & ~seq).cast("long")).alias("op_random"),
        F.min(F.when(F.col("op") == "read", F.col("start_s"))).alias("op_first_read"),
        F.min(F.when(F.col("op") == "write", F.col("start_s"))).alias("op_first_write"),
    )


# -- the access pattern of one decoded log, where ingest decodes it (bronze/op_patterns) ---------
# `ops_pattern_stats` above scans and shuffles every DXT segment of the new logs, then orders the
# data-sized ones per rank in a window: a large share of the features stage. The decode
# task holds each log's segments, so ingest counts them per length there; the stage joins the row
# of the file's transfer size.

PATTERN_SOURCES = ("DXT_POSIX", "DXT_MPIIO")


def log_op_patterns(io_ops):
    """One decoded log's bronze/op_patterns rows (its docstring) from its Arrow `io_ops` (None or
    empty: no row): per (record_id, source, length), `ops_pattern_stats`' figures over that length's
    read and write segments, by the same rules and Spark's order of floats (a null start first, NaN
    after every number; a NaN start is no first read unless all are), and one `h5f_calls` row per
    record with Recorder H5F calls. Offsets add in wrapping 64-bit arithmetic."""
    return op_patterns_of(io_ops)[0]


def op_patterns_of(io_ops, log=None):
    """`log_op_patterns` of many logs at once: `io_ops` holds their segments (a log's rows in its
    order, the logs in any order) and `log` (numpy, one per row; None: one log) says whose each row
    is. Returns (the rows in bronze/op_patterns' decoded schema, the `log` value of each row). Every
    log is counted on its own (the log is the outermost key of each grouping): the rows of a log are
    those `log_op_patterns` gives on its segments alone. Ingest counts a staged file's logs in one
    call: one by one, numpy and Arrow's per-call overhead would dominate."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from schemas import BRONZE

    schema = BRONZE["op_patterns"].decoded_arrow_schema
    none = (schema.empty_table(), np.zeros(0, np.int64))
    if io_ops is None or not io_ops.num_rows:
        return none
    log = np.zeros(io_ops.num_rows, np.int64) if log is None else np.asarray(log, np.int64)
    parts, logs = [], []
    h5 = pc.and_(
        pc.fill_null(pc.starts_with(io_ops.column("func"), "H5F"), False),
        pc.is_valid(io_ops.column("record_id")),
    )
    if pc.any(h5).as_py():
        calls = io_ops.filter(h5)
        recs = (
            pa.table(
                {
                    "_log": log[h5.to_numpy(zero_copy_only=False)],
                    "record_id": calls.column("record_id"),
                    "source": calls.column("source"),
                }
            )
            .group_by(["_log", "record_id", "source"])
            .aggregate([])
        )
        parts.append(
            pa.table(
                {
                    "record_id": recs.column("record_id"),
                    "source": recs.column("source"),
                    "length": pa.nulls(recs.num_rows, pa.int64()),
                    **{
                        c: pa.nulls(recs.num_rows, pa.int64())
                        for c in ("op_n", "op_consec", "op_seq", "op_random")
                    },
                    "op_first_read": pa.nulls(recs.num_rows, pa.float64()),
                    "op_first_write": pa.nulls(recs.num_rows, pa.float64()),
                    "h5f_calls": pa.array(np.ones(recs.num_rows, bool)),
                }
            )
        )
        logs.append(recs.column("_log").to_numpy())
    keep = pc.and_(
        pc.and_(
            pc.is_in(io_ops.column("op"), pa.array(["read", "write"])),
            pc.is_in(io_ops.column("source"), pa.array(PATTERN_SOURCES)),
        ),
        pc.and_(pc.is_valid(io_ops.column("record_id")), pc.is_valid(io_ops.column("length"))),
    )
    keep = pc.fill_null(keep, False)
    ops = io_ops.filter(keep)
    if ops.num_rows:
        rows, at_log = _pattern_rows(ops, log[keep.to_numpy(zero_copy_only=False)])
        parts.append(rows)
        logs.append(at_log)
    if not parts:
        return none
    return pa.concat_tables([p.cast(schema) for p in parts]), np.concatenate(logs)


def _pattern_rows(ops, log):
    """`op_patterns_of`' counts over the read and write segments `ops` (record, length present) of the
    logs `log` (one per row): (the rows, the log of each)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = ops.num_rows
    rec = ops.column("record_id").to_numpy()
    length = ops.column("length").to_numpy()
    src = (
        (pc.equal(ops.column("source"), "DXT_MPIIO")).to_numpy(zero_copy_only=False).astype(np.int8)
    )
    write = pc.equal(ops.column("op"), "write").to_numpy(zero_copy_only=False)
    rank = ops.column("rank").to_numpy()
    seq = ops.column("seq").to_numpy()
    start_ok = pc.is_valid(ops.column("start_s")).to_numpy(zero_copy_only=False)
    start = np.where(
        start_ok, np.asarray(ops.column("start_s").to_numpy(zero_copy_only=False), np.float64), 0.0
    )
    off_ok = pc.is_valid(ops.column("offset")).to_numpy(zero_copy_only=False)
    off = pc.fill_null(ops.column("offset"), 0).to_numpy()
    # Spark's window order: (start_s nulls first, NaN last), then seq, within (record, source, length, rank, op);
    # the log outermost
    order = np.lexsort((seq, start, start_ok, write, rank, length, src, rec, log))
    log, rec, length, src, write, rank = (
        log[order],
        rec[order],
        length[order],
        src[order],
        write[order],
        rank[order],
    )
    start, start_ok, off, off_ok = start[order], start_ok[order], off[order], off_ok[order]
    # one output row per (log, record, source, length): the first sorted row of each
    head = np.ones(n, bool)
    head[1:] = (
        (log[1:] != log[:-1])
        | (rec[1:] != rec[:-1])
        | (length[1:] != length[:-1])
        | (src[1:] != src[:-1])
    )
    at = np.flatnonzero(head)
    same = np.zeros(n, bool)  # the row before is of the same (record, source, length, rank, op)
    same[1:] = ~head[1:] & (rank[1:] == rank[:-1]) & (write[1:] == write[:-1])
    prev_ok = np.zeros(n, bool)
    prev_ok[1:] = off_ok[:-1]
    has_prev = same & prev_ok
    prev_off = np.zeros(n, np.int64)
    prev_off[1:] = off[:-1]
    with np.errstate(over="ignore"):
        prev_end = prev_off + length
    judged = has_prev & off_ok  # a segment without an offset is judged (op_n) but none of the three
    consec = judged & (off == prev_end)
    seq_ = judged & ~consec & (off > prev_off)
    rand = judged & ~consec & ~seq_

    def total(x):
        return np.add.reduceat(x.astype(np.int64), at)

    def first(is_write: bool):
        # Spark's min: nulls skipped, NaN above every number (so NaN only when every start is NaN)
        pick = start_ok & (write == is_write)
        num, nan = pick & ~np.isnan(start), pick & np.isnan(start)
        lo = np.minimum.reduceat(np.where(num, start, np.inf), at)
        any_num = np.add.reduceat(num.astype(np.int64), at) > 0
        any_nan = np.add.reduceat(nan.astype(np.int64), at) > 0
        out = np.where(any_num, lo, np.nan)
        return pa.array(out, mask=~(any_num | any_nan))

    return pa.table(
        {
            "record_id": rec[at],
            "source": pa.array(np.where(src[at] == 1, "DXT_MPIIO", "DXT_POSIX")),
            "length": length[at],
            "op_n": total(has_prev),
            "op_consec": total(consec),
            "op_seq": total(seq_),
            "op_random": total(rand),
            "op_first_read": first(False),
            "op_first_write": first(True),
            "h5f_calls": np.zeros(len(at), bool),
        }
    ), log[at]
