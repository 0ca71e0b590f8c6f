"""The whole pipeline on a real Spark standalone cluster (master + 2 workers on this machine)
gives the same tables as the same pipeline run locally.

One cluster run (`cluster/standalone.sh`, i.e. `cluster.standalone`) over the sample logs, with
the first run's configuration; the local reference is the first run's own lake
(`tests.support.lakes.first_run_lake`, built once per session for test_first_run and shared), so
the suite runs the pipeline on these logs locally once, not twice. The sample logs give the lake
no two-tier label, so labels come from the shipped benchmark on the cluster as locally: labels
computed from a lake's own two-tier files are tested locally (tests/jobs/test_models.py) by the
same code the cluster runs.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from tests.support.data import ROOT
from tests.support.lakes import FIRST_RUN_MODELS, first_run_lake

# Columns whose values belong to a run, not to the data; everything else must be equal.
RUN_SPECIFIC = {
    # the ledger: which run ingested a log, when, and how long decoding took (wall time)
    "logs": {"ingest_run_id", "ingested_at", "decode_s"},
    # when a file was scored (wall time), and the predicted values (see below)
    "bandwidth_predictions": {
        "scored_at",
        "predicted_bandwidth_mib_s",
        "bandwidth_by_tier",
        "best_tier",
        "best_bandwidth_mib_s",
        "speedup",
    },
    "job_bandwidth_predictions": {
        "scored_at",
        "predicted_throughput_mib_s",
        "throughput_by_tier",
        "best_tier",
        "best_throughput_mib_s",
        "speedup",
        "efficiency",
    },
    "placement_predictions": {"scored_at", "predicted_tier", "probability"},
    # advice rows: compared by `_same_advice` (what-if rows and tag gains rest on predicted values)
    "tuning_advice": {"advised_at"},
    # the fleet marts: when a month was recomputed; the figures that rest on predicted values
    # (the recoverable estimate, drift); the runs of a night and their seconds (ops/runs)
    "fleet_app_month": {"updated_at", "efficiency_p50"},
    "fleet_tag_cost": {"updated_at", "recoverable_io_core_hours", "recoverable_source"},
    "fleet_fs_day": {"updated_at"},
    "fleet_health": {"updated_at", "runs", "failed_runs", "run_seconds", "night", "month"},
    "fleet_drift": {
        "updated_at",
        "median_ratio",
        "median_abs_log10_error",
        "within_2x_share",
    },
    "fleet_done": {"done_at"},
}
# Predicted values are not compared: `train` fits on gold/placement_labels and silver features
# in the row order Spark returns them (`toPandas()`, no ORDER BY), which depends on the
# partitioning (2 standalone executors vs local[2]); the fixed-seed random splits are positional,
# so the fitted trees may differ. What must match is which files were scored, with which model
# name and version, and the files' tier and measured bandwidth.


def _canon(v, digits: int = 12) -> str:
    """A comparable text of a cell (maps, lists, structs, numpy scalars); floats to `digits` digits."""
    from pyspark.sql import Row

    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, Row):
        v = v.asDict()
    if isinstance(v, dict):
        return (
            "{"
            + ", ".join(
                f"{k}: {_canon(x, digits)}" for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))
            )
            + "}"
        )
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_canon(x, digits) for x in v) + "]"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else format(v, f".{digits}g")
    if v is None or v is pd.NaT:
        return "None"
    return str(v)


def _rows(spark, spec, lake: str, drop: set):
    """The table's rows as (non-float cells as text, float cells), sorted; and the column names."""
    from pyspark.sql import types as T

    from iolake.lake import read_table

    df = read_table(spark, spec, lake).drop(*drop)
    floats = [
        f.name for f in df.schema.fields if isinstance(f.dataType, (T.DoubleType, T.FloatType))
    ]
    other = [c for c in df.columns if c not in floats]
    pdf = df.select(*other, *floats).toPandas()
    rows = []
    for rec in pdf.itertuples(index=False):
        exact = tuple(_canon(x) for x in rec[: len(other)])
        nums = tuple(np.nan if x is None else float(x) for x in rec[len(other) :])
        # sort key: floats rounded, so that last-bit differences of sums cannot reorder rows
        rows.append((exact + tuple(_canon(x, 6) for x in nums), exact, nums))
    rows.sort(key=lambda r: r[0])
    return other, floats, rows


def assert_same_table(spark, spec, lake_a: str, lake_b: str) -> int:
    drop = RUN_SPECIFIC.get(spec.name, set())
    other, floats, a = _rows(spark, spec, lake_a, drop)
    _, _, b = _rows(spark, spec, lake_b, drop)
    assert len(a) == len(b), f"{spec.name}: {len(a)} rows on the cluster, {len(b)} locally"
    for i, ((_, ea, na), (_, eb, nb)) in enumerate(zip(a, b)):
        if ea != eb:
            diff = {c: (x, y) for c, x, y in zip(other, ea, eb) if x != y}
            pytest.fail(f"{spec.name}: sorted row {i} differs (cluster, local): {diff}")
        # float sums may be added in another order with other partitions: equal to 1e-9 relative
        if not np.allclose(na, nb, rtol=1e-9, atol=0.0, equal_nan=True):
            diff = {
                c: (x, y)
                for c, x, y in zip(floats, na, nb)
                if not np.isclose(x, y, rtol=1e-9, equal_nan=True)
            }
            pytest.fail(f"{spec.name}: sorted row {i} differs (cluster, local): {diff}")
    return len(a)


def _same_advice(spark, lake_a: str, lake_b: str) -> None:
    """gold/tuning_advice: the same jobs advised, with the same model version, and the same DCA-IO
    stripe rows (rules, no model); what-if rows, and the gains quoted in tag rows, rest on the
    models' predicted values, which may differ (see above)."""
    import pyspark.sql.functions as F

    from iolake.lake import read_table
    from schemas import GOLD

    def read(lake):
        df = read_table(spark, GOLD["tuning_advice"], lake)
        jobs = sorted(tuple(r) for r in df.select("log_id", "advised_with").distinct().collect())
        stripe = sorted(
            _canon(tuple(r))
            for r in df.where(F.col("kind") == "stripe").drop("advised_at").collect()
        )
        tags = sorted(
            tuple(r) for r in df.where(F.col("kind") == "tag").select("log_id", "item").collect()
        )
        return jobs, stripe, tags

    (jobs_a, stripe_a, tags_a), (jobs_b, stripe_b, tags_b) = read(lake_a), read(lake_b)
    assert jobs_a and jobs_a == jobs_b, (
        "tuning_advice: other jobs advised on the cluster than locally"
    )
    assert stripe_a == stripe_b, (
        "tuning_advice: stripe rows differ between the cluster and the local run"
    )
    assert tags_a == tags_b, "tuning_advice: tag rows differ between the cluster and the local run"


@pytest.mark.slow
def test_standalone_cluster_run_equals_local_run(spark, tmp_path, tmp_path_factory):
    from cluster.standalone import run_conf_dir
    from iolake.cli import sample_inputs
    from iolake.lake import table_exists
    from schemas import BRONZE, GOLD, SILVER

    local = first_run_lake(tmp_path_factory)  # the same logs and models, run locally
    local_lake = local["lake"]
    inputs = sample_inputs()
    conf_dir = run_conf_dir(ROOT / "conf", tmp_path / "conf", {"models": FIRST_RUN_MODELS})
    cluster_lake, run_dir = tmp_path / "cluster-lake", tmp_path / "run"
    cmd = [
        str(ROOT / "cluster" / "standalone.sh"),
        *inputs,
        "--lake",
        str(cluster_lake),
        "--conf-dir",
        str(conf_dir),
        "--run-dir",
        str(run_dir),
    ]
    env = dict(os.environ, PYTHON=sys.executable)
    t0 = time.monotonic()
    log = open(tmp_path / "standalone.out", "w")
    # Same process group: Ctrl-C reaches it; if pytest is killed, the script notices and stops its cluster.
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        rc = proc.wait(timeout=2400)
    finally:
        if proc.poll() is None:  # the script stops its cluster on SIGTERM
            proc.terminate()
            proc.wait(timeout=60)
        log.close()
    out = (tmp_path / "standalone.out").read_text()
    print(f"the cluster run took {time.monotonic() - t0:.0f} s")
    assert rc == 0, out[-5000:]

    # It really ran on the standalone cluster, with the project shipped in the archive.
    assert "workers registered" in out and "spark://127.0.0.1:" in out
    preflight = [ln for ln in out.splitlines() if ln.startswith("[preflight]")]
    assert preflight and all(
        f"{run_dir}/work-" in ln and "/iolake_app/iolake_native/" in ln for ln in preflight
    ), out[-5000:]
    for w in (1, 2):  # both workers ran an executor, each with its own unpacked copy of the project
        assert list((run_dir / f"work-{w}").glob("app-*/*/iolake_app/iolake/cli.py")), (
            f"worker {w} ran no executor"
        )
    assert re.search(r"iolake-placement v1 \(\w+, refit on \d+ labels\) -> @champion", out), out[
        -5000:
    ]
    assert "cluster stopped" in out
    # ... and left no daemon or executor behind.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(run_dir) not in ps

    counts = {}
    for spec in [
        *BRONZE.values(),
        *SILVER.values(),
        *GOLD.values(),
    ]:  # OPS.runs is run history: all run-specific
        exists = table_exists(spark, spec, str(cluster_lake))
        assert exists == table_exists(spark, spec, str(local_lake)), spec.name
        if exists and spec.name != "tuning_advice":
            counts[spec.name] = assert_same_table(spark, spec, str(cluster_lake), str(local_lake))
    _same_advice(spark, str(cluster_lake), str(local_lake))
    print("equal tables (rows):", counts)
    assert counts["logs"] == 6 and counts["placement_predictions"] > 0  # the wheel's 6 sample logs
