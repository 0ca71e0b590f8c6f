"""spark-submit entry of `iolake run` on a cluster: check the executors' Python, then run every stage.

    spark-submit [--archives iolake_app.tar.gz#iolake_app ...] cluster/pipeline_main.py \
        run INPUT... --env cluster --lake LAKE [--conf-dir DIR]
    spark-submit ... cluster/pipeline_main.py stage features --env cluster --lake LAKE

The arguments are those of the `iolake` command (`stage NAME` is `iolake stage NAME`).
Before anything runs, one small job imports the project's packages and the native decoder on
the executors and prints where they came from, so a worker without them fails here, clearly,
instead of quarantining every log as undecodable.
(This file lives outside the packages on purpose: spark-submit puts the script's folder first on
sys.path, and jobs/ or iolake/ would shadow top-level packages such as `features`.)
"""

from __future__ import annotations

import argparse
import os
import sys

MODULES = ("iolake", "apps", "jobs", "features", "models", "schemas", "readers", "iolake_native")


def _probe(_):
    import importlib
    import socket

    origins, missing = {}, {}
    for m in MODULES:
        try:
            origins[m] = importlib.import_module(m).__file__
        except Exception as e:  # noqa: BLE001 - reported to the driver as text
            missing[m] = f"{type(e).__name__}: {e}"
    yield {
        "host": socket.gethostname(),
        "cwd": os.getcwd(),
        "python": sys.executable,
        "origins": origins,
        "missing": missing,
    }


def preflight(spark) -> None:
    sc = spark.sparkContext
    n = max(2, sc.defaultParallelism)
    reports = sc.parallelize(range(n), n).mapPartitions(_probe).collect()
    bad = [r for r in reports if r["missing"]]
    if bad:
        lines = [
            f"  {r['host']} ({r['python']}): {m}: {err}"
            for r in bad
            for m, err in r["missing"].items()
        ]
        raise SystemExit(
            "iolake: executors cannot import the project:\n"
            + "\n".join(lines)
            + "\nShip it with --archives iolake_app.tar.gz#iolake_app and "
            "spark.executorEnv.PYTHONPATH=iolake_app (see cluster/standalone.py), and give every node "
            "the same Python with the pinned dependencies (docs/running-nightly.md)."
        )
    for r in {
        (r["cwd"], r["origins"]["iolake"], r["origins"]["iolake_native"]): r for r in reports
    }.values():
        print(
            f"[preflight] executor in {r['cwd']}: iolake from {r['origins']['iolake']}, "
            f"iolake_native from {r['origins']['iolake_native']}",
            flush=True,
        )


def main(argv=None) -> int:
    from iolake.cli import main as iolake_main
    from iolake.config import ConfigError, load_config
    from iolake.spark import session_from_config

    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--env", default="local")
    p.add_argument("--conf-dir")
    p.add_argument("--lake")
    known, _ = p.parse_known_args(argv)
    try:
        conf = load_config(
            known.env, known.conf_dir, {"lake": {"root": known.lake}} if known.lake else None
        )
    except ConfigError as e:
        print(f"iolake: configuration error: {e}", file=sys.stderr)
        return 2
    # The session built here, with the configuration's properties, is the one the stages reuse.
    preflight(session_from_config(conf))
    # `run ...`, `stage NAME ...`, `ingest ...`: the `iolake` command's own parser and code path
    return iolake_main(argv)


if __name__ == "__main__":
    sys.exit(main())
