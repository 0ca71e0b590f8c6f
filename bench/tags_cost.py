"""The tags stage's transform, this tree's against HEAD's: identical rows, time, plan size.

    .venv/bin/python bench/tags_cost.py --lake LAKE [--rounds 2] [--base REV]
    .venv/bin/python bench/tags_cost.py --lab       # the unit test's hand-made jobs: every rule fires

Loads `features/bottleneck_tags.py` of `--base` (default HEAD, from git, as a module of its own) and
of this tree, reads the tags stage's inputs (pipeline.yaml; whole tables) from LAKE once, and runs
both transforms on them: asserts the collected rows are identical (sorted by log_id, tag; every
column, evidence lists in order, floats exactly), prints each one's seconds (build + cache + count,
as the runner does; best of `--rounds`, old and new alternating), the ratio new/old, the number
of Exchange nodes in each physical plan, and which tags fired how often. Reads the lake only.
`--lab` compares them on tests/features/test_bottleneck_tags.py's jobs instead (each rule's case and
near miss), to cover the rules a lake does not fire.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODULE = "features/bottleneck_tags.py"


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def old_module(rev: str, work: Path):
    src = subprocess.run(["git", "show", f"{rev}:{MODULE}"], cwd=ROOT, check=True, capture_output=True, text=True)
    path = work / "old_bottleneck_tags.py"
    path.write_text(src.stdout)
    return load_module("old_bottleneck_tags", path)


def read_inputs(spark, lake: str) -> tuple[dict, object, object]:
    """The tags stage's declared inputs, whole (as `StageContext.read` reads them, without the new-log filter)."""
    from iolake.lake import read_or_empty
    from iolake.pipeline import table_spec
    from iolake.runner import stage_by_name

    inputs = {t: read_or_empty(spark, table_spec(t), lake) for t in stage_by_name("tags").tables_in}
    bronze = {name.split("/", 1)[1]: df for name, df in inputs.items() if name.startswith("bronze/")}
    return bronze, inputs["silver/file_features"], inputs["silver/job_features"]


def exchanges(df) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange")


def cached_rows(build) -> tuple[float, list]:
    """(seconds to build the frame, cache and count it — as the runner does — and its collected Rows)."""
    t0 = time.perf_counter()
    df = build().cache()
    df.count()
    seconds = time.perf_counter() - t0
    rows = df.collect()
    df.unpersist()
    return seconds, rows


def run(mod, inputs, tconf) -> tuple[float, list, int]:
    seconds, rows = cached_rows(lambda: mod.transform(*inputs, tconf))
    rows = sorted((tuple(r) for r in rows), key=lambda r: (r[0], r[2]))
    return seconds, rows, exchanges(mod.transform(*inputs, tconf))


def compare(old: list, new: list, columns: list[str]) -> list[str]:
    problems = []
    if len(old) != len(new):
        problems.append(f"row count: old {len(old)}, new {len(new)}")
    keyed_old = {(r[0], r[2]): r for r in old}
    keyed_new = {(r[0], r[2]): r for r in new}
    for key in sorted(set(keyed_old) | set(keyed_new)):
        a, b = keyed_old.get(key), keyed_new.get(key)
        if a is None or b is None:
            problems.append(f"{key}: only in {'new' if a is None else 'old'}")
            continue
        for col, x, y in zip(columns, a, b):
            if type(x) is not type(y) or x != y:
                problems.append(f"{key} {col}: old {x!r} != new {y!r}")
    return problems


def alternate(rounds: int, timed) -> tuple[dict, dict]:
    """`timed(name) -> (seconds, rows)` for "old" and "new", alternating over `rounds` (old first in
    odd rounds): best seconds per name, and the last rows of each."""
    best, rows = {}, {}
    for k in range(rounds):
        for name in (("old", "new") if k % 2 == 0 else ("new", "old")):
            seconds, rows[name] = timed(name)
            best[name] = min(best.get(name, seconds), seconds)
            print(f"round {k + 1} {name}: {seconds:.1f} s", flush=True)
    return best, rows


def verdict(problems: list[str]) -> int:
    """Print the differences (the first 40) or that there are none; the exit code."""
    if problems:
        print(f"NOT IDENTICAL: {len(problems)} differences")
        for p in problems[:40]:
            print("  " + p)
        return 1
    print("identical: every row, every column")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--lake", help="lake root to read (not modified)")
    where.add_argument("--lab", action="store_true", help="the unit test's literal rows instead of a lake")
    ap.add_argument("--base", default="HEAD", help="git revision of the old implementation")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    from iolake.config import load_config
    from iolake.spark import session_from_config

    conf = load_config("local", overrides={"lake": {"root": args.lake or "lab"}})
    spark = session_from_config(conf)
    work = Path(tempfile.mkdtemp(prefix="iolake-tags-cost-"))
    mods = {"old": old_module(args.base, work), "new": load_module("new_bottleneck_tags", ROOT / MODULE)}
    if args.lab:
        from tests.features.test_bottleneck_tags import build

        inputs = build().frames(spark)
    else:
        inputs = read_inputs(spark, args.lake)
    plan = {}

    def timed(name):
        seconds, rows, plan[name] = run(mods[name], inputs, conf.tags)
        return seconds, rows

    best, rows = alternate(args.rounds, timed)
    columns = mods["new"].OUT
    problems = compare(rows["old"], rows["new"], columns)
    fired = collections.Counter(r[2] for r in rows["new"])
    print(f"{'lab' if args.lab else 'lake ' + args.lake}: {len(rows['new'])} rows, {len({r[0] for r in rows['new']})} logs")
    print("tags: " + ", ".join(f"{t} {n}" for t, n in sorted(fired.items(), key=lambda x: (-x[1], x[0]))))
    print(f"old {best['old']:.1f} s, new {best['new']:.1f} s, new/old {best['new'] / best['old']:.2f}")
    print(f"Exchange nodes: old {plan['old']}, new {plan['new']}")
    return verdict(problems)


if __name__ == "__main__":
    sys.exit(main())
