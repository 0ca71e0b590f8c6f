"""What `bronze/io_ops`'s file layout costs: bytes, point lookups and the stages that read it.

    python -m bench.layout_cost LAKE [--layouts staged maintain zorder1 compact]
        [--stages features covering tags] [--rounds 1] [--lookups 30] [--work DIR]

LAKE is an ingested lake (bronze only is enough; it is only read). Each layout is a copy of it:
- `staged`: as ingest left it (with `ingest.commit: files`, the decode tasks' Parquet files);
- `maintain`: after `iolake maintain` (every table: OPTIMIZE with each spec's Z-order, VACUUM);
- `zorder2`, `zorder1`, `compact`: only `io_ops` rewritten by Delta's OPTIMIZE, Z-ordered by
  (log_id, record_id) (what `maintain` does to it), by log_id alone, or compaction only.

Printed per layout: the rewrite's seconds, `io_ops`'s active files and bytes (DESCRIBE DETAIL),
the mean time of `--lookups` point reads of one log's `io_ops` rows through delta-rs (what
`iolake report` and `IOFrame.from_lake` do), and then each `--stages` stage's own seconds
(`iolake stage NAME`, a fresh JVM each, as a user runs it), layouts interleaved stage by stage
and round by round, each run on a fresh copy of its layout without silver/gold. Ratios are
against the first layout, measured in the same run. Reads LAKE only; copies go to `--work`.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, STAGE_DONE, iolake_cmd, parser, result

IO_OPS_ONLY = {"zorder2": ("log_id", "record_id"), "zorder1": ("log_id",), "compact": ()}
LAYOUTS = ("staged", "maintain", *IO_OPS_ONLY)
DERIVED = ("silver", "gold", "ops/empty_logs")  # what the stages write: never copied


def iolake(*args: str) -> str:
    """Run `iolake ARGS` (this tree) and return its output; exit on failure, with its tail."""
    p = subprocess.run(iolake_cmd(*args), capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(
            f"iolake {' '.join(args)} exited {p.returncode}:\n{(p.stdout + p.stderr)[-2000:]}"
        )
    return p.stdout


def copy_bronze(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(
        src,
        dst,
        ignore=lambda d, names: [
            n for n in names if any((Path(d) / n) == src / x for x in DERIVED)
        ],
    )


def rewrite(spark, lake: Path, layout: str) -> float:
    """Give `lake` the layout; returns the seconds it took (`staged`: nothing to do)."""
    from delta.tables import DeltaTable

    t0 = time.perf_counter()
    if layout == "maintain":
        iolake("maintain", "--lake", str(lake))
    elif layout in IO_OPS_ONLY:
        opt = DeltaTable.forPath(spark, str(lake / "bronze/io_ops")).optimize()
        cols = IO_OPS_ONLY[layout]
        (opt.executeZOrderBy(*cols) if cols else opt.executeCompaction()).collect()
    return time.perf_counter() - t0


def detail(spark, lake: Path) -> tuple[int, int]:
    d = spark.sql(f"DESCRIBE DETAIL delta.`{lake / 'bronze/io_ops'}`").first()
    return int(d.numFiles), int(d.sizeInBytes)


def lookup_ms(lake: Path, log_ids: list[str]) -> float:
    """Mean milliseconds to read one log's io_ops rows through delta-rs."""
    import pyarrow.compute as pc

    from iolake.lake import arrow
    from schemas import TABLES

    t0 = time.perf_counter()
    for i in log_ids:
        arrow.read(str(lake), TABLES["io_ops"], filter=pc.field("log_id").isin([i]))
    return (time.perf_counter() - t0) / len(log_ids) * 1000


def stage_seconds(stage: str, lake: Path) -> float:
    out = iolake("stage", stage, "--lake", str(lake))
    found = [
        float(m.group(2))
        for m in map(STAGE_DONE.match, out.splitlines())
        if m and m.group(1) == stage
    ]
    if not found:
        raise SystemExit(f"iolake stage {stage}: no 'done in' line:\n{out[-2000:]}")
    return found[-1]


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("lake", type=Path)
    ap.add_argument(
        "--layouts",
        nargs="+",
        default=["staged", "maintain", "zorder1", "compact"],
        choices=LAYOUTS,
    )
    ap.add_argument("--stages", nargs="+", default=["features", "covering", "tags"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--lookups", type=int, default=30)
    ap.add_argument(
        "--work",
        type=Path,
        default=None,
        help="scratch folder for the copies (default: a temp dir)",
    )
    args = ap.parse_args(argv)
    if not (args.lake / "bronze/io_ops/_delta_log").is_dir():
        raise SystemExit(f"{args.lake}: no bronze/io_ops Delta table (ingest a lake first)")

    from iolake.config import load_config
    from iolake.lake import arrow
    from iolake.spark import build_session
    from schemas import TABLES

    work = args.work or Path(tempfile.mkdtemp(prefix="layout_cost-"))
    work.mkdir(parents=True, exist_ok=True)
    conf = load_config("local", overrides={"lake": {"root": str(args.lake)}})
    spark = build_session(conf.spark.app_name, conf.spark.master, conf.spark.properties)
    ids = (
        arrow.read(str(args.lake), TABLES["jobs"], columns=["log_id"]).column("log_id").to_pylist()
    )
    random.Random(7).shuffle(ids)
    ids = ids[: args.lookups]

    facts = {}
    for layout in args.layouts:
        base = work / f"base-{layout}"
        copy_bronze(args.lake, base)
        seconds = rewrite(spark, base, layout)
        files, size = detail(spark, base)
        facts[layout] = {"rewrite": seconds, "files": files, "bytes": size}
        print(
            f"{layout}: rewrite {seconds:.1f} s, io_ops {files} files, {size / 2**20:,.1f} MiB",
            flush=True,
        )
    spark.stop()
    for layout in args.layouts:  # after the JVM is gone: delta-rs alone
        facts[layout]["lookup"] = lookup_ms(work / f"base-{layout}", ids)
        print(f"{layout}: {len(ids)} lookups, {facts[layout]['lookup']:.0f} ms each", flush=True)

    times = {(lay, s): [] for lay in args.layouts for s in args.stages}
    for r in range(args.rounds):
        order = args.layouts if r % 2 == 0 else args.layouts[::-1]
        runs = {}
        for layout in order:
            runs[layout] = work / f"run-{layout}"
            copy_bronze(work / f"base-{layout}", runs[layout])
        for stage in args.stages:  # each stage after the ones before it, on every layout in turn
            for layout in order:
                times[layout, stage].append(stage_seconds(stage, runs[layout]))
                print(
                    f"round {r + 1} {stage} {layout}: {times[layout, stage][-1]:.1f} s", flush=True
                )

    first = args.layouts[0]
    print(
        f"\n{'layout':<9} {'rewrite s':>9} {'files':>6} {'MiB':>9} {'x':>5} {'lookup ms':>9} {'x':>5}"
        + "".join(f" {s + ' s':>12} {'x':>5}" for s in args.stages)
    )
    for layout in args.layouts:
        f, b = facts[layout], facts[first]
        row = (
            f"{layout:<9} {f['rewrite']:9.1f} {f['files']:6d} {f['bytes'] / 2**20:9.1f} {f['bytes'] / b['bytes']:5.2f} "
            f"{f['lookup']:9.0f} {f['lookup'] / b['lookup']:5.2f}"
        )
        for s in args.stages:
            best, base = min(times[layout, s]), min(times[first, s])
            row += f" {best:12.1f} {best / base:5.2f}"
        print(row)
    print(f"(stage seconds: best of {args.rounds}; copies in {work})")
    last = args.layouts[-1]
    result(
        "layout_cost",
        f"{last} against {first}: io_ops bytes {facts[last]['bytes'] / facts[first]['bytes']:.2f}x, "
        f"lookups {facts[last]['lookup'] / facts[first]['lookup']:.2f}x, "
        + ", ".join(f"{s} {min(times[last, s]) / min(times[first, s]):.2f}x" for s in args.stages),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
