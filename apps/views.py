"""SQL views over the lake for analysts: every table as `<layer>_<table>`, plus analysis views.

Reads: every table of `schemas.TABLES` the lake holds (silver/bottleneck_tags too, if present);
writes nothing: `register_views` creates session-scoped temp views. All analysis SQL lives here.
The PrismIO views answer as `IOFrame` does (apps/analysis/frame.py: same rules, tested equal on
every log of the iosweep data), one row per log and key, with `log_id` and `record_id` beside
the file's name:

- `v_io_bandwidth`: per (log_id, rank, file): bytes, io_time_s and io_bandwidth (bytes/s) of the
  reads and writes — from the traced ops where the trace timed them (DXT segments, Recorder
  calls), counting only each file's top layer (MPI-IO over POSIX/STDIO over HDF5), else from
  Darshan's counters (`<M>_BYTES_READ` / `<M>_F_READ_TIME`, writes alike, top module per file):
  `IOFrame.io_bandwidth`.
- `v_io_time` (PrismIO §IV-B `io_time`): per (log_id, file, rank): read / write / meta / io
  time (s), `rank_time_s` = the rank's run time (the job's, bronze/jobs.run_time_s),
  `percentage` = io_time_s / rank_time_s (the paper's), `rank_io_time_s` = the rank's time in
  all its I/O and `io_share` = io_time_s / rank_io_time_s (iolake's former percentage).
- `v_access_pattern` (PrismIO §IV-C `access_pattern`): per (log_id, file, definition):
  consecutive, sequential, random, total — `definition` 'prismio' (the file's ops in trace
  order, each against the one before), 'darshan' (POSIX SEQ/CONSEC counters), 'per_rank'
  (iolake's rule); see apps/analysis/patterns.py.
- `v_readwrite_pattern` (PrismIO §IV-C `readwrite_pattern`): per (log_id, file): bytes RAR,
  RAW, WAR, WAW (each byte by the last earlier op that touched it), read / write (all bytes of
  the file's reads / writes) and first_read / first_write (bytes nobody touched before). In SQL
  the file is cut at every op's start and end into pieces no op half-covers; a piece's previous
  toucher is the op before in time order among those covering it.
- `v_shared_files`: per (log_id, file): the ranks that touched it (ops and POSIX/MPI-IO/STDIO
  records; a record reduced over all ranks, rank -1, stands for ranks 0..nprocs-1) and their number.
- `v_job_activity`: per log, the job's activity over time (the columns v_job_summary adds, below).
- `v_job_summary`: silver_job_features with `n_tags` (rows of silver_bottleneck_tags) and
  `tags` (tag -> rows, when that table has a `tag` column) per log; 0 and null when the tags
  table does not exist (checked at each call); and the job's activity over time, as
  `IOFrame.activity` bins it, summed over the layers every byte reaches (POSIX and STDIO, and
  DFS in HEATMAP): `activity_source` ('dxt' / 'recorder': the traced ops, else 'heatmap':
  Darshan's HEATMAP module summed over ranks; null: neither — counters carry no time),
  `activity_bin_s` (bin width, s) and `activity_read_bytes` / `activity_write_bytes` (bytes per
  bin from job start, bin i covering [i, i + 1) * activity_bin_s).
- `derived_metrics`: per (log_id, module) of POSIX, MPI-IO, STDIO, DFS, DAOS, Darshan's derived
  metrics as darshan-util's accumulator computes them for pydarshan (`agg_perf_by_slowest`,
  `agg_time_by_slowest`, `total_bytes`, slowest-rank times) and the file counts by category
  (all / read-only / write-only / read-write / unique / shared / partially shared) with their
  volumes and sizes: features/derived_metrics.py, which cites darshan-util's functions.
- The sections of pydarshan's job summary (features/job_summary.py cites the pydarshan source
  file of each definition): `io_cost` per (log_id, module: read / write / meta / wait seconds
  per process, bytes), `file_categories` per (log_id, module, category: files, bytes, average
  and largest size estimated from offsets), `access_sizes` per (log_id, module, direction, bin),
  `common_access_sizes` per (log_id, module, access_size: count, rank), `op_counts` per (log_id,
  module, operation) and `data_access_by_root` per (log_id, filesystem_root: bytes and files
  read and written).
"""

from __future__ import annotations

from features.derived_metrics import MODULES as DERIVED_MODULES
from features.derived_metrics import derived_metrics
from features.job_summary import TABLE as SUMMARY_TABLES
from schemas import TABLES

LEVEL = """CASE WHEN source = 'DXT_MPIIO' OR STARTSWITH(func, 'MPI_File') THEN 2
                WHEN STARTSWITH(func, 'H5') THEN 0 ELSE 1 END"""
NO_OPS = (  # the io_ops columns, no row; one string, split where it would overrun the line
    "SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS LONG) AS rank, "
    "CAST(NULL AS LONG) AS record_id,\n"
    "  CAST(NULL AS STRING) AS source, CAST(NULL AS STRING) AS func, CAST(NULL AS STRING) AS op, "
    "CAST(NULL AS LONG) AS offset,\n"
    "  CAST(NULL AS LONG) AS length, CAST(NULL AS DOUBLE) AS start_s, "
    "CAST(NULL AS DOUBLE) AS end_s, CAST(NULL AS LONG) AS seq\n"
    "WHERE FALSE"
)
NO_JOBS_NPROCS = "SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS LONG) AS nprocs WHERE FALSE"
NO_JOBS = "(SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS DOUBLE) AS run_time_s)"
NO_COUNTERS = """SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS LONG) AS rank, CAST(NULL AS LONG) AS record_id,
  1 AS level, CAST(NULL AS STRING) AS kind, CAST(NULL AS LONG) AS bytes, CAST(NULL AS DOUBLE) AS time_s WHERE FALSE"""
# counter prefix and layer level per module table (IOFrame's COUNTERS and LEVEL)
COUNTER_SQL = {
    "posix": ("POSIX", 1),
    "stdio": ("STDIO", 1),
    "mpiio": ("MPIIO", 2),
}

# each file's top-layer ops, named (the CTEs every op view starts from)
TOP_OPS = """
ops AS (
  SELECT log_id, rank, record_id, source, op, offset, length, start_s, end_s, seq, {level} AS level FROM {io_ops}
), top AS (
  SELECT o.* FROM (SELECT *, MAX(level) OVER (PARTITION BY log_id, record_id) AS top_level FROM ops) o
  WHERE o.level = o.top_level AND o.record_id IS NOT NULL
), names AS (
  SELECT log_id, record_id, MIN(name) AS name FROM bronze_files GROUP BY log_id, record_id
)"""
FILE_NAME = "COALESCE(n.name, CONCAT('<record ', CAST(x.record_id AS STRING), '>'))"

# IOFrame._timed: (log_id, rank, record_id, kind read|write|meta, bytes, time_s)
TIMED = """
op_rows AS (
  SELECT log_id, rank, record_id,
         CASE WHEN op IN ('read', 'write') THEN op
              WHEN op IN ('open', 'close', 'sync', 'meta', 'seek') THEN 'meta' END AS kind,
         CASE WHEN op IN ('read', 'write') THEN length ELSE 0 END AS bytes, end_s - start_s AS time_s
  FROM top WHERE op IN ('read', 'write', 'open', 'close', 'sync', 'meta', 'seek')
), traced AS (
  SELECT log_id, record_id, MAX(source = 'RECORDER') AS recorder, MAX(source <> 'RECORDER') AS dxt
  FROM {io_ops} WHERE record_id IS NOT NULL GROUP BY log_id, record_id
), recorder_logs AS (
  SELECT DISTINCT log_id FROM traced WHERE recorder
), counters AS ({counters}
), counter_rows AS (
  SELECT c.log_id, c.rank, c.record_id, c.kind, c.bytes, c.time_s
  FROM (SELECT *, MAX(level) OVER (PARTITION BY log_id, record_id) AS top_level FROM counters) c
  LEFT ANTI JOIN recorder_logs r ON r.log_id = c.log_id
  LEFT ANTI JOIN (SELECT log_id, record_id FROM traced WHERE dxt) d
    ON d.log_id = c.log_id AND d.record_id = c.record_id AND c.kind IN ('read', 'write')
  WHERE c.level = c.top_level
), timed AS (
  SELECT * FROM op_rows UNION ALL SELECT * FROM counter_rows
)"""

IO_BANDWIDTH = """
WITH {top}, {timed}
SELECT x.log_id, x.rank, x.record_id, {file_name} AS file_name,
       SUM(x.bytes) AS bytes, SUM(x.time_s) AS io_time_s,
       CASE WHEN SUM(x.time_s) > 0 THEN SUM(x.bytes) / SUM(x.time_s) END AS io_bandwidth
FROM timed x LEFT JOIN names n ON n.log_id = x.log_id AND n.record_id = x.record_id
WHERE x.kind IN ('read', 'write')
GROUP BY x.log_id, x.rank, x.record_id, n.name
"""

IO_TIME = """
WITH {top}, {timed},
per_file AS (
  SELECT log_id, record_id, rank,
         SUM(CASE WHEN kind = 'read' THEN time_s ELSE 0 END) AS read_time_s,
         SUM(CASE WHEN kind = 'write' THEN time_s ELSE 0 END) AS write_time_s,
         SUM(CASE WHEN kind = 'meta' THEN time_s ELSE 0 END) AS meta_time_s,
         SUM(time_s) AS io_time_s
  FROM timed GROUP BY log_id, record_id, rank
), per_rank AS (
  SELECT log_id, rank, SUM(time_s) AS rank_io_time_s FROM timed GROUP BY log_id, rank
)
SELECT x.log_id, x.record_id, {file_name} AS file_name, x.rank,
       x.read_time_s, x.write_time_s, x.meta_time_s, x.io_time_s,
       j.run_time_s AS rank_time_s,
       CASE WHEN j.run_time_s > 0 THEN x.io_time_s / j.run_time_s END AS percentage,
       r.rank_io_time_s,
       CASE WHEN r.rank_io_time_s > 0 THEN x.io_time_s / r.rank_io_time_s END AS io_share
FROM per_file x
LEFT JOIN names n ON n.log_id = x.log_id AND n.record_id = x.record_id
LEFT JOIN per_rank r ON r.log_id = x.log_id AND r.rank = x.rank
LEFT JOIN {jobs} j ON j.log_id = x.log_id
"""

ACCESS_PATTERN = """
WITH {top},
rw AS (
  SELECT * FROM top WHERE op IN ('read', 'write') AND offset IS NOT NULL AND length IS NOT NULL
), prismio AS (
  SELECT log_id, record_id, offset,
         LAG(offset + length) OVER (PARTITION BY log_id, record_id ORDER BY rank, start_s, seq) AS prev_end
  FROM rw
), per_rank AS (
  SELECT log_id, record_id, offset,
         LAG(offset) OVER (PARTITION BY log_id, record_id, rank, op ORDER BY start_s, seq) AS prev_offset,
         LAG(offset + length) OVER (PARTITION BY log_id, record_id, rank, op ORDER BY start_s, seq) AS prev_end
  FROM rw
), counts AS (
  SELECT log_id, record_id, 'prismio' AS definition,
         COUNT_IF(prev_end = offset) AS consecutive, COUNT_IF(prev_end < offset) AS sequential,
         COUNT_IF(prev_end > offset) AS random, COUNT(prev_end) AS total
  FROM prismio GROUP BY log_id, record_id
  UNION ALL
  SELECT log_id, record_id, 'per_rank',
         COUNT_IF(offset = prev_end), COUNT_IF(offset <> prev_end AND offset > prev_offset),
         COUNT_IF(offset <> prev_end AND offset <= prev_offset), COUNT(prev_offset)
  FROM per_rank GROUP BY log_id, record_id
  {darshan}
)
SELECT x.log_id, x.record_id, {file_name} AS file_name, x.definition,
       CAST(x.consecutive AS BIGINT) AS consecutive, CAST(x.sequential AS BIGINT) AS sequential,
       CAST(x.random AS BIGINT) AS random, CAST(x.total AS BIGINT) AS total
FROM counts x LEFT JOIN names n ON n.log_id = x.log_id AND n.record_id = x.record_id
"""
DARSHAN_ACCESS = """
  UNION ALL
  SELECT log_id, record_id, 'darshan', SUM(c), SUM(s - c), SUM(n - s), SUM(n)
  FROM (SELECT log_id, record_id,
               COALESCE(POSIX_READS, 0) + COALESCE(POSIX_WRITES, 0) AS n,
               COALESCE(POSIX_SEQ_READS, 0) + COALESCE(POSIX_SEQ_WRITES, 0) AS s,
               COALESCE(POSIX_CONSEC_READS, 0) + COALESCE(POSIX_CONSEC_WRITES, 0) AS c
        FROM bronze_posix)
  GROUP BY log_id, record_id"""

READWRITE_PATTERN = """
WITH {top},
rw AS (
  SELECT log_id, record_id, op, offset AS lo, offset + length AS hi,
         ROW_NUMBER() OVER (PARTITION BY log_id, record_id ORDER BY start_s, end_s, rank, seq) AS k
  FROM top WHERE op IN ('read', 'write') AND offset IS NOT NULL AND length > 0
), bounds AS (
  SELECT DISTINCT log_id, record_id, b FROM rw LATERAL VIEW EXPLODE(ARRAY(lo, hi)) e AS b
), cuts AS (
  SELECT log_id, record_id, b, ROW_NUMBER() OVER (PARTITION BY log_id, record_id ORDER BY b) AS i,
         LEAD(b) OVER (PARTITION BY log_id, record_id ORDER BY b) AS b_next
  FROM bounds
), spans AS (
  SELECT rw.log_id, rw.record_id, rw.op, rw.k, a.i AS i0, z.i AS i1
  FROM rw JOIN cuts a ON a.log_id = rw.log_id AND a.record_id = rw.record_id AND a.b = rw.lo
          JOIN cuts z ON z.log_id = rw.log_id AND z.record_id = rw.record_id AND z.b = rw.hi
), pieces AS (
  SELECT s.log_id, s.record_id, s.op, s.k, p.i, p.b_next - p.b AS n,
         LAG(s.op) OVER (PARTITION BY s.log_id, s.record_id, p.i ORDER BY s.k) AS prev
  FROM (SELECT log_id, record_id, op, k, EXPLODE(SEQUENCE(i0, i1 - 1)) AS i FROM spans) s
  JOIN cuts p ON p.log_id = s.log_id AND p.record_id = s.record_id AND p.i = s.i
), counts AS (
  SELECT log_id, record_id,
         SUM(CASE WHEN op = 'read' AND prev = 'read' THEN n ELSE 0 END) AS RAR,
         SUM(CASE WHEN op = 'read' AND prev = 'write' THEN n ELSE 0 END) AS RAW,
         SUM(CASE WHEN op = 'write' AND prev = 'read' THEN n ELSE 0 END) AS WAR,
         SUM(CASE WHEN op = 'write' AND prev = 'write' THEN n ELSE 0 END) AS WAW,
         SUM(CASE WHEN op = 'read' THEN n ELSE 0 END) AS read,
         SUM(CASE WHEN op = 'write' THEN n ELSE 0 END) AS write,
         SUM(CASE WHEN op = 'read' AND prev IS NULL THEN n ELSE 0 END) AS first_read,
         SUM(CASE WHEN op = 'write' AND prev IS NULL THEN n ELSE 0 END) AS first_write
  FROM pieces GROUP BY log_id, record_id
)
SELECT x.log_id, x.record_id, {file_name} AS file_name, x.RAR, x.RAW, x.WAR, x.WAW, x.read, x.write,
       x.first_read, x.first_write
FROM counts x LEFT JOIN names n ON n.log_id = x.log_id AND n.record_id = x.record_id
"""

SHARED_FILES = """
WITH touched AS ({touched}),
expanded AS (
  SELECT t.log_id, t.record_id,
         EXPLODE(CASE WHEN t.rank = -1 AND j.nprocs IS NOT NULL THEN SEQUENCE(0, CAST(j.nprocs AS INT) - 1)
                      ELSE ARRAY(CAST(t.rank AS INT)) END) AS rank
  FROM touched t LEFT JOIN {jobs} j ON j.log_id = t.log_id
)
SELECT e.log_id, e.record_id, COALESCE(f.name, CONCAT('<record ', CAST(e.record_id AS STRING), '>')) AS file_name,
       ARRAY_SORT(COLLECT_SET(e.rank)) AS ranks, COUNT(DISTINCT e.rank) AS num_ranks
FROM expanded e LEFT JOIN bronze_files f ON f.log_id = e.log_id AND f.record_id = e.record_id
GROUP BY e.log_id, e.record_id, f.name
"""

JOB_SUMMARY = """
SELECT j.*, COALESCE(t.n_tags, 0) AS n_tags, t.tags,
       a.activity_source, a.activity_bin_s, a.activity_read_bytes, a.activity_write_bytes
FROM silver_job_features j LEFT JOIN ({tags}) t ON t.log_id = j.log_id
LEFT JOIN ({activity}) a ON a.log_id = j.log_id
"""
# IOFrame.activity over the layers every byte reaches (POSIX, STDIO; DFS in HEATMAP), summed: one
# series per job. Bins as IOFrame's: the log's widest HEATMAP bin width, else 1/100 of max(last op
# end, run time); an op's bin is Python's start_s // width (floor of (start - start mod width) /
# width, rounded as CPython rounds it), so SQL and IOFrame put an op on a bin edge in the same bin.
# A HEATMAP row of narrower bins (Darshan coarsens a rank's bins by doubling their width: its
# collapse_heatmap) is re-binned first, its bin i into bin floor(i * width / widest), as
# `apps.analysis.timeline.rebin` does for whole multiples; a ratio that is not whole (Darshan
# writes none) puts each bin whole where it starts, where `rebin` spreads it over the overlap.
ACTIVITY = """
WITH rw AS (
  SELECT log_id, source, func, op, length, start_s, end_s FROM {io_ops}
  WHERE op IN ('read', 'write') AND length IS NOT NULL AND start_s IS NOT NULL
), heat AS (
  SELECT * FROM {heatmap} WHERE module IN ('POSIX', 'STDIO', 'DFS')
), widths AS (
  SELECT log_id, MAX(bin_width_s) AS w FROM {heatmap} GROUP BY log_id
), op_logs AS (
  SELECT r.log_id, MAX(r.source = 'RECORDER') AS recorder,
         COALESCE(FIRST(h.w), GREATEST(GREATEST(MAX(r.end_s), COALESCE(FIRST(j.run_time_s), 0.0)), 1e-9) / 100) AS w
  FROM rw r LEFT JOIN widths h ON h.log_id = r.log_id LEFT JOIN {jobs} j ON j.log_id = r.log_id
  GROUP BY r.log_id
), op_bins AS (
  SELECT log_id, CAST(GREATEST(FLOOR(d) + IF(d - FLOOR(d) > 0.5, 1, 0), 0) AS BIGINT) AS bin, op, length
  FROM (SELECT r.*, (r.start_s - r.start_s % o.w) / o.w AS d FROM rw r JOIN op_logs o ON o.log_id = r.log_id
        WHERE r.source = 'DXT_POSIX' OR (r.source = 'RECORDER' AND NOT STARTSWITH(r.func, 'MPI_')
                                         AND NOT STARTSWITH(r.func, 'H5')))
), heat_bins AS (
  SELECT h.log_id, CAST(FLOOR(i * h.bin_width_s / x.w + 1e-9) AS BIGINT) AS bin,
         COALESCE(TRY_ELEMENT_AT(h.read_bytes, CAST(i + 1 AS INT)), 0) AS rb,
         COALESCE(TRY_ELEMENT_AT(h.write_bytes, CAST(i + 1 AS INT)), 0) AS wb
  FROM heat h JOIN widths x ON x.log_id = h.log_id
  LATERAL VIEW EXPLODE(SEQUENCE(CAST(0 AS BIGINT), h.nbins - 1)) e AS i
  WHERE h.log_id NOT IN (SELECT log_id FROM op_logs)
), bins AS (
  SELECT log_id, bin, SUM(CASE WHEN op = 'read' THEN GREATEST(length, 0) ELSE 0 END) AS rb,
         SUM(CASE WHEN op = 'write' THEN GREATEST(length, 0) ELSE 0 END) AS wb FROM op_bins GROUP BY log_id, bin
  UNION ALL
  SELECT log_id, bin, SUM(rb), SUM(wb) FROM heat_bins GROUP BY log_id, bin
), series AS (
  SELECT log_id, MAX(bin) AS last, MAP_FROM_ENTRIES(COLLECT_LIST(STRUCT(bin, rb))) AS r,
         MAP_FROM_ENTRIES(COLLECT_LIST(STRUCT(bin, wb))) AS w
  FROM bins GROUP BY log_id
), sources AS (
  SELECT log_id, IF(recorder, 'recorder', 'dxt') AS activity_source, w AS activity_bin_s FROM op_logs
  UNION ALL
  SELECT log_id, 'heatmap', w FROM widths WHERE log_id NOT IN (SELECT log_id FROM op_logs)
)
SELECT s.log_id, s.activity_source, s.activity_bin_s,
       TRANSFORM(SEQUENCE(CAST(0 AS BIGINT), x.last), i -> CAST(COALESCE(x.r[i], 0) AS BIGINT)) AS activity_read_bytes,
       TRANSFORM(SEQUENCE(CAST(0 AS BIGINT), x.last), i -> CAST(COALESCE(x.w[i], 0) AS BIGINT)) AS activity_write_bytes
FROM sources s LEFT JOIN series x ON x.log_id = s.log_id
"""
NO_ACTIVITY = (
    "SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS STRING) AS activity_source, "
    "CAST(NULL AS DOUBLE) AS activity_bin_s, CAST(NULL AS ARRAY<BIGINT>) AS activity_read_bytes, "
    "CAST(NULL AS ARRAY<BIGINT>) AS activity_write_bytes"
)
TAG_COUNTS = """
SELECT log_id, SUM(n) AS n_tags, MAP_FROM_ENTRIES(COLLECT_LIST(STRUCT(tag, n))) AS tags
FROM (SELECT log_id, tag, COUNT(*) AS n FROM silver_bottleneck_tags GROUP BY log_id, tag) GROUP BY log_id
"""
ROW_COUNTS = """
SELECT log_id, COUNT(*) AS n_tags, CAST(NULL AS MAP<STRING, BIGINT>) AS tags FROM silver_bottleneck_tags GROUP BY log_id
"""
NO_TAGS = (
    "SELECT CAST(NULL AS STRING) AS log_id, CAST(0 AS BIGINT) AS n_tags, "
    "CAST(NULL AS MAP<STRING, BIGINT>) AS tags"
)


def _is_delta(spark, path: str) -> bool:
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


def _counters(have: set[str]) -> str:
    parts = []
    for module, (p, level) in COUNTER_SQL.items():
        if f"bronze_{module}" in have:
            for kind, nbytes, time in (
                ("read", f"{p}_BYTES_READ", f"{p}_F_READ_TIME"),
                ("write", f"{p}_BYTES_WRITTEN", f"{p}_F_WRITE_TIME"),
                ("meta", "CAST(0 AS BIGINT)", f"{p}_F_META_TIME"),
            ):
                parts.append(
                    f"SELECT log_id, rank, record_id, {level} AS level, '{kind}' AS kind, "
                    f"{nbytes} AS bytes, CAST({time} AS DOUBLE) AS time_s FROM bronze_{module}"
                )
    return "\n  UNION ALL ".join(parts) or NO_COUNTERS


def _prismio_views(have: set[str]) -> dict[str, str]:
    """The SQL of v_io_bandwidth, v_io_time, v_access_pattern, v_readwrite_pattern the lake's tables allow."""
    if "bronze_files" not in have:
        return {}
    io_ops = "bronze_io_ops" if "bronze_io_ops" in have else f"({NO_OPS})"
    jobs = "bronze_jobs" if "bronze_jobs" in have else NO_JOBS
    top = TOP_OPS.format(level=LEVEL, io_ops=io_ops)
    timed = TIMED.format(io_ops=io_ops, counters=_counters(have))
    fmt = dict(top=top, timed=timed, file_name=FILE_NAME, jobs=jobs)
    return {
        "v_io_bandwidth": IO_BANDWIDTH.format(**fmt),
        "v_io_time": IO_TIME.format(**fmt),
        "v_access_pattern": ACCESS_PATTERN.format(
            **fmt, darshan=DARSHAN_ACCESS if "bronze_posix" in have else ""
        ),
        "v_readwrite_pattern": READWRITE_PATTERN.format(**fmt),
    }


def _activity(have: set[str]) -> str:
    if "bronze_io_ops" not in have and "bronze_heatmap" not in have:
        return NO_ACTIVITY
    heatmap = (
        "bronze_heatmap"
        if "bronze_heatmap" in have
        else (
            "(SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS STRING) AS module, "
            "CAST(NULL AS DOUBLE) AS bin_width_s, "
            "CAST(NULL AS BIGINT) AS nbins, CAST(NULL AS ARRAY<BIGINT>) AS read_bytes, "
            "CAST(NULL AS ARRAY<BIGINT>) AS write_bytes WHERE FALSE)"
        )
    )
    io_ops = "bronze_io_ops" if "bronze_io_ops" in have else f"({NO_OPS})"
    jobs = "bronze_jobs" if "bronze_jobs" in have else NO_JOBS
    return ACTIVITY.format(io_ops=io_ops, heatmap=heatmap, jobs=jobs)


def _summary_views(spark, have: set[str]) -> dict:
    """The job-summary views (features/job_summary.py) the lake's bronze tables allow."""
    from features import job_summary as js

    modules = {
        m: spark.table(f"bronze_{t}") for m, t in SUMMARY_TABLES.items() if f"bronze_{t}" in have
    }
    if not modules:
        return {}
    jobs = spark.table("bronze_jobs") if "bronze_jobs" in have else spark.sql(NO_JOBS_NPROCS)
    out = {
        "io_cost": js.io_cost(modules, jobs),
        "file_categories": js.file_categories(modules),
        "access_sizes": js.access_sizes(modules),
        "common_access_sizes": js.common_access_sizes(modules),
        "op_counts": js.op_counts(modules),
    }
    if "bronze_files" in have:
        out["data_access_by_root"] = js.data_access_by_root(modules, spark.table("bronze_files"))
    return {k: v for k, v in out.items() if v is not None}


def register_views(spark, lake: str) -> list[str]:
    """Create (or replace) the temp views of the lake's tables and the analysis views; returns their names."""
    made = []

    def view(name: str, df) -> None:
        df.createOrReplaceTempView(name)
        made.append(name)

    for table, spec in TABLES.items():
        if _is_delta(spark, spec.path(lake)):
            view(f"{spec.layer}_{table}", spark.read.format("delta").load(spec.path(lake)))
    tags_path = f"{lake.rstrip('/')}/silver/bottleneck_tags"
    if "silver_bottleneck_tags" not in made and _is_delta(
        spark, tags_path
    ):  # before schemas knew it
        view("silver_bottleneck_tags", spark.read.format("delta").load(tags_path))

    have = set(made)
    for name, sql in _prismio_views(have).items():
        view(name, spark.sql(sql))
    if {"bronze_io_ops", "bronze_heatmap"} & have:
        view("v_job_activity", spark.sql(_activity(have)))
    touched = [
        f"SELECT log_id, record_id, rank FROM bronze_{t}"
        for t in ("io_ops", "posix", "mpiio", "stdio")
        if f"bronze_{t}" in have
    ]
    if touched and "bronze_files" in have:
        jobs = (
            "bronze_jobs"
            if "bronze_jobs" in have
            else "(SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS LONG) AS nprocs)"
        )
        union = " UNION ALL ".join(touched)
        view(
            "v_shared_files",
            spark.sql(
                SHARED_FILES.format(
                    touched=f"SELECT * FROM ({union}) WHERE record_id IS NOT NULL", jobs=jobs
                )
            ),
        )
    derived = {t: spark.table(f"bronze_{t}") for t in DERIVED_MODULES if f"bronze_{t}" in have}
    if derived:
        jobs = spark.table("bronze_jobs") if "bronze_jobs" in have else spark.sql(NO_JOBS_NPROCS)
        view("derived_metrics", derived_metrics(derived, jobs))
    for name, df in _summary_views(spark, have).items():
        view(name, df)
    if "silver_job_features" in have:
        tags = NO_TAGS
        if "silver_bottleneck_tags" in have:
            tags = (
                TAG_COUNTS if "tag" in spark.table("silver_bottleneck_tags").columns else ROW_COUNTS
            )
        activity = "SELECT * FROM v_job_activity" if "v_job_activity" in made else NO_ACTIVITY
        view("v_job_summary", spark.sql(JOB_SUMMARY.format(tags=tags, activity=activity)))
    return made
