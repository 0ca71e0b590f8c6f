"""The whole pipeline on a real standalone cluster at scale, with 1 and with 2 workers, beside
local[2].

    python -m bench.cluster_scale CORPUS --logs 100000 [--workers 2 1 0] [--keep DIR]
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
The standalone master and worker daemons are left out of both. Worker count 0 is the same logs
through `iolake run` on local[2] (no cluster: `bench.pipeline_scale`'s run, the driver and its
Python workers measured the same way), the embedded default the cluster is compared with.

It prints a table of seconds per stage for each worker count, each against the first column (local
[2] when 0 is among the counts, else the fewest workers), all measured here, the same way, one
after the other. On this 2-core machine the driver shares the cores with the workers, so 2
workers cannot reach half the time of 1; the ratio says how much of the pipeline the second
executor actually shortens, and what the cluster's overheads cost against local[2].
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
from bench.pipeline_scale import pick_inputs, run_pipeline

DAEMONS = ("deploy.master.Master", "deploy.worker.Worker")
LOCAL = 0  # the worker count that means local[2], no cluster


def label(workers: int) -> str:
    return "local[2]" if workers == LOCAL else f"{workers} worker(s)"


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
        "--workers",
        type=int,
        nargs="+",
        default=[2, 1],
        help="worker counts, run in this order (0: local[2], no cluster)",
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
            what = "local[2], no cluster" if w == LOCAL else f"{w} worker(s) of 1 core"
            print(f"== {args.logs:,} logs, {what} -> {lake}", flush=True)
            if w == LOCAL:
                wall, stages = run_pipeline(inputs, lake)
            else:
                wall, stages = run_cluster(inputs, lake, w, args)
            results[w] = (wall, stages)
            print(
                f"   {label(w)}: {wall:,.0f} s wall, {args.logs / wall:,.1f} logs/s through every stage",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(lake, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    ws = sorted(results)  # local[2] (0) first when run, then 1, 2 workers
    names = [s[0] for s in results[ws[-1]][1]]
    print(f"\nseconds per stage, {args.logs:,} logs (peak RSS driver / executors, MiB)")
    if len(ws) > 1:
        print(f"each column's ratio is against {label(ws[0])}, measured in this run")
    print("| stage | " + " | ".join(label(w) for w in ws) + " |")
    print("|---|" + "---|" * len(ws))

    def cell(r, base) -> str:
        if r is None:
            return "—"
        text = f"{r[1]:,.0f} s ({r[2] / MIB:,.0f} / {r[3] / MIB:,.0f})"
        return text + (f", {r[1] / base[1]:.2f}×" if base and base is not r and base[1] else "")

    for name in names:
        rows = [next((s for s in results[w][1] if s[0] == name), None) for w in ws]
        print(f"| {name} | " + " | ".join(cell(r, rows[0]) for r in rows) + " |")
    walls = [results[w][0] for w in ws]
    cells = [f"{t:,.0f} s ({args.logs / t:,.1f} logs/s)" for t in walls]
    cells[1:] = [f"{c}, {t / walls[0]:.2f}×" for c, t in zip(cells[1:], walls[1:])]
    print("| wall, whole run | " + " | ".join(cells) + " |")
    if 1 in results and 2 in results and ws[0] != 1:  # the scale-out ratio itself
        print(f"2 workers / 1 worker: {results[2][0] / results[1][0]:.2f} of the wall time")
    result(
        "cluster_scale",
        f"{args.logs:,} logs: "
        + ", ".join(f"{label(w)} {t:,.0f} s" for w, t in zip(ws, walls))
        + "".join(
            f"; {label(w)} / {label(ws[0])} {t / walls[0]:.2f}" for w, t in zip(ws[1:], walls[1:])
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
