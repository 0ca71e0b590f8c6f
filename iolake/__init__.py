"""iolake: Spark batch analytics for HPC I/O traces (Darshan, Recorder) into Delta tables.

This package is the platform: configuration, the Spark session, lake access (`iolake.lake`),
data-quality gates, the stage runner and the command line. User-facing features built on it
live in `apps/`; the stages in `jobs/`.
"""
import os

# MLflow's usage telemetry (and its download progress bars) are off for every process that imports
# the platform, and for the Spark workers and subprocesses they start (which inherit the
# environment). The one place.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # no bars in nightly logs

__version__ = "0.1.0"
