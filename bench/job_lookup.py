"""What finding one job costs (`apps.report.find_job`, the first step of `iolake report JOB`) on
a ledger of many nights, a base commit against this tree.

    python -m bench.job_lookup WORK [--logs 1000000] [--nights 400] [--base-rev HEAD]
        [--rounds 3] [--lookups 20]

Builds, once, under WORK a lake of the two tables the look-up reads, written with delta-rs (no
Spark, no trace): `bronze/logs` (the ledger: log_id, job_month, status, reason, source_uri,
jobid; the property that says its jobids are filled) appended `--nights` times, each night's
logs a contiguous log_id range (as `iolake maintain` leaves the ledger: sorted by log_id), with a
checkpoint every 10 commits (Delta's default interval); and `bronze/jobs` partitioned by
job_month, one file per night. Then, `--rounds` times, alternating which goes first, a child
process per tree runs `find_job` for `--lookups` logs by a 12-character log_id prefix and by
jobid, each with a new `LakeReader` (as each `iolake report` is), and prints the mean
milliseconds of each kind. Also printed: the mean time to open the ledger's snapshot, the cost
each open saved is worth. The lake is kept in WORK for the next run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, alternate, checkout, parser, result, tree_env

CHILD = r"""
import json, sys, time
from apps.report import LakeReader, find_job
from iolake.config import load_config
lake, queries = sys.argv[1], json.loads(sys.argv[2])
conf = load_config("local", overrides={"lake": {"root": lake}})
out = {}
for kind, qs in queries.items():
    t0 = time.perf_counter()
    for q, want in qs:
        got = find_job(LakeReader(conf), q)
        assert got == want, (q, got, want)
    out[kind] = 1000 * (time.perf_counter() - t0) / len(qs)
print(json.dumps(out))
"""


def build(lake: Path, logs: int, nights: int) -> None:
    """The ledger and bronze/jobs of `logs` logs over `nights` commits (see the docstring)."""
    import numpy as np
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from schemas import TABLES
    from schemas.logs import JOBID_FILLED

    rng = np.random.default_rng(41)
    ids = np.sort(rng.integers(0, 2**63 - 1, size=logs, dtype=np.int64))
    log_ids = [f"{i:016x}" + "0" * 48 for i in ids.tolist()]
    jobids = rng.permutation(logs) + 1_000_000
    ledger, jobs = TABLES["logs"].path(str(lake)), TABLES["jobs"].path(str(lake))
    per = -(-logs // nights)
    for n in range(nights):
        lo, hi = n * per, min(logs, (n + 1) * per)
        month = f"{2025 + n // 365:04d}-{(n % 365) // 31 + 1:02d}"
        sl = log_ids[lo:hi]
        jid = pa.array(jobids[lo:hi], pa.int64())
        write_deltalake(
            ledger,
            pa.table(
                {
                    "log_id": sl,
                    "job_month": [month] * len(sl),
                    "status": ["ok"] * len(sl),
                    "reason": pa.nulls(len(sl), pa.string()),
                    "source_uri": [f"/logs/{month}/{i[:12]}.darshan" for i in sl],
                    "jobid": jid,
                }
            ),
            mode="append",
        )
        write_deltalake(
            jobs,
            pa.table(
                {
                    "log_id": sl,
                    "jobid": jid,
                    "exe": ["/apps/bin/app"] * len(sl),
                    "nprocs": pa.array([64] * len(sl), pa.int64()),
                    "start_time_sec": pa.array([1_700_000_000 + n * 86400] * len(sl), pa.int64()),
                    "job_month": [month] * len(sl),
                }
            ),
            mode="append",
            partition_by=["job_month"],
        )
        if (n + 1) % 10 == 0:
            DeltaTable(ledger).create_checkpoint()
        if (n + 1) % 50 == 0:
            print(f"[build] {n + 1}/{nights} nights", flush=True)
    DeltaTable(ledger).alter.set_table_properties({JOBID_FILLED: "true"}, raise_if_not_exists=False)


def main(argv=None) -> int:
    p = parser(__spec__.name, __doc__)
    p.add_argument("work", type=Path)
    p.add_argument("--logs", type=int, default=1_000_000)
    p.add_argument("--nights", type=int, default=400)
    p.add_argument("--base-rev", default="HEAD")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--lookups", type=int, default=20)
    args = p.parse_args(argv)

    from iolake.lake import arrow
    from schemas import TABLES

    lake = args.work / f"lake-{args.logs}-{args.nights}"
    if not (lake / "BUILT").is_file():  # a build cut short is started again
        shutil.rmtree(lake, ignore_errors=True)
        t0 = time.perf_counter()
        build(lake, args.logs, args.nights)
        (lake / "BUILT").write_text("built by bench.job_lookup\n")
        print(
            f"[build] {args.logs:,} logs in {args.nights} nights: {time.perf_counter() - t0:.0f} s"
        )
    led = arrow.read(lake, TABLES["logs"], ["log_id", "jobid"])
    step = max(1, led.num_rows // args.lookups)  # logs spread over the whole log_id range
    rows = led.take(list(range(0, led.num_rows, step))[: args.lookups]).to_pylist()
    queries = {
        "prefix": [(r["log_id"][:12], r["log_id"]) for r in rows],
        "jobid": [(str(r["jobid"]), r["log_id"]) for r in rows],
    }
    t0 = time.perf_counter()
    for _ in range(args.lookups):
        arrow.open_table(lake, TABLES["logs"])
    open_ms = 1000 * (time.perf_counter() - t0) / args.lookups
    print(f"opening the ledger's snapshot: {open_ms:.1f} ms")

    with tempfile.TemporaryDirectory(prefix="iolake-lookup-") as tmp:
        trees = {"base": checkout(args.base_rev, Path(tmp) / "base"), "this": ROOT}
        per_kind: dict[str, dict[str, float]] = {}

        def timed(name: str):
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, str(lake), json.dumps(queries)],
                env=tree_env(trees[name]),
                cwd=trees[name],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise SystemExit(f"{name} ({trees[name]}) failed:\n{proc.stderr[-3000:]}")
            ms = json.loads(proc.stdout.strip().splitlines()[-1])
            for kind, v in ms.items():
                best = per_kind.setdefault(kind, {})
                best[name] = min(best.get(name, v), v)
            return sum(ms.values()) / 1000, ms

        alternate(args.rounds, timed)
    for kind, best in per_kind.items():
        print(
            f"{kind:<7} base {best['base']:8.1f} ms  this {best['this']:8.1f} ms  "
            f"ratio {best['this'] / best['base']:.2f}"
        )
    result(
        "job_lookup",
        ", ".join(
            f"{k} {b['this']:.0f} ms against {b['base']:.0f} ms ({b['this'] / b['base']:.2f})"
            for k, b in per_kind.items()
        )
        + f"; one ledger open {open_ms:.0f} ms ({args.logs:,} logs, {args.nights} nights)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
