"""Spark SQL over the lake: the jobs that moved the most bytes, the quarantined logs and why,
and the bottleneck tags of each program.

    .venv/bin/python examples/spark_sql.py --lake lake [--top 10] [--json]

`register_views` (iolake/views.py) makes every Delta table of the lake a temp view named
`<layer>_<table>` (bronze_jobs, bronze_posix, silver_bottleneck_tags, ...); the rest is plain
SQL, the same text `examples/without_spark.py` runs in DuckDB. Prints three tables, or with
--json one JSON object {"top_jobs": [...], "quarantined": [...], "tags_per_program": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parents[1])
)  # run from a checkout without installing

# Bytes at the POSIX and STDIO layers (MPI-IO and HDF5 reach the file system through POSIX, so
# adding them would count the same bytes twice). A job with neither module moved 0 bytes here.
TOP_JOBS = """
WITH io AS (
  {io}
), per_log AS (
  SELECT log_id, SUM(rd) AS bytes_read, SUM(wr) AS bytes_written FROM io GROUP BY log_id
)
SELECT j.log_id, j.jobid, COALESCE(j.exe, '') AS exe, j.nprocs,
       CAST(COALESCE(p.bytes_read, 0) AS BIGINT) AS bytes_read,
       CAST(COALESCE(p.bytes_written, 0) AS BIGINT) AS bytes_written,
       CAST(COALESCE(p.bytes_read, 0) + COALESCE(p.bytes_written, 0) AS BIGINT) AS total_bytes
FROM bronze_jobs j LEFT JOIN per_log p ON p.log_id = j.log_id
ORDER BY total_bytes DESC, j.log_id
LIMIT {top}
"""
IO = {
    "bronze_posix": "SELECT log_id, POSIX_BYTES_READ AS rd, POSIX_BYTES_WRITTEN AS wr FROM bronze_posix",
    "bronze_stdio": "SELECT log_id, STDIO_BYTES_READ AS rd, STDIO_BYTES_WRITTEN AS wr FROM bronze_stdio",
}
NO_IO = "SELECT CAST(NULL AS STRING) AS log_id, CAST(0 AS BIGINT) AS rd, CAST(0 AS BIGINT) AS wr"

QUARANTINED = """
SELECT source_uri, COALESCE(reason, '') AS reason, size_bytes
FROM bronze_logs WHERE status = 'quarantined'
ORDER BY source_uri
"""

# `program` is the executable's name (silver/job_features); no_issue rows are not findings.
TAGS_PER_PROGRAM = """
SELECT COALESCE(f.program, '') AS program, t.tag, t.severity, COUNT(DISTINCT t.log_id) AS jobs
FROM silver_bottleneck_tags t JOIN silver_job_features f ON f.log_id = t.log_id
WHERE t.tag <> 'no_issue'
GROUP BY COALESCE(f.program, ''), t.tag, t.severity
ORDER BY program, jobs DESC, t.tag, t.severity
"""


def queries(views: set[str], top: int) -> dict[str, str | None]:
    """The SQL of each result, given the views the lake has (None: a table it needs is missing)."""
    io = " UNION ALL ".join(q for v, q in IO.items() if v in views) or NO_IO
    return {
        "top_jobs": TOP_JOBS.format(io=io, top=int(top)) if "bronze_jobs" in views else None,
        "quarantined": QUARANTINED if "bronze_logs" in views else None,
        "tags_per_program": TAGS_PER_PROGRAM
        if {"silver_bottleneck_tags", "silver_job_features"} <= views
        else None,
    }


def run(spark, lake: str, top: int = 10) -> dict[str, list[dict] | None]:
    from apps.views import register_views

    views = set(register_views(spark, lake))
    return {
        name: None if sql is None else [r.asDict() for r in spark.sql(sql).collect()]
        for name, sql in queries(views, top).items()
    }


def show(results: dict[str, list[dict] | None]) -> None:
    for name, rows in results.items():
        print(f"== {name}")
        if rows is None:
            print("(the lake has no table for this yet)\n")
            continue
        if not rows:
            print("(none)\n")
            continue
        cols = list(rows[0])
        cells = [[_cell(r[c]) for c in cols] for r in rows]
        width = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
        print("  ".join(c.ljust(w) for c, w in zip(cols, width)).rstrip())
        for x in cells:
            print("  ".join(v.ljust(w) for v, w in zip(x, width)).rstrip())
        print()


def _cell(v, width: int = 60) -> str:
    """A value for the terminal: long ones (paths, log_ids, reasons) lose their middle, so a path
    keeps its file name and a log_id its first 20 characters (prefix enough for `iolake report`)."""
    s = "" if v is None else str(v)
    return s if len(s) <= width else s[:20] + "…" + s[-(width - 21) :]


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lake", default="lake", help="lake root (default: ./lake)")
    p.add_argument("--top", type=int, default=10, help="jobs in the top list (default 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = p.parse_args(argv)
    from iolake.spark import build_session

    spark = build_session(
        "iolake-example",
        "local[2]",
        {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    results = run(
        spark, str(Path(args.lake).resolve()) if "://" not in args.lake else args.lake, args.top
    )
    if args.json:
        print(json.dumps(results, default=str))
    else:
        show(results)
    return results


if __name__ == "__main__":
    main()
