"""The lake without Spark or a JVM: delta-rs (`deltalake`) finds each table's live files, DuckDB
runs the SQL over them as Arrow datasets.

    .venv/bin/python examples/without_spark.py --lake lake [--top 10] [--json]

Prints the same three results as `examples/spark_sql.py`, from the same SQL text: the jobs that
moved the most bytes, the quarantined logs and why, the bottleneck tags of each program.
DuckDB's own `delta_scan` would download its `delta` extension at first use; this needs no
download: `DeltaTable(path).to_pyarrow_dataset()` is registered as a view and DuckDB pushes
column selections and filters into it. Works on local folders and on any URI pyarrow.fs and
delta-rs both understand (s3://, ...; credentials from the environment).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import duckdb
import pyarrow.fs as pafs
from deltalake import DeltaTable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_sql import queries, show  # the SQL text and the printing; imports nothing of Spark  # noqa: E402


def _storage_options(uri: str) -> dict | None:
    """delta-rs reads S3 settings from the environment but refuses a plain-HTTP endpoint (an
    S3-compatible server on site) unless told: say so when AWS_ENDPOINT_URL is http://."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
    if uri.startswith(("s3://", "s3a://")) and endpoint.startswith("http://"):
        return {"AWS_ALLOW_HTTP": "true"}
    return None


def open_lake(lake: str) -> tuple[duckdb.DuckDBPyConnection, dict[str, int]]:
    """A DuckDB connection with a view `<layer>_<table>` per Delta table of the lake, and each
    table's Delta version."""
    con = duckdb.connect()
    fs, root = pafs.FileSystem.from_uri(lake if "://" in lake else os.path.abspath(lake))
    versions = {}
    for layer in ("bronze", "silver", "gold"):
        listing = fs.get_file_info(pafs.FileSelector(f"{root}/{layer}", allow_not_found=True))
        for info in sorted(listing, key=lambda i: i.path):
            if fs.get_file_info(f"{info.path}/_delta_log").type != pafs.FileType.Directory:
                continue
            name = f"{layer}_{info.base_name}"
            uri = f"{lake.rstrip('/')}/{layer}/{info.base_name}"
            table = DeltaTable(uri, storage_options=_storage_options(uri))
            con.register(name, table.to_pyarrow_dataset())
            versions[name] = table.version()
    return con, versions


def run(lake: str, top: int = 10) -> dict[str, list[dict] | None]:
    con, versions = open_lake(lake)
    out = {}
    for name, sql in queries(set(versions), top).items():
        if sql is None:
            out[name] = None
            continue
        rel = con.sql(sql)
        out[name] = [dict(zip(rel.columns, row)) for row in rel.fetchall()]
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lake", default="lake", help="lake root (default: ./lake)")
    p.add_argument("--top", type=int, default=10, help="jobs in the top list (default 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = p.parse_args(argv)
    results = run(args.lake, args.top)
    if args.json:
        print(json.dumps(results, default=str))
    else:
        show(results)
    return results


if __name__ == "__main__":
    main()
