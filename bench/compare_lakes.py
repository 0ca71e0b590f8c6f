"""Are two lakes the same, table by table and row by row? (Refactors must not change a table.)

    python -m bench.compare_lakes LAKE_A LAKE_B [--json]
    python -m bench.compare_lakes --run BASE_REV [INPUT...] --work DIR [--conf-dir DIR]

The first form reads every table of `schemas.TABLES` present in either lake with delta-rs (no
Spark), drops the columns that record *when* or *by which run* a row was written (they differ
between any two runs), sorts the rest by every column and compares them exactly: values, nulls,
types. It prints one line per table (rows in each, equal or the first differing column) and
exits 1 when any table differs.

The second form makes the two lakes first: `iolake run` of git revision BASE_REV (extracted
with `git archive` into DIR/base-tree) and of this tree, over the same INPUT (default: the shared corpus and the IOR
sweep's Darshan logs), each into its own lake under DIR, then compares them. MLflow outputs
are not tables and are not compared; predictions are (they hold each model's outputs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, checkout, parser, result, shared, tree_env

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
}
SKIP = {"runs"}  # ops/runs: one row per run, different by nature


def read(lake: str, spec):
    """The table through the project's Spark-free reader, without the volatile columns (None: absent)."""
    from iolake.lake import arrow

    if not arrow.exists(lake, spec):
        return None
    t = arrow.read(lake, spec)
    return t.select([c for c in t.column_names if c not in VOLATILE])


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


def run_tree(tree: Path, inputs: list[str], lake: Path, conf_dir: Path | None) -> float:
    env = tree_env(tree)
    cmd = [sys.executable, "-m", "iolake.cli", "run", *inputs, "--lake", str(lake)]
    if conf_dir:
        cmd += ["--conf-dir", str(conf_dir)]
    t = time.monotonic()
    subprocess.run(cmd, cwd=tree, env=env, check=True)
    return time.monotonic() - t


def main(argv=None) -> int:
    p = parser(__spec__.name, __doc__)
    p.add_argument("lakes", nargs="*", help="LAKE_A LAKE_B, or with --run the inputs")
    p.add_argument(
        "--run",
        metavar="BASE_REV",
        help="build both lakes first: BASE_REV's pipeline and this tree's",
    )
    p.add_argument(
        "--work", default="/tmp/compare_lakes", help="folder for the worktree and the two lakes"
    )
    p.add_argument("--conf-dir", help="configuration folder for this tree's run")
    p.add_argument("--base-conf-dir", help="configuration folder for the base revision's run")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.run:
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        inputs = args.lakes or [str(shared("darshan")), str(shared("iosweep", "darshan"))]
        base = work / "base-tree"
        if not base.exists():
            checkout(args.run, base)
        t_base = run_tree(
            base,
            inputs,
            work / "lake-base",
            Path(args.base_conf_dir) if args.base_conf_dir else None,
        )
        t_head = run_tree(
            ROOT, inputs, work / "lake-head", Path(args.conf_dir) if args.conf_dir else None
        )
        print(
            f"[compare] base {args.run}: {t_base:.0f} s; this tree: {t_head:.0f} s ({t_base / t_head:.2f}x)"
        )
        lake_a, lake_b = str(work / "lake-base"), str(work / "lake-head")
    elif len(args.lakes) == 2:
        lake_a, lake_b = args.lakes
    else:
        p.error("give LAKE_A LAKE_B, or --run BASE_REV")
    rows = compare(lake_a, lake_b)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            verdict = "equal" if r["equal"] else f"DIFFERENT: {r.get('why')}"
            print(f"{r['table']:<30} {r['rows_a']!s:>10} {r['rows_b']!s:>10}  {verdict}")
    same = all(r["equal"] for r in rows)
    print(f"[compare] {sum(r['equal'] for r in rows)}/{len(rows)} tables equal")
    result(
        "compare_lakes",
        f"{sum(r['equal'] for r in rows)}/{len(rows)} tables equal"
        + ("" if same else ": " + ", ".join(r["table"] for r in rows if not r["equal"])),
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
