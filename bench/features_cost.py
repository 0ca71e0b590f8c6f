"""The file features transform, this tree's against a base commit's: identical rows, time.

    .venv/bin/python bench/features_cost.py --lake LAKE [--rounds 2] [--base REV]

Loads `features/file_features.py` of `--base` (default HEAD, from git, as a module of its own) and of
this tree, reads the features stage's inputs (pipeline.yaml; whole tables) from LAKE once, and runs
both `file_features.transform`s on them: asserts the collected rows identical (keyed by log_id and
record_id; every column, floats exactly, NaN equal to NaN), and prints each one's seconds (build +
cache + count, as the runner does; best of `--rounds`, old and new alternating), the ratio new/old
and the Exchange nodes of each physical plan. Reads the lake only. (`job_features` is built on
these rows and does not read `io_ops` itself.)
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from covering_cost import compare, setup  # noqa: E402  (bench/ is on sys.path when run as a script)
from tags_cost import alternate, cached_rows, exchanges, verdict  # noqa: E402

MODULE = "features/file_features.py"


def read_inputs(spark, lake: str) -> dict:
    from iolake.lake import read_or_empty
    from iolake.pipeline import table_spec
    from iolake.runner import stage_by_name

    return {t.split("/", 1)[1]: read_or_empty(spark, table_spec(t), lake) for t in stage_by_name("features").tables_in}


def run(mod, tables: dict, fconf) -> tuple[float, list, int]:
    return (*cached_rows(lambda: mod.transform(tables, fconf)), exchanges(mod.transform(tables, fconf)))


def main() -> int:
    args, conf, spark, mods = setup(__doc__, MODULE)
    tables = read_inputs(spark, args.lake)
    plan = {}

    def timed(name):
        seconds, rows, plan[name] = run(mods[name], tables, conf.features)
        return seconds, rows

    best, rows = alternate(args.rounds, timed)
    problems = compare(rows["old"], rows["new"], key=lambda r: (r.log_id, r.record_id))
    print(f"lake {args.lake}: {len(rows['new']):,} file rows, {len({r.log_id for r in rows['new']}):,} logs")
    print(f"old {best['old']:.1f} s, new {best['new']:.1f} s, new/old {best['new'] / best['old']:.2f}")
    print(f"Exchange nodes: old {plan['old']}, new {plan['new']}")
    return verdict(problems)


if __name__ == "__main__":
    sys.exit(main())
