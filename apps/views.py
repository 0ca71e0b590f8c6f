"""SQL views over the lake for analysts: every table as `<layer>_<table>`, plus analysis views.

Reads: every table of `schemas.TABLES` the lake holds (silver/bottleneck_tags too, if present);
writes nothing: `register_views` creates session-scoped temp views. All analysis SQL lives here.

- `v_io_bandwidth`: per (log_id, rank, file): bytes, io_time_s and io_bandwidth (bytes/s) of
  the traced reads and writes (bronze_io_ops), counting only each file's top layer
  (MPI-IO over POSIX/STDIO over HDF5) — IOFrame.io_bandwidth's rule for traced files.
- `v_shared_files`: per (log_id, file): the ranks that touched it (ops and POSIX/MPI-IO/STDIO
  records; a record reduced over all ranks, rank -1, stands for ranks 0..nprocs-1) and their number.
- `v_job_summary`: silver_job_features with `n_tags` (rows of silver_bottleneck_tags) and
  `tags` (tag -> rows, when that table has a `tag` column) per log; 0 and null when the tags
  table does not exist (checked at each call).
"""
from __future__ import annotations

from schemas import TABLES

LEVEL = """CASE WHEN source = 'DXT_MPIIO' OR STARTSWITH(func, 'MPI_File') THEN 2
                WHEN STARTSWITH(func, 'H5') THEN 0 ELSE 1 END"""

IO_BANDWIDTH = f"""
WITH ops AS (
  SELECT log_id, rank, record_id, op, length, end_s - start_s AS duration_s, {LEVEL} AS level
  FROM bronze_io_ops WHERE record_id IS NOT NULL
), top AS (
  SELECT *, MAX(level) OVER (PARTITION BY log_id, record_id) AS top_level FROM ops
)
SELECT t.log_id, t.rank, t.record_id,
       COALESCE(f.name, CONCAT('<record ', CAST(t.record_id AS STRING), '>')) AS file_name,
       SUM(t.length) AS bytes, SUM(t.duration_s) AS io_time_s,
       CASE WHEN SUM(t.duration_s) > 0 THEN SUM(t.length) / SUM(t.duration_s) END AS io_bandwidth
FROM top t LEFT JOIN bronze_files f ON f.log_id = t.log_id AND f.record_id = t.record_id
WHERE t.level = t.top_level AND t.op IN ('read', 'write') AND t.length IS NOT NULL
GROUP BY t.log_id, t.rank, t.record_id, f.name
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
SELECT j.*, COALESCE(t.n_tags, 0) AS n_tags, t.tags
FROM silver_job_features j LEFT JOIN ({tags}) t ON t.log_id = j.log_id
"""
TAG_COUNTS = """
SELECT log_id, SUM(n) AS n_tags, MAP_FROM_ENTRIES(COLLECT_LIST(STRUCT(tag, n))) AS tags
FROM (SELECT log_id, tag, COUNT(*) AS n FROM silver_bottleneck_tags GROUP BY log_id, tag) GROUP BY log_id
"""
ROW_COUNTS = """
SELECT log_id, COUNT(*) AS n_tags, CAST(NULL AS MAP<STRING, BIGINT>) AS tags FROM silver_bottleneck_tags GROUP BY log_id
"""
NO_TAGS = "SELECT CAST(NULL AS STRING) AS log_id, CAST(0 AS BIGINT) AS n_tags, CAST(NULL AS MAP<STRING, BIGINT>) AS tags"


def _is_delta(spark, path: str) -> bool:
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


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
    if "silver_bottleneck_tags" not in made and _is_delta(spark, tags_path):  # before schemas knew it
        view("silver_bottleneck_tags", spark.read.format("delta").load(tags_path))

    have = set(made)
    if {"bronze_io_ops", "bronze_files"} <= have:
        view("v_io_bandwidth", spark.sql(IO_BANDWIDTH))
    touched = [f"SELECT log_id, record_id, rank FROM bronze_{t}" for t in ("io_ops", "posix", "mpiio", "stdio")
               if f"bronze_{t}" in have]
    if touched and "bronze_files" in have:
        jobs = "bronze_jobs" if "bronze_jobs" in have else "(SELECT CAST(NULL AS STRING) AS log_id, CAST(NULL AS LONG) AS nprocs)"
        union = " UNION ALL ".join(touched)
        view("v_shared_files", spark.sql(SHARED_FILES.format(
            touched=f"SELECT * FROM ({union}) WHERE record_id IS NOT NULL", jobs=jobs)))
    if "silver_job_features" in have:
        tags = NO_TAGS
        if "silver_bottleneck_tags" in have:
            tags = TAG_COUNTS if "tag" in spark.table("silver_bottleneck_tags").columns else ROW_COUNTS
        view("v_job_summary", spark.sql(JOB_SUMMARY.format(tags=tags)))
    return made
