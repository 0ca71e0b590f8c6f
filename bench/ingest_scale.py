"""End-to-end Spark ingest at scale, with the pure-decode floor measured in the same run.

    python -m bench.ingest_scale CORPUS [--increment CORPUS2] [--floor-sample 5000] [--lake DIR]

CORPUS is a folder of distinct Darshan logs (`python -m bench.make_corpus` builds one). In one run:
  floor      the native decoder alone over a sample of CORPUS in a 2-process pool, no Spark,
             nothing written: the most any ingest on these 2 cores could do per log;
  ingest     `python -m jobs.ingest CORPUS --lake TMP` (local[2], Delta, gates on), with the
             peak RSS of the driver side (Python driver + JVM) and of the Python workers
             sampled apart (process tree, /proc, every 0.2 s);
  increment  (with --increment) a second ingest of CORPUS2 into the same lake: a nightly drop
             on top of a lake that already holds CORPUS;
and prints logs/s, MiB/s, the ratio to the floor, and a linear extrapolation to 1,000,000
logs from the two points (fixed cost + per-log cost).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, PeakRSS, parser, result, scratch, tree_env


def list_logs(corpus: str) -> list[str]:
    return sorted(str(p) for p in Path(corpus).rglob("*") if p.is_file() and ".darshan" in p.name)


def _decode_chunk(paths: list[str]) -> int:
    from readers.native_darshan import decode_darshan

    rows = 0
    for p in paths:
        rows += sum(t.num_rows for t in decode_darshan(p).values())
    return rows


def floor(logs: list[str], sample: int, seed: int = 1) -> tuple[float, int, float]:
    """Seconds per log of the native decoder alone, 2 processes, over a random sample."""
    pick = random.Random(seed).sample(logs, min(sample, len(logs)))
    mb = sum(os.path.getsize(p) for p in pick) / 2**20
    chunks = [pick[i::16] for i in range(16)]
    t0 = time.perf_counter()
    with mp.get_context("fork").Pool(2) as pool:
        pool.map(_decode_chunk, chunks)
    return (time.perf_counter() - t0) / len(pick), len(pick), mb


def ingest(corpus: str, lake: str) -> tuple[float, PeakRSS, str]:
    cmd = [sys.executable, "-m", "jobs.ingest", corpus, "--lake", lake]
    env = tree_env(ROOT)
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT
    )
    lines = []
    with PeakRSS(p.pid) as rss:
        for line in p.stdout:
            lines.append(line)
            if (
                line.startswith("[")
                or line.startswith("  [")
                or line.startswith("ingest")
                or "rate:" in line
                or "logs:" in line
            ):
                print("    " + line.rstrip(), flush=True)
        p.wait()
    if p.returncode != 0:
        sys.stdout.write("".join(lines[-60:]))
        raise SystemExit(f"ingest failed with exit code {p.returncode}")
    return time.perf_counter() - t0, rss, "".join(lines)


def report(name: str, n: int, mb: float, secs: float, rss: PeakRSS, floor_s: float) -> None:
    print(
        f"{name}: {n:,} logs, {mb:,.0f} MiB in {secs:,.1f} s = {n / secs:,.1f} logs/s, {mb / secs:,.2f} MiB/s; "
        f"peak RSS driver {rss.driver / 2**20:,.0f} MiB, workers {rss.workers / 2**20:,.0f} MiB "
        f"(together {rss.total / 2**20:,.0f} MiB); {secs / n / floor_s:.2f}x the decode floor per log"
    )


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("corpus")
    ap.add_argument("--increment", help="a second corpus ingested on top (a nightly drop)")
    ap.add_argument("--floor-sample", type=int, default=5000)
    ap.add_argument("--lake", help="keep the lake here (default: a temporary folder)")
    args = ap.parse_args(argv)
    logs = list_logs(args.corpus)
    mb = sum(os.path.getsize(p) for p in logs) / 2**20
    print(
        f"corpus: {len(logs):,} logs, {mb:,.0f} MiB ({args.corpus}); load average {os.getloadavg()[0]:.1f}"
    )
    fs, fn, fmb = floor(logs, args.floor_sample)
    print(
        f"floor (native decode only, 2 procs, {fn:,} logs): {1 / fs:,.1f} logs/s, {fmb / (fs * fn):,.2f} MiB/s"
    )
    with scratch("ingest-scale") as tmp:
        lake = args.lake or f"{tmp}/lake"
        secs, rss, _ = ingest(args.corpus, lake)
        report("ingest", len(logs), mb, secs, rss, fs)
        points = [(len(logs), secs)]
        if args.increment:
            inc = list_logs(args.increment)
            imb = sum(os.path.getsize(p) for p in inc) / 2**20
            isecs, irss, _ = ingest(args.increment, lake)
            report(f"increment on a lake of {len(logs):,}", len(inc), imb, isecs, irss, fs)
            points.append((len(inc), isecs))
        if len(points) == 2 and points[0][0] != points[1][0]:
            (n1, t1), (n2, t2) = points
            per = (t1 - t2) / (n1 - n2)
            fixed = t1 - per * n1
            million = (fixed + per * 1e6) / 60
            print(
                f"linear fit: {fixed:,.0f} s fixed + {per * 1e3:,.2f} ms/log -> 1,000,000 logs in "
                f"{million:,.0f} min on these cores"
            )
        else:
            n1, t1 = points[0]
            million = t1 / n1 * 1e6 / 60
            print(f"proportional: 1,000,000 logs in {million:,.0f} min on these cores")
    result(
        "ingest_scale",
        f"{len(logs):,} logs in {secs:,.1f} s = {len(logs) / secs:,.1f} logs/s, "
        f"{secs / len(logs) / fs:.2f}x the decode floor; 1,000,000 logs ~{million:,.0f} min",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
