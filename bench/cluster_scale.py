"""The whole pipeline on a real standalone cluster at scale, with 1 and with 2 workers.

    python -m bench.cluster_scale CORPUS --logs 100000 [--workers 2 1] [--keep DIR]
                                  [--driver-memory 2g] [--worker-memory 2g]

CORPUS is a folder of distinct Darshan logs (`python -m bench.make_corpus`). For each worker count, in
one run of this script, `cluster/standalone.py` starts a master and that many workers (1 core
each) on this machine and spark-submits `iolake run` of the first N logs into an empty lake:
every stage of `pipeline.yaml` in order, the executors decoding from the shipped app archive.
The child's stdout is read as it comes; each stage's `[stage] done in S s` line closes the stage,
which gets its own seconds (the runner's) and its own peak RSS, sampled from /proc every 0.2 s, of
- the driver: spark-submit's JVM and the Python driver under it;
- the executors: every `CoarseGrainedExecutorBackend` JVM with PySpark's Python workers under it
  (summed over the workers: the peak of their sum).
The standalone master and worker daemons are left out of both.

It prints a table of seconds per stage for each worker count and the ratio of the 2-worker run to
the 1-worker run, both measured here, the same way. On this 2-core machine the driver shares the
cores with the workers, so 2 workers cannot reach half the time of 1; the ratio says how much
of the pipeline the second executor actually shortens.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import MIB, ROOT, STAGE_DONE, StageRSS, children, parser, procs, result
from bench.pipeline_scale import pick_inputs

DAEMONS = ("deploy.master.Master", "deploy.worker.Worker")


def split_cluster_rss(root: int) -> tuple[int, int]:
    """(driver, executors) RSS under `root`, the standalone launcher: daemons are left out."""
    table = procs()
    kids = children(table)
    driver = executors = 0
    todo = [(root, "launcher")]
    while todo:
        pid, role = todo.pop()
        if pid not in table:
            continue
        _, rss, cmd = table[pid]
        if "CoarseGrainedExecutorBackend" in cmd:
            role = "executor"
        elif any(d in cmd for d in DAEMONS) and role != "executor":
            role = "daemon"
        elif "spark-submit" in cmd or "SparkSubmit" in cmd:
            role = "driver"
        if role == "executor":
            executors += rss
        elif role == "driver":
            driver += rss
        todo += [(k, role) for k in kids.get(pid, [])]
    return driver, executors


def run_cluster(inputs: list[str], lake: Path, workers: int, args) -> tuple[float, list]:
    """Wall seconds of the standalone run, and per stage: (name, seconds, peak driver, peak executors)."""
    run_dir = lake.parent / f"run-{lake.name}"
    cmd = [
        sys.executable,
        "-m",
        "cluster.standalone",
        *inputs,
        "--lake",
        str(lake),
        "--workers",
        str(workers),
        "--driver-memory",
        args.driver_memory,
        "--worker-memory",
        args.worker_memory,
        "--run-dir",
        str(run_dir),
    ]
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
    )
    rss, stages, tail = StageRSS(p.pid, split_cluster_rss), [], []
    for line in p.stdout:
        tail = (tail + [line])[-80:]
        m = STAGE_DONE.match(line)
        if m:
            d, e = rss.cut()
            stages.append((m.group(1), float(m.group(2)), d, e))
            print(
                f"    {line.rstrip()}  (peak RSS driver {d / MIB:,.0f} MiB, executors {e / MIB:,.0f} MiB)",
                flush=True,
            )
        elif line.startswith(
            (
                "[standalone] master",
                "[standalone] spark-submit",
                "[preflight]",
                "[decode]",
                "[commit]",
                "[train]",
            )
        ):
            print("    " + line.rstrip()[:160], flush=True)
    p.wait()
    rss.stop()
    if p.returncode != 0:
        sys.stdout.write("".join(tail))
        raise SystemExit(
            f"the standalone run with {workers} workers failed with exit code {p.returncode}"
        )
    return time.perf_counter() - t0, stages


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--logs", type=int, default=100_000)
    ap.add_argument(
        "--workers", type=int, nargs="+", default=[2, 1], help="worker counts, run in this order"
    )
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--worker-memory", default="2g")
    ap.add_argument(
        "--keep", type=Path, help="keep each lake here (DIR/lake-wN) instead of deleting it"
    )
    args = ap.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="cluster-scale-"))
    results: dict[int, tuple[float, list]] = {}
    try:
        inputs = pick_inputs(args.corpus, args.logs, scratch)
        for w in args.workers:
            base = args.keep or scratch
            base.mkdir(parents=True, exist_ok=True)
            lake = base / f"lake-w{w}"
            if lake.exists():
                raise SystemExit(f"{lake} exists: give an empty place for the lake")
            print(f"== {args.logs:,} logs, {w} worker(s) of 1 core -> {lake}", flush=True)
            wall, stages = run_cluster(inputs, lake, w, args)
            results[w] = (wall, stages)
            print(
                f"   {w} worker(s): {wall:,.0f} s wall, {args.logs / wall:,.1f} logs/s through every stage",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(lake, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    ws = sorted(results)
    names = [s[0] for s in results[ws[-1]][1]]
    print(f"\nseconds per stage, {args.logs:,} logs (peak RSS driver / executors, MiB)")
    print(
        "| stage | "
        + " | ".join(f"{w} worker(s)" for w in ws)
        + (" | ratio |" if len(ws) > 1 else " |")
    )
    print("|---|" + "---|" * len(ws) + ("---|" if len(ws) > 1 else ""))
    for name in names:
        rows = [next((s for s in results[w][1] if s[0] == name), None) for w in ws]
        cells = [
            f"{r[1]:,.0f} s ({r[2] / MIB:,.0f} / {r[3] / MIB:,.0f})" if r else "—" for r in rows
        ]
        ratio = (
            f" | {rows[-1][1] / rows[0][1]:.2f} |"
            if len(ws) > 1 and rows[0] and rows[-1] and rows[0][1]
            else " |"
        )
        print(f"| {name} | " + " | ".join(cells) + ratio)
    walls = [results[w][0] for w in ws]
    cells = " | ".join(f"{t:,.0f} s ({args.logs / t:,.1f} logs/s)" for t in walls)
    print(
        f"| wall, whole run | {cells}"
        + (f" | {walls[-1] / walls[0]:.2f} |" if len(ws) > 1 else " |")
    )
    result(
        "cluster_scale",
        f"{args.logs:,} logs: "
        + ", ".join(f"{w} worker(s) {t:,.0f} s" for w, t in zip(ws, walls))
        + (f"; ratio {walls[-1] / walls[0]:.2f}" if len(ws) > 1 else ""),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
