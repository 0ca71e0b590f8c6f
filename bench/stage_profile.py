"""Where one pipeline stage spends its time: Spark's own metrics of every Spark stage it ran.

    python -m bench.stage_profile LAKE --stage features [--top 15] [--conf KEY=VALUE ...]

Runs `iolake stage NAME` on LAKE (it writes the stage's outputs there: give it a copy) in a local[2]
session like `iolake`'s, with Spark's UI on (off in conf/local.yaml) so its REST API
(`/api/v1/applications/<id>/stages`) can be read afterwards. Prints the stage's wall seconds, then
the Spark stages it ran, largest executor run time first: executor seconds (summed over tasks, so up
to 2x wall on 2 cores), tasks, input rows, shuffle read and write, bytes spilled, and the first line
of Spark's call site (for adaptive query stages that is Spark's own thread pool, not the operator:
tell the stages apart by their rows and shuffle bytes). The totals say what share of the executors'
time the top stages take. Nothing here is timed against a baseline: it says where, not how fast.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request

from bench.common import MIB, parser, result


def spark_stages(spark) -> list[dict]:
    """Every completed Spark stage of this application, from the UI's REST API."""
    sc = spark.sparkContext
    with urllib.request.urlopen(
        f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete", timeout=30
    ) as r:
        return json.loads(r.read())


def summarize(stages: list[dict], top: int) -> list[str]:
    total = sum(s.get("executorRunTime", 0) for s in stages) / 1000 or 1.0
    rows = sorted(stages, key=lambda s: -s.get("executorRunTime", 0))
    out = [
        f"{len(stages)} Spark stages, {total:,.1f} executor-seconds in all; the largest {min(top, len(rows))}:",
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
    t = time.monotonic()
    summary = run_stage(spark, conf, args.stage, echo=print)
    wall = time.monotonic() - t
    print(f"[{args.stage}] {wall:.1f} s wall; summary rows {summary.get('rows')}")
    stages = spark_stages(spark)
    print("\n".join(summarize(stages, args.top)))
    spark.stop()
    result(
        "stage_profile",
        f"{args.stage}: {wall:.1f} s wall, {len(stages)} Spark stages, "
        f"{sum(s.get('executorRunTime', 0) for s in stages) / 1000:,.1f} executor-seconds",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
