"""Where one pipeline stage spends its time: Spark's own metrics of every Spark stage it ran.

    python -m bench.stage_profile LAKE --stage features [--top 15] [--conf KEY=VALUE ...]

Runs `iolake stage NAME` on LAKE (it writes the stage's outputs there: give it a copy) in a local[2]
session like `iolake`'s, with Spark's UI on (off in conf/local.yaml) so its REST API
(`/api/v1/applications/<id>/stages`) can be read afterwards. Prints the stage's wall seconds, then
the Spark stages it ran, largest executor run time first: executor seconds (summed over tasks, so up
to 2x wall on 2 cores), tasks, input rows, shuffle read and write, bytes spilled, and the first line
of Spark's call site (for adaptive query stages that is Spark's own thread pool, not the operator:
tell the stages apart by their rows and shuffle bytes). The totals say what share of the executors'
time the top stages take. Then the timeline of its Spark jobs: how many, and the seconds of the
wall in which none ran (the driver planning, committing or in Python).

    python -m bench.stage_profile LAKE --stage features --sample 0.5

With `--sample S`, every S seconds during the stage: the Python main thread's innermost frame in
this project's code, and (`jstack` of the driver JVM) the py4j threads serving it, each sample
filed under the first frame that names a known phase (Catalyst's analyzer, optimizer, planner,
Delta's snapshot, commit and checkpoint, Parquet footers, the DAG scheduler, ...). The counts say
where the driver's wall went. Nothing here is timed against a baseline: it says where, not how
fast.
"""

from __future__ import annotations

import collections
import contextlib
import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from bench.common import MIB, parser, result


def _api(spark, what: str) -> list[dict]:
    """`what` (e.g. `jobs`) of this application, from the Spark UI's REST API."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{what}"
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def spark_stages(spark) -> list[dict]:
    """Every completed Spark stage of this application."""
    return _api(spark, "stages?status=complete")


def spark_jobs(spark) -> list[dict]:
    """Every Spark job of this application."""
    return _api(spark, "jobs")


def _ms(stamp: str) -> float:
    """Milliseconds since the epoch of the REST API's `2026-12-03T15:05:45.123GMT`."""
    import datetime as dt

    t = dt.datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return t.timestamp() * 1000


def busy_seconds(jobs: list[dict]) -> float:
    """Seconds in which at least one of `jobs` ran (the union of their intervals)."""
    spans = sorted(
        (_ms(j["submissionTime"]), _ms(j["completionTime"]))
        for j in jobs
        if j.get("submissionTime") and j.get("completionTime")
    )
    total, end = 0.0, None
    start = None
    for a, b in spans:
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    if end is not None:
        total += end - start
    return total / 1000


# The phase a JVM stack is in: the first of these substrings found, innermost frame first.
PHASES = (
    ("ParquetFileReader.readFooter", "parquet footers"),
    ("Checkpoint", "delta checkpoint"),
    ("OptimisticTransaction", "delta commit"),
    ("Snapshot", "delta snapshot / log replay"),
    ("DeltaLog", "delta log"),
    ("catalyst.analysis", "catalyst analyzer"),
    ("catalyst.optimizer", "catalyst optimizer"),
    ("execution.SparkStrategies", "physical planning"),
    ("QueryPlanner", "physical planning"),
    ("adaptive.", "adaptive execution"),
    ("codegen", "codegen"),
    ("DAGScheduler", "waiting on jobs"),
    ("awaitResult", "waiting on jobs"),
    ("treeString", "plan strings"),
    ("catalyst.", "catalyst (other)"),
    ("io.delta", "delta (other)"),
)


def jvm_phase(stack: list[str]) -> str:
    for frame in stack:
        for needle, phase in PHASES:
            if needle in frame:
                return phase
    return "other: " + (stack[0].strip()[:80] if stack else "?")


class Sampler:
    """Samples the driver every `every` seconds: Python's main thread and the JVM's py4j threads."""

    def __init__(self, spark, every: float, jvm: bool):
        self.every, self.stop, self.with_jvm = every, threading.Event(), jvm
        self.py, self.jvm = collections.Counter(), collections.Counter()
        self.frames = collections.Counter()  # (phase, innermost Spark or Delta frame)
        self.pid = spark.sparkContext._jvm.ProcessHandle.current().pid()
        self.main = threading.main_thread().ident
        self.root = str(Path(__file__).resolve().parents[1])
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def loop(self) -> None:
        while not self.stop.wait(self.every):
            self.sample_python()
            if self.with_jvm:
                self.sample_jvm()

    def sample_python(self) -> None:
        frame = sys._current_frames().get(self.main)
        where = "?"
        while frame is not None:
            f = frame.f_code.co_filename
            if f.startswith(self.root) and "/bench/" not in f and "/.venv/" not in f:
                where = f"{f[len(self.root) + 1 :]}:{frame.f_code.co_name}:{frame.f_lineno}"
                break
            frame = frame.f_back
        self.py[where] += 1

    def sample_jvm(self) -> None:
        out = subprocess.run(
            ["jstack", str(self.pid)], capture_output=True, text=True, timeout=30
        ).stdout
        for block in out.split("\n\n"):
            lines = block.strip().splitlines()
            if not lines or "RUNNABLE" not in block or "py4j" not in block:
                continue
            frames = [ln.strip()[3:] for ln in lines if ln.strip().startswith("at ")]
            if (
                frames
                and not frames[0].startswith("java.net.SocketInputStream")
                and not any("sun.nio.ch" in f or "socketRead" in f for f in frames[:3])
            ):
                phase = jvm_phase(frames)
                self.jvm[phase] += 1
                spark = [f for f in frames if f.startswith(("org.apache.spark.sql", "io.delta"))]
                deep = [f for f in spark if ".trees." not in f and "TreeNode" not in f]
                self.frames[(phase, (deep or spark or ["?"])[0].split("(")[0])] += 1

    def report(self, top: int) -> list[str]:
        n = sum(self.py.values()) or 1
        out = [f"driver samples every {self.every} s: {n} (Python main thread)"]
        out += [f"{c:6d} {c / n:6.1%}  {w}" for w, c in self.py.most_common(top)]
        m = sum(self.jvm.values())
        out.append(f"JVM py4j threads busy in {m} samples:")
        out += [f"{c:6d} {c / n:6.1%}  {w}" for w, c in self.jvm.most_common(top)]
        out.append("the innermost Spark or Delta frame (trees left out) of those samples:")
        out += [f"{c:6d}  {p}: {f}" for (p, f), c in self.frames.most_common(top)]
        return out


def summarize(stages: list[dict], top: int) -> list[str]:
    total = sum(s.get("executorRunTime", 0) for s in stages) / 1000 or 1.0
    rows = sorted(stages, key=lambda s: -s.get("executorRunTime", 0))
    read = sum(s.get("inputRecords", 0) for s in stages)
    out = [
        f"{len(stages)} Spark stages, {total:,.1f} executor-seconds and {read:,} input rows in all; "
        f"the largest {min(top, len(rows))}:",
        f"{'exec s':>8} {'share':>6} {'tasks':>6} {'in rows':>12} {'shuf rd MiB':>11} {'shuf wr MiB':>11} "
        f"{'spill MiB':>9}  call site",
    ]
    for s in rows[:top]:
        sec = s.get("executorRunTime", 0) / 1000
        site = (s.get("name") or "").split("\n")[0][:70]
        out.append(
            f"{sec:8.1f} {sec / total:6.1%} {s.get('numTasks', 0):6d} {s.get('inputRecords', 0):12,d} "
            f"{s.get('shuffleReadBytes', 0) / MIB:11.1f} {s.get('shuffleWriteBytes', 0) / MIB:11.1f} "
            f"{(s.get('memoryBytesSpilled', 0) + s.get('diskBytesSpilled', 0)) / MIB:9.1f}  {site}"
        )
    return out


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("lake", help="lake root (the stage writes its outputs here: use a copy)")
    ap.add_argument("--stage", required=True)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument(
        "--sample", type=float, metavar="S", help="sample the driver's stacks every S seconds"
    )
    ap.add_argument(
        "--jstack",
        action="store_true",
        help="with --sample, the JVM's too (jstack: each sample costs the driver about 0.3 s)",
    )
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property over conf/local.yaml's (repeatable), e.g. spark.sql.shuffle.partitions=32",
    )
    args = ap.parse_args(argv)

    from iolake.config import load_config
    from iolake.runner import run_stage
    from iolake.spark import build_session

    conf = load_config("local", overrides={"lake": {"root": args.lake}})
    spark = build_session(
        conf.spark.app_name,
        conf.spark.master,
        {
            **conf.spark.properties,
            **dict(kv.split("=", 1) for kv in args.conf),
            "spark.ui.enabled": "true",
            "spark.ui.port": "0",
        },
    )
    sampler = Sampler(spark, args.sample, args.jstack) if args.sample else None
    t = time.monotonic()
    with sampler or contextlib.nullcontext():
        summary = run_stage(spark, conf, args.stage, echo=print)
    wall = time.monotonic() - t
    print(f"[{args.stage}] {wall:.1f} s wall; summary rows {summary.get('rows')}")
    stages = spark_stages(spark)
    print("\n".join(summarize(stages, args.top)))
    jobs = spark_jobs(spark)
    busy = busy_seconds(jobs)
    print(
        f"{len(jobs)} Spark jobs; some job running {busy:.1f} s of the {wall:.1f} s wall, "
        f"none {wall - busy:.1f} s (driver only)"
    )
    if sampler:
        print("\n".join(sampler.report(args.top)))
    spark.stop()
    result(
        "stage_profile",
        f"{args.stage}: {wall:.1f} s wall, {len(stages)} Spark stages, "
        f"{sum(s.get('executorRunTime', 0) for s in stages) / 1000:,.1f} executor-seconds",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
