"""The covering stage's transform, this tree's against a base commit's: identical rows, time.

    .venv/bin/python bench/covering_cost.py --lake LAKE [--rounds 2] [--base REV]

Loads `features/covering_sets.py` of `--base` (default HEAD, from git, as a module of its own,
shipped to the Python workers by value) and of this tree, reads the covering stage's inputs
(pipeline.yaml; whole tables) from LAKE once, and runs both `covering_sets` transforms on them:
asserts the collected rows identical (keyed by log_id, rank, record_id; every column, floats
exactly), and prints each one's seconds (build + cache + count, as the runner does; best of
`--rounds`, old and new alternating) and the ratio new/old. Reads the lake only.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from tags_cost import alternate, load_module, verdict  # noqa: E402  (bench/ is on sys.path when run as a script)

MODULE = "features/covering_sets.py"


def modules(rev: str, work: Path) -> dict:
    from pyspark import cloudpickle  # the copy PySpark pickles UDFs with

    src = subprocess.run(["git", "show", f"{rev}:{MODULE}"], cwd=ROOT, check=True, capture_output=True, text=True)
    (work / "old_covering_sets.py").write_text(src.stdout)
    out = {"old": load_module("old_covering_sets", work / "old_covering_sets.py"),
           "new": load_module("new_covering_sets", ROOT / MODULE)}
    for mod in out.values():  # not importable on the workers under these names: pickle the code itself
        sys.modules[mod.__name__] = mod
        cloudpickle.register_pickle_by_value(mod)
    return out


def read_inputs(spark, lake: str) -> dict:
    from iolake.lake import read_or_empty
    from iolake.pipeline import table_spec
    from iolake.runner import stage_by_name

    return {t.split("/", 1)[1]: read_or_empty(spark, table_spec(t), lake) for t in stage_by_name("covering").tables_in}


def run(mod, t: dict) -> tuple[float, list]:
    t0 = time.perf_counter()
    df = mod.covering_sets(t["io_ops"], t["posix"], t["mpiio"], t["stdio"], t["files"]).cache()
    df.count()
    seconds = time.perf_counter() - t0
    rows = df.collect()
    df.unpersist()
    return seconds, rows


def compare(old: list, new: list) -> list[str]:
    def keyed(rows):
        return {(r.log_id, r.rank, r.record_id): r for r in rows}

    a, b = keyed(old), keyed(new)
    problems = [f"row count: old {len(old)}, new {len(new)}"] if len(old) != len(new) else []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            problems.append(f"{key}: only in {'new' if key not in a else 'old'}")
            continue
        for col in a[key].__fields__:
            x, y = a[key][col], b[key][col]
            if type(x) is not type(y) or x != y:
                problems.append(f"{key} {col}: old {x!r} != new {y!r}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake", required=True, help="lake root to read (not modified)")
    ap.add_argument("--base", default="HEAD", help="git revision of the old implementation")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    from iolake.config import load_config
    from iolake.spark import session_from_config

    conf = load_config("local", overrides={"lake": {"root": args.lake}})
    spark = session_from_config(conf)
    mods = modules(args.base, Path(tempfile.mkdtemp(prefix="iolake-covering-cost-")))
    inputs = read_inputs(spark, args.lake)
    best, rows = alternate(args.rounds, lambda name: run(mods[name], inputs))
    problems = compare(rows["old"], rows["new"])
    print(f"lake {args.lake}: {len(rows['new']):,} rows, {len({r.log_id for r in rows['new']}):,} logs covered")
    print(f"old {best['old']:.1f} s, new {best['new']:.1f} s, new/old {best['new'] / best['old']:.2f}")
    return verdict(problems)


if __name__ == "__main__":
    sys.exit(main())
