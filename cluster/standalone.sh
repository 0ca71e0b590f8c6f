#!/bin/sh
# Start a Spark standalone master + 2 workers on this machine, run the whole pipeline on it with
# spark-submit, stop the cluster, exit with spark-submit's code. Options: cluster/standalone.py.
#   cluster/standalone.sh [INPUT...] --lake DIR [--mlflow-uri URI] [--workers N]
here=$(cd "$(dirname "$0")/.." && pwd)
exec env PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "${PYTHON:-$here/.venv/bin/python}" -m cluster.standalone "$@"
