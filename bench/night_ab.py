"""One stage over one night's logs again, a base commit against this tree, on a real lake.

    python -m bench.night_ab LAKE --stage watch --month 2026-01 [--base REV] [--rounds 2]

The lake already holds the night (`pipeline_scale --grow` put it there). Before each run the
month's rows are deleted from the stage's outputs partitioned by `job_month` (watch:
gold/app_runs; advise: gold/tuning_advice), so `iolake stage NAME` finds the
night's logs to do again and does exactly the night's work on the lake as it stands. Each round
runs the base commit (its files extracted by `git archive`; `--base`, default HEAD) and this tree,
alternating which goes first (`bench.common.alternate`); each run is a child `iolake stage` with
its own Spark, its working directory and PYTHONPATH the tree it runs. Prints each run's wall
seconds and the stage's own `done in` seconds, the best of each side and the ratio this / base,
and whether the month's rows each side wrote are the same (every column but timestamps and run
ids, sorted); exit code 1 when they differ. The lake ends as the last run left it. It writes the
lake: use one you can re-run (or a copy).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from bench.common import (
    ROOT,
    STAGE_DONE,
    alternate,
    checkout,
    iolake_cmd,
    parser,
    result,
    scratch,
    tree_env,
)


def month_tables(stage: str) -> list:
    """The stage's output tables partitioned by job_month (their month is what a night adds)."""
    from iolake.pipeline import table_spec
    from iolake.runner import stage_by_name

    out = []
    for name in stage_by_name(stage).outputs:
        spec = table_spec(name)
        if spec is not None and "job_month" in spec.partition_by:
            out.append(spec)
    return out


def delete_month(spark, lake: str, specs, month: str) -> None:
    for spec in specs:
        path = spec.path(lake)
        if Path(path, "_delta_log").is_dir():
            spark.sql(f"DELETE FROM delta.`{path}` WHERE job_month = '{month}'")


def month_rows(lake: str, specs, month: str) -> dict:
    """Each table's rows of the month, as sorted tuples of strings, without timestamps and run ids."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    out = {}
    for spec in specs:
        ds = DeltaTable(spec.path(lake)).to_pyarrow_dataset()
        t = ds.to_table(filter=pc.field("job_month") == month)
        keep = [
            f.name
            for f in t.schema
            if not pa.types.is_timestamp(f.type) and not f.name.endswith(("run_id", "_at"))
        ]
        out[spec.name] = sorted(repr(sorted(r.items())) for r in t.select(keep).to_pylist())
    return out


def run_stage(tree: Path, stage: str, lake: str) -> tuple[float, float | None]:
    """Wall seconds of `iolake stage` run with the code of `tree`, and the stage's own `done in`."""
    t0 = time.perf_counter()
    p = subprocess.run(
        iolake_cmd("stage", stage, "--lake", lake),
        cwd=tree,
        env=tree_env(tree),
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit(f"iolake stage {stage} ({tree}) exited {p.returncode}")
    done = [float(m.group(2)) for m in map(STAGE_DONE.match, p.stdout.splitlines()) if m]
    return wall, (done[-1] if done else None)


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("lake", help="a lake that already holds the month's logs")
    ap.add_argument("--stage", required=True, help="the stage to run again (e.g. watch, advise)")
    ap.add_argument("--month", required=True, help="the night's job_month, YYYY-MM")
    ap.add_argument("--base", default="HEAD", help="the commit to compare against (default HEAD)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each side, alternating")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"\d{4}-\d{2}", args.month):
        raise SystemExit(f"--month: YYYY-MM, got {args.month!r}")
    lake = str(Path(args.lake).resolve())
    specs = month_tables(args.stage)
    if not specs:
        raise SystemExit(f"stage {args.stage!r} writes no table partitioned by job_month")

    from iolake.config import load_config
    from iolake.spark import session_from_config

    spark = session_from_config(load_config("local", None, {"lake": {"root": lake}}))
    stage_s: dict[str, float] = {}
    with scratch("night_ab") as tmp:
        trees = {"base": checkout(args.base, tmp / "base"), "this": ROOT}

        def timed(side: str):
            delete_month(spark, lake, specs, args.month)
            wall, own = run_stage(trees[side], args.stage, lake)
            if own is not None:
                stage_s[side] = min(stage_s.get(side, own), own)
            rows = month_rows(lake, specs, args.month)
            print(f"    {side}: stage {own} s, {sum(map(len, rows.values())):,} rows", flush=True)
            return wall, rows

        best, rows = alternate(args.rounds, timed)
    same = rows["base"] == rows["this"]
    result(
        "night_ab",
        f"{args.stage} over {args.month}: base {args.base} {best['base']:.1f} s wall "
        f"({stage_s.get('base', float('nan')):.1f} s stage), this {best['this']:.1f} s "
        f"({stage_s.get('this', float('nan')):.1f} s): {best['this'] / best['base']:.2f}x wall; "
        f"the month's rows {'identical' if same else 'DIFFER'}",
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
