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
from tests.support.compare import compare


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
