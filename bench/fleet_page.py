"""`iolake fleet` on marts of a large centre: seconds to read the marts and write the page and
every application page, by part.

Writes the five fleet marts (tests/support/fleet_marts.py `centre`, with `--apps` generated
applications over `--months` months, four mounts' days, a night per day, three model versions)
into a scratch lake with delta-rs, then times `apps.fleet.write` on it (in this process, no
Spark): reading the marts alone, then the whole command (wall and CPU seconds: on a shared
machine the wall time is mostly waiting for a core). `--quick`: 40
applications over 3 months.

    python -m bench.fleet_page [--apps 2000] [--months 12] [--top 15] [--keep DIR]
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


def main(argv=None) -> int:
    p = parser(__spec__.name, __doc__)
    p.add_argument("--apps", type=int, default=2000, help="applications (default 2000)")
    p.add_argument("--months", type=int, default=12, help="months (default 12)")
    p.add_argument("--top", type=int, default=15, help="rows of each ranking (default 15)")
    p.add_argument("--keep", type=Path, help="write the lake and the pages here, and keep them")
    p.add_argument("--quick", action="store_true", help="40 applications over 3 months")
    args = p.parse_args(argv)
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
