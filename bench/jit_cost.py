"""The JVM's JIT on this machine: C1 only (`-XX:TieredStopAtLevel=1`) against full tiered compilation.

    .venv/bin/python bench/jit_cost.py --lake LAKE [--rounds 2]

LAKE: a lake with `bronze/io_ops` (e.g. a `bench/pipeline_scale.py --keep` lake). Each round starts
one child process per setting, alternating, each with its own local[2] JVM built from
`conf/local.yaml`, the `c1` one with `-XX:TieredStopAtLevel=1` added to its JVM options; the child times, on the lake's io_ops
rows (read from a Parquet copy made once):
  write    the ingest commit of those rows into an empty table (`merge_new_logs`, as `ingest` does);
  pattern  file features' access-pattern statistics over them (`ops_pattern_stats`: a join, a
           window per (log, record, rank, op), an aggregate), counted.
Prints each setting's best seconds per step and the ratio full/C1 (below 1: full tiered is faster).
Reads LAKE only; writes under a temporary folder.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTINGS = ("c1", "full")


def java_options(setting: str) -> str:
    """conf/local.yaml's driver JVM options (full tiered JIT), with C1 only added for `c1`."""
    from iolake.config import load_config

    base = load_config("local").spark.properties.get("spark.driver.extraJavaOptions", "")
    return f"-XX:TieredStopAtLevel=1 {base}".strip() if setting == "c1" else base


def child(work: Path, opts: str) -> dict:
    import pyspark.sql.functions as F

    from features.file_features import ops_pattern_stats
    from iolake.config import load_config
    from iolake.lake.delta import merge_new_logs
    from iolake.spark import session_from_config
    from schemas import BRONZE

    conf = load_config("local", overrides={"spark": {"properties": {"spark.driver.extraJavaOptions": opts}}})
    spark = session_from_config(conf)
    spec = BRONZE["io_ops"]
    src = spark.read.schema(spec.struct).parquet(str(work / "src"))
    months = [r[0] for r in src.select("job_month").distinct().collect()]
    out = {}
    lake = work / "lake"
    shutil.rmtree(lake, ignore_errors=True)
    t = time.perf_counter()
    merge_new_logs(spark, spec, str(lake), src, 3, months)
    out["write"] = time.perf_counter() - t
    want = (src.where(F.col("op").isin("read", "write")).groupBy("log_id", "record_id", "source")
            .agg(F.expr("mode(length)").alias("transfer_size")))
    t = time.perf_counter()
    ops_pattern_stats(src, want).count()
    out["pattern"] = time.perf_counter() - t
    spark.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("RESULT " + json.dumps(child(Path(a.work), java_options(a.child))), flush=True)
        return 0
    if not a.lake:
        ap.error("--lake is required")
    from iolake.config import load_config
    from iolake.spark import session_from_config

    work = Path(tempfile.mkdtemp(prefix="iolake-jit-cost-"))
    try:
        spark = session_from_config(load_config("local"))
        ops = spark.read.format("delta").load(str(Path(a.lake) / "bronze" / "io_ops"))
        ops.write.parquet(str(work / "src"))
        n = spark.read.parquet(str(work / "src")).count()
        spark.stop()
        best: dict = {}
        for r in range(a.rounds):
            for name in SETTINGS:
                p = subprocess.run([sys.executable, __file__, "--child", name, "--work", str(work)],
                                   capture_output=True, text=True, cwd=ROOT)
                line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
                if p.returncode or not line:
                    raise SystemExit(f"child {name} failed ({p.returncode}):\n{p.stderr[-3000:]}")
                res = json.loads(line[0][7:])
                print(f"round {r + 1} {name:<4} " + ", ".join(f"{k} {v:.1f} s" for k, v in res.items()), flush=True)
                for k, v in res.items():
                    best[(name, k)] = min(v, best.get((name, k), float("inf")))
        print(f"\n{n:,} io_ops rows; best of {a.rounds} per setting")
        for step in ("write", "pattern"):
            c1, full = best[("c1", step)], best[("full", step)]
            print(f"{step:<8} C1 only {c1:6.1f} s   full tiered {full:6.1f} s   full/C1 {full / c1:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
