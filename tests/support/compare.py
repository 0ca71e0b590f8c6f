"""Are two lakes the same, table by table and row by row?

`compare(lake_a, lake_b)` reads every table of `schemas.TABLES` present in either lake with
delta-rs (no Spark), drops the columns that record *when* or *by which run* a row was written
(they differ between any two runs), sorts the rest by every column and compares them exactly:
values, nulls, types. Used by `bench.compare_lakes` (refactors must not change a table) and by
the tests that run the pipeline on another store (an S3 lake against a local one).
"""

from __future__ import annotations

import json

# Columns that say when, by which run or at which table version a row was written.
VOLATILE = {
    "ingest_run_id",
    "ingested_at",
    "decode_s",
    "scored_at",
    "advised_at",
    "source_version",
    "run_id",  # ops/empty_logs: the run that recorded the log
    "done_table_id",  # ops/empty_logs: the Delta id of that build of the done table
    "updated_at",  # the fleet marts: when the stage last recomputed the row's month
    "done_at",  # ops/fleet_done: when the fleet stage counted the log
}
# Columns volatile in one table only (the same name elsewhere is data): fleet_health counts the
# ops/runs of its night (a property of the runs, as ops/runs itself) and its night is the
# ingest's date.
VOLATILE_IN = {"fleet_health": {"runs", "failed_runs", "run_seconds", "night", "month"}}
SKIP = {"runs"}  # ops/runs: one row per run, different by nature


def read(lake: str, spec):
    """The table through the project's Spark-free reader, without the volatile columns (None: absent)."""
    from iolake.lake import arrow

    if not arrow.exists(lake, spec):
        return None
    t = arrow.read(lake, spec)
    drop = VOLATILE | VOLATILE_IN.get(spec.name, set())
    return t.select([c for c in t.column_names if c not in drop])


def _value(v, digits: int | None = None):
    """JSON text of a value; a map (a list of key/value pairs) in key order, so maps compare as maps;
    with `digits`, floats rounded to that many significant digits."""
    if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        v = sorted(v, key=lambda kv: str(kv[0]))
    if (
        digits is not None
        and isinstance(v, float)
        and v == v
        and v not in (float("inf"), float("-inf"))
    ):
        v = float(f"{v:.{digits}g}")
    return json.dumps(v, sort_keys=True, default=str)


def canonical(t, digits: int | None = None):
    """Rows as a sorted list of tuples of JSON text (lists, maps, NaN and nulls compare exactly)."""
    return sorted(tuple(_value(r[c], digits) for c in t.column_names) for r in t.to_pylist())


def compare(lake_a: str, lake_b: str) -> list[dict]:
    from schemas import TABLES

    out = []
    for name, spec in TABLES.items():
        if name in SKIP:
            continue
        a, b = read(lake_a, spec), read(lake_b, spec)
        row = {
            "table": f"{spec.layer}/{name}",
            "rows_a": None if a is None else a.num_rows,
            "rows_b": None if b is None else b.num_rows,
        }
        if a is None and b is None:
            continue
        if a is None or b is None:
            row["equal"], row["why"] = False, "missing in one lake"
        elif a.column_names != b.column_names:
            row["equal"], row["why"] = (
                False,
                f"columns differ: {sorted(set(a.column_names) ^ set(b.column_names))}",
            )
        elif a.schema != b.schema:
            row["equal"], row["why"] = False, "column types differ"
        else:
            ca, cb = canonical(a), canonical(b)
            row["equal"] = ca == cb
            if not row["equal"] and canonical(a, 12) == canonical(b, 12):
                row["why"] = "equal to 12 significant digits (float sums in another order)"
            elif not row["equal"]:
                diff = next(
                    (
                        i
                        for i, c in enumerate(a.column_names)
                        if [r[i] for r in ca] != [r[i] for r in cb]
                    ),
                    None,
                )
                row["why"] = (
                    f"rows differ (first differing column: {a.column_names[diff] if diff is not None else '?'})"
                )
        out.append(row)
    return out
