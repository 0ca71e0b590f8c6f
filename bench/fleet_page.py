"""`iolake fleet` on marts of a large centre: seconds to read the marts and write the page and
every application page, by part.

Writes the five fleet marts (tests/support/fleet_marts.py `centre`, with `--apps` generated
applications over `--months` months, four mounts' days, a night per day, three model versions)
into a scratch lake with delta-rs, then times `apps.fleet.write` on it (in this process, no
Spark): reading the marts alone, then the whole command (wall and CPU seconds: on a shared
machine the wall time is mostly waiting for a core). `--quick`: 40
applications over 3 months.

    python -m bench.fleet_page [--apps 2000] [--months 12] [--top 15] [--keep DIR]
    python -m bench.fleet_page --from-lake LAKE --times 10 --base-rev REV [--rounds 3] [--keep DIR]

`--from-lake`: the tables the page reads, from an ingested lake, with every run there `--times`
times (gold/app_runs and silver/bottleneck_tags rows repeated under new log_ids, each copy's
start a microsecond later; gold/fleet_app_month's run counts multiplied alike; the other marts and
gold/regressions as they are): a lake of N logs stands in for one of N x times, for what the page
reads and draws, without running the pipeline on it. Then `iolake fleet` of `--base-rev` and of
this tree on it, alternating (`bench.layout_cost`'s `fleet_run`: wall seconds and peak RSS).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

from bench.common import parser, result, scratch

EXES = [
    "e3sm.exe",
    "lmp_mpi",
    "nwchem",
    "warpx.3d",
    "vasp_std",
    "python3",
    "gmx_mpi",
    "nek5000",
    "ior",
]
MOUNTS = ["/lus/eagle", "/lus/grand", "/gpfs/alpine", "/home"]


def apps(n: int, seed: int = 7) -> list[tuple]:
    """n application keys in the shape of tests/support/fleet_marts.CENTRE_APPS."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        exe = EXES[i % len(EXES)]
        procs = rng.choice([1, 8, 32, 128, 512, 2048, 8192])
        key = f"{exe}|{1000 + i // 3}|{procs}|{rng.choice(MOUNTS)}|{rng.choice(['read', 'write'])}|fpp"
        out.append(
            (
                key,
                exe,
                1000 + i // 3,
                rng.randint(1, 120),
                procs,
                rng.uniform(0.1, 4),
                rng.uniform(0.01, 0.6),
                rng.uniform(20, 5000),
            )
        )
    return out


REPEATED = ("gold/app_runs", "silver/bottleneck_tags")  # the per-run tables the page reads
AS_THEY_ARE = ("gold/regressions",)  # and the marts


def scaled_copy(lake: Path, dest: Path, times: int) -> dict[str, int]:
    """The tables `iolake fleet` reads from `lake`, with every run `times` times, into `dest`
    (rows written per table)."""
    import shutil

    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable, write_deltalake

    import apps.fleet as fleet

    rows = {}
    for name in REPEATED:
        dt = DeltaTable(str(lake / name))
        t = dt.to_pyarrow_table()
        copies = []
        for k in range(times):
            c = t.set_column(
                t.schema.get_field_index("log_id"),
                "log_id",
                pc.binary_join_element_wise(t["log_id"], pa.scalar(f"{k:03d}" if k else ""), ""),
            )
            if "start" in c.column_names:
                i = c.schema.get_field_index("start")
                c = c.set_column(i, "start", pc.add(c["start"], pa.scalar(k, pa.duration("us"))))
            copies.append(c.cast(t.schema))
        out = pa.concat_tables(copies)
        write_deltalake(str(dest / name), out, partition_by=dt.metadata().partition_columns or None)
        rows[name] = out.num_rows
    for name in AS_THEY_ARE + tuple(f"gold/{m}" for m in fleet.MARTS if m != fleet.REQUIRED):
        if (lake / name).is_dir():
            shutil.copytree(lake / name, dest / name)
    am = DeltaTable(str(lake / "gold/fleet_app_month"))
    t = am.to_pyarrow_table()
    for col in ("runs", "suspect_runs"):
        i = t.schema.get_field_index(col)
        t = t.set_column(i, col, pc.multiply(t[col], pa.scalar(times, t[col].type)))
    write_deltalake(
        str(dest / "gold/fleet_app_month"), t, partition_by=am.metadata().partition_columns or None
    )
    return rows


def from_lake(args) -> int:
    """`--from-lake`: the page on a scaled copy, base against this tree."""
    from bench.common import ROOT, alternate, checkout
    from bench.layout_cost import fleet_run

    with scratch("fleet_page", args.keep) as root:
        t0 = time.monotonic()
        rows = scaled_copy(args.from_lake, root / "lake", args.times)
        print(
            f"scaled copy x{args.times} in {time.monotonic() - t0:.1f} s: "
            + ", ".join(f"{k} {v:,} rows" for k, v in rows.items()),
            flush=True,
        )
        trees = {"base": checkout(args.base_rev, root / "base"), "this": ROOT}
        peak = {}

        def timed(name):
            wall, rss = fleet_run(trees[name], root / "lake", root / f"page-{name}")
            peak[name] = max(peak.get(name, 0), rss)
            return wall, None

        best, _ = alternate(args.rounds, timed)
    for name in ("base", "this"):
        print(f"{name}: best {best[name]:.2f} s, peak RSS {peak[name] / 1024:,.0f} MiB")
    result(
        "fleet_page",
        f"{args.from_lake.name} x{args.times}: base {best['base']:.2f} s, this "
        f"{best['this']:.2f} s ({best['this'] / best['base']:.2f}x)",
    )
    return 0


def main(argv=None) -> int:
    p = parser(__spec__.name, __doc__)
    p.add_argument("--apps", type=int, default=2000, help="applications (default 2000)")
    p.add_argument("--months", type=int, default=12, help="months (default 12)")
    p.add_argument("--top", type=int, default=15, help="rows of each ranking (default 15)")
    p.add_argument("--keep", type=Path, help="write the lake and the pages here, and keep them")
    p.add_argument("--quick", action="store_true", help="40 applications over 3 months")
    p.add_argument("--from-lake", type=Path, help="scale this ingested lake's page tables instead")
    p.add_argument("--times", type=int, default=10, help="with --from-lake: each run this often")
    p.add_argument("--base-rev", default="HEAD", help="with --from-lake: the commit to compare")
    p.add_argument("--rounds", type=int, default=3, help="with --from-lake: alternating rounds")
    args = p.parse_args(argv)
    if args.from_lake:
        return from_lake(args)
    if args.quick:
        args.apps, args.months = 40, 3
    import apps.fleet as fleet
    from tests.support.fleet_marts import centre

    months = [f"{2025 + (m // 12)}-{m % 12 + 1:02d}" for m in range(args.months)]
    with scratch("fleet_page", args.keep) as root:
        t0 = time.monotonic()
        centre(root / "lake", apps=apps(args.apps), months=months)
        made = time.monotonic() - t0
        conf = SimpleNamespace(lake=SimpleNamespace(root=str(root / "lake")))
        reader = fleet.FleetReader(conf)
        t0 = time.monotonic()
        data = fleet.load(reader)
        read = time.monotonic() - t0
        rows = {k: (0 if v is None else len(v)) for k, v in data.items()}
        t0, c0 = time.monotonic(), time.process_time()
        fleet.write(conf, str(root / "page"), top=args.top)
        whole, cpu = time.monotonic() - t0, time.process_time() - c0
        pages = len(list((root / "page" / "apps").glob("*.html")))
    print(
        f"marts written in {made:.1f} s; rows: " + ", ".join(f"{k} {v:,}" for k, v in rows.items())
    )
    print(
        f"read the marts: {read:.2f} s; whole `iolake fleet` (read, main page, {pages:,} app "
        f"pages): {whole:.1f} s, CPU {cpu:.1f} s"
    )
    result(
        "fleet_page", f"{args.apps} apps x {args.months} months: {whole:.1f} s (CPU {cpu:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
