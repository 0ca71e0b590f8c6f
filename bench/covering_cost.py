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
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from tags_cost import alternate, cached_rows, load_module, verdict  # noqa: E402  (bench/ is on sys.path when run as a script)

MODULE = "features/covering_sets.py"


def modules(rev: str, work: Path, module: str = MODULE) -> dict:
    """{"old": `module` as of `rev`, "new": as in this tree}, each a module of its own name."""
    from pyspark import cloudpickle  # the copy PySpark pickles UDFs with

    stem = Path(module).stem
    src = subprocess.run(["git", "show", f"{rev}:{module}"], cwd=ROOT, check=True, capture_output=True, text=True)
    (work / f"old_{stem}.py").write_text(src.stdout)
    out = {"old": load_module(f"old_{stem}", work / f"old_{stem}.py"),
           "new": load_module(f"new_{stem}", ROOT / module)}
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
    return cached_rows(lambda: mod.covering_sets(t["io_ops"], t["posix"], t["mpiio"], t["stdio"], t["files"]))


def same(x, y) -> bool:
    """Equal, and of one type; NaN equals NaN (floats otherwise exactly)."""
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return type(x) is type(y) and x == y


def compare(old: list, new: list, key=lambda r: (r.log_id, r.rank, r.record_id)) -> list[str]:
    """Every difference between two collections of Rows matched by `key`, column by column."""
    a, b = ({key(r): r for r in rows} for rows in (old, new))
    problems = [f"row count: old {len(old)}, new {len(new)}"] if len(old) != len(new) else []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            problems.append(f"{k}: only in {'new' if k not in a else 'old'}")
            continue
        problems += [f"{k} {c}: old {a[k][c]!r} != new {b[k][c]!r}" for c in a[k].__fields__ if not same(a[k][c], b[k][c])]
    return problems


def setup(doc: str, module: str):
    """(args, conf, spark, {"old", "new"} modules) of a `--lake LAKE [--base REV] [--rounds N]` bench."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--lake", required=True, help="lake root to read (not modified)")
    ap.add_argument("--base", default="HEAD", help="git revision of the old implementation")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    from iolake.config import load_config
    from iolake.spark import session_from_config

    conf = load_config("local", overrides={"lake": {"root": args.lake}})
    spark = session_from_config(conf)
    mods = modules(args.base, Path(tempfile.mkdtemp(prefix=f"iolake-{Path(module).stem}-cost-")), module)
    return args, conf, spark, mods


def main() -> int:
    args, _, spark, mods = setup(__doc__, MODULE)
    inputs = read_inputs(spark, args.lake)
    best, rows = alternate(args.rounds, lambda name: run(mods[name], inputs))
    problems = compare(rows["old"], rows["new"])
    print(f"lake {args.lake}: {len(rows['new']):,} rows, {len({r.log_id for r in rows['new']}):,} logs covered")
    print(f"old {best['old']:.1f} s, new {best['new']:.1f} s, new/old {best['new'] / best['old']:.2f}")
    return verdict(problems)


if __name__ == "__main__":
    sys.exit(main())
