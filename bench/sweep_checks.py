"""The whole IOR sweep through ingest and covering, then two equalities checked log by log:
covering sets' pure I/O time against the union of the DXT ops (read with pydarshan, not the
project's decoder), and the PrismIO SQL views against `IOFrame`.

    python -m bench.sweep_checks [--data DIR] [--lake DIR]

Too long for the test suite (one lake of 1,128 logs); the tests check the same on a sample
(`tests/jobs/test_covering.py`, `tests/apps/test_views.py`, both with the oracles used here:
tests/support/covering.py and tests/support/viewcheck.py).
Prints the counts; exits 1 when any log differs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.common import parser, result, shared

DATA = shared("iosweep")


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--lake", type=Path, help="lake folder (default: a temporary one)")
    a = ap.parse_args(argv)
    if not a.data.is_dir():
        print(f"no IOR sweep at {a.data} (--data)", file=sys.stderr)
        return 2
    import pandas as pd

    from apps.analysis import IOFrame
    from apps.views import register_views
    from iolake.config import load_config
    from iolake.lake import read_table
    from iolake.spark import build_session
    from jobs import covering, ingest
    from schemas import BRONZE, SILVER
    from tests.support.covering import dxt_union_s
    from tests.support.viewcheck import compare

    t0 = time.monotonic()
    lake = a.lake or Path(tempfile.mkdtemp(prefix="iolake-sweep-")) / "lake"
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}}
    )
    spark = build_session(
        app_name="iolake-sweep-checks",
        master="local[2]",
        extra={**conf.spark.properties, "spark.ui.enabled": "false", "spark.driver.memory": "6g"},
    )
    runs = pd.read_csv(a.data / "runs.csv")
    darshan = [a.data / p for p in runs[runs.tracer == "darshan"].darshan_log]
    recorder = sorted(p for p in (a.data / "recorder").glob("*/*") if p.is_dir())
    paths = darshan + recorder
    ingest.run(spark, conf, [str(p) for p in paths], echo=print)
    covering.run(spark, conf, echo=print)
    print(
        f"lake of {len(paths)} logs ({len(darshan)} Darshan, {len(recorder)} Recorder) in "
        f"{time.monotonic() - t0:.0f} s: {lake}"
    )

    logs = read_table(spark, BRONZE["logs"], str(lake)).select("log_id", "source_uri").toPandas()
    rows = (
        read_table(spark, SILVER["covering_sets"], str(lake))
        .toPandas()
        .drop_duplicates("log_id")
        .merge(logs, on="log_id")
    )
    by_name = {Path(u).name: r for u, r in zip(rows.source_uri, rows.itertuples())}
    n = {"dxt": 0, "equal": 0, "proven": 0, "untraced": 0}
    for p in darshan:
        want = dxt_union_s(str(p))
        if want is None:
            continue
        n["dxt"] += 1
        row = by_name.get(p.name)
        if (
            row is not None
            and row.interval_source == "dxt"
            and abs(row.pure_io_time_s - want) <= 1e-9 * max(1.0, want)
        ):
            n["equal"] += 1
        if row is not None:
            n["proven"] += bool(row.cover_proven_minimum)
            n["untraced"] += row.n_untraced_items > 0
    print(
        f"covering: {len(darshan)} Darshan logs, {n['dxt']} with DXT; pure I/O time = union of the DXT ops on "
        f"{n['equal']}; cover proven minimum on {n['proven']}; untraced (ior.json-like) files left out on "
        f"{n['untraced']}"
    )

    register_views(spark, str(lake))
    f = IOFrame.from_lake(str(lake))
    bad = compare(spark, f)
    for view, logs_bad in bad.items():
        print(
            f"views: {view} equals IOFrame on {len(f.log_ids) - len(logs_bad)} of {len(f.log_ids)} logs"
        )
    print(f"{time.monotonic() - t0:.0f} s")
    spark.stop()
    views_bad = sum(len(v) for v in bad.values())
    result(
        "sweep_checks",
        f"{len(paths)} logs: pure I/O time = DXT union on {n['equal']} of {n['dxt']}; "
        f"{views_bad} (view, log) pairs differ from IOFrame ({time.monotonic() - t0:.0f} s)",
    )
    return 0 if n["equal"] == n["dxt"] and not any(bad.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
