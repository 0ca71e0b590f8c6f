"""How many joins a stage's static plan broadcasts on a given lake, per broadcast threshold.

    .venv/bin/python bench/broadcast_plan.py LAKE [--stage features] [--thresholds 10mb 1mb]

Builds the stage's output frames over the lake's whole input tables (`transform`, nothing
executed or written) and counts the BroadcastHashJoin nodes of each output's physical plan with
adaptive execution off, under each `spark.sql.autoBroadcastJoinThreshold`. The planner's size
estimate of a Delta table is its column-pruned compressed Parquet: at some lake size many
per-record sides fall under the threshold while their hash tables do not fit a small driver
(100,000 corpus logs, 10 MB: 20 broadcast joins for file_features, 13 for job_features, and
features died of Java heap space on the 2 GiB local driver; 1 MB: 6 and 5).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lake")
    ap.add_argument("--stage", default="features")
    ap.add_argument("--thresholds", nargs="+", default=["10mb", "1mb"])
    a = ap.parse_args(argv)

    from iolake.config import load_config
    from iolake.lake import read_or_empty
    from iolake.pipeline import table_spec
    from iolake.runner import stage_by_name
    from iolake.spark import session_from_config

    conf = load_config("local", overrides={"lake": {"root": a.lake}})
    spark = session_from_config(conf)
    stage = stage_by_name(a.stage)
    mod = importlib.import_module(stage.module)
    if not hasattr(mod, "transform"):
        raise SystemExit(f"stage {a.stage!r} has no pure transform to plan")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # the static plan: what the planner decides alone
    print(f"{a.lake}: stage {a.stage}, broadcast hash joins in each output's static plan")
    for thr in a.thresholds:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", thr)
        inputs = {t: read_or_empty(spark, table_spec(t), a.lake) for t in stage.tables_in}
        for t, df in mod.transform(inputs, conf).items():
            plan = df._jdf.queryExecution().executedPlan().toString()
            print(f"  threshold {thr:>6}: {t:<24} {plan.count('BroadcastHashJoin'):>3}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
