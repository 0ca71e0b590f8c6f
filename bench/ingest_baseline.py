"""Ingest throughput of iolake against what a user would write instead: pydarshan to Parquet.

    python -m bench.ingest_baseline [CORPUS] [--decoder pydarshan|native]
    python -m bench.ingest_baseline --quick      # the wheel's sample logs, native decoder

Runs, in one process tree and on the same corpus (default: ../shared/data/darshan):
  baseline  a 2-process pool: pydarshan `DarshanReport(read_all=True)` + `to_df()` per log,
            every module frame written to Parquet (crashing logs crash a pool worker, so
            each log runs in a fresh task with `maxtasksperchild=1`, as a user would learn)
  iolake    `python -m jobs.ingest CORPUS --lake TMP` (local[2], Delta, gates on)
and prints logs/s, MB/s, peak RSS (sum over the process tree, sampled) and the ratio.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, PeakRSS, parser, result, sample_logs, scratch, shared, tree_env


def _baseline_one(args):
    path, out = args
    import darshan

    try:
        rep = darshan.DarshanReport(path, read_all=True)
        for mod, recs in rep.records.items():
            if mod in (
                "POSIX",
                "MPI-IO",
                "STDIO",
                "H5F",
                "H5D",
                "PNETCDF_FILE",
                "PNETCDF_VAR",
                "DFS",
                "DAOS",
            ):
                frames = recs.to_df()
                for kind, df in frames.items():
                    df.to_parquet(f"{out}/{Path(path).name}.{mod}.{kind}.parquet")
        return True
    except Exception:
        return False


def list_logs(corpus: str) -> list[str]:
    from readers.fsio import list_traces

    return [
        t.uri
        for t in list_traces([corpus], [".darshan", ".darshan.gz", ".darshan.bz2"])
        if t.kind == "darshan"
    ]


def baseline(logs: list[str]) -> tuple[float, int, int]:
    with scratch("baseline") as out, PeakRSS(os.getpid()) as rss:
        t0 = time.perf_counter()
        ctx = mp.get_context("fork")
        with ctx.Pool(2, maxtasksperchild=1) as pool:
            res = []
            for (
                path
            ) in logs:  # one task per log; a segfault kills the worker, we time out and go on
                res.append(pool.apply_async(_baseline_one, ((path, out),)))
            ok = 0
            for r in res:
                try:
                    ok += bool(r.get(timeout=60))
                except Exception:
                    pass
        return time.perf_counter() - t0, ok, rss.total


def iolake(corpus: str, decoder: str) -> tuple[float, int, str]:
    with scratch("ingest") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "jobs.ingest",
            corpus,
            "--lake",
            f"{tmp}/lake",
            "--decoder",
            decoder,
        ]
        env = tree_env(ROOT)
        t0 = time.perf_counter()
        p = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
        )
        with PeakRSS(p.pid) as rss:
            out, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"iolake ingest failed ({p.returncode})")
        return time.perf_counter() - t0, rss.total, out


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("corpus", nargs="?", default=str(shared("darshan")))
    ap.add_argument("--decoder", default="pydarshan", choices=("pydarshan", "native"))
    ap.add_argument("--quick", action="store_true", help="the sample logs, native decoder")
    args = ap.parse_args(argv)
    if args.quick:
        args.corpus, args.decoder = str(sample_logs()), "native"
    logs = list_logs(args.corpus)
    mb = sum(os.path.getsize(p) for p in logs) / 2**20
    print(f"corpus: {len(logs)} logs, {mb:.1f} MiB ({args.corpus})")
    bt, bok, brss = baseline(logs)
    print(
        f"baseline (pydarshan to_df + Parquet, 2 procs): {bt:7.1f} s  {len(logs) / bt:7.1f} logs/s  "
        f"{mb / bt:6.2f} MiB/s  peak RSS {brss / 2**20:7.0f} MiB  ({bok} logs written)"
    )
    it, irss, out = iolake(args.corpus, args.decoder)
    print(
        f"iolake ingest ({args.decoder}, local[2], Delta):  {it:7.1f} s  {len(logs) / it:7.1f} logs/s  "
        f"{mb / it:6.2f} MiB/s  peak RSS {irss / 2**20:7.0f} MiB"
    )
    print(f"ratio iolake/baseline throughput: {bt / it:.2f}x")
    print(out.strip().splitlines()[-1] if out.strip() else "")
    result(
        "ingest_baseline",
        f"{len(logs)} logs: iolake ({args.decoder}) {it:.1f} s, {len(logs) / it:.2f} logs/s, "
        f"peak RSS {irss / 2**20:.0f} MiB; baseline {bt:.1f} s; {bt / it:.2f}x its throughput",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
