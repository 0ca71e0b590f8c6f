"""Score a pandas frame with iolake's champion models, using MLflow alone (nothing from iolake):
what a consumer of the registry needs, and that it is enough.

    python -m bench.consumer sqlite:////path/to/lake/mlflow.db [features.csv]

Loads `models:/iolake-placement@champion` and `models:/iolake-bandwidth@champion` from the
registry at the given tracking URI and prints, per row, the predicted tier, its probability and
the predicted bandwidth on that tier. Without a CSV it scores two literal I/O patterns.
"""

import os
import sys

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import mlflow  # noqa: E402
import pandas as pd  # noqa: E402

from bench.common import parser  # noqa: E402  (the harness's argument parser; nothing from iolake)

EXAMPLE = pd.DataFrame(
    [
        # POSIX, one file per rank, fsync after every 4 KiB write: the case a burst buffer wins
        {
            "interface": "POSIX",
            "collective": False,
            "fsync": True,
            "fsync_per_write": True,
            "preallocate": False,
            "file_view": False,
            "transfer_size": 4096,
            "rw_per_open": 64.0,
            "io_type": "WO",
            "random_access": False,
            "file_per_process": True,
            "unique_dir": False,
            "n_ranks": 1,
            "nprocs": 2,
        },
        # collective MPI-IO reads of a shared file after writing it, 4 ranks
        {
            "interface": "MPI-IO",
            "collective": True,
            "fsync": False,
            "fsync_per_write": False,
            "preallocate": False,
            "file_view": False,
            "transfer_size": 1048576,
            "rw_per_open": 16.0,
            "io_type": "RAW",
            "random_access": False,
            "file_per_process": False,
            "unique_dir": False,
            "n_ranks": 4,
            "nprocs": 4,
        },
    ]
)


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("tracking_uri", help="the MLflow tracking URI holding the registry")
    ap.add_argument(
        "features", nargs="?", help="a CSV of file features (default: two literal rows)"
    )
    a = ap.parse_args(argv)
    mlflow.set_tracking_uri(a.tracking_uri)
    mlflow.set_registry_uri(a.tracking_uri)
    frame = pd.read_csv(a.features) if a.features else EXAMPLE
    placement = mlflow.pyfunc.load_model("models:/iolake-placement@champion")
    bandwidth = mlflow.pyfunc.load_model("models:/iolake-bandwidth@champion")
    tiers = placement.predict(frame)
    bw = bandwidth.predict(frame.assign(tier=tiers["predicted_tier"].to_numpy()))
    print(
        pd.concat(
            [frame[["interface", "io_type", "transfer_size", "nprocs"]], tiers, bw], axis=1
        ).to_string(index=False)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
