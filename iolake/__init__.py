"""iolake: Spark batch analytics for HPC I/O traces (Darshan, Recorder) into Delta tables.

This package is the platform: configuration, the Spark session, lake access (`iolake.lake`),
data-quality gates, the stage runner and the command line. User-facing features built on it
live in `apps/`; the stages in `jobs/`.
"""

import models  # noqa: F401  (MLflow telemetry off for the platform: models/__init__.py)

__version__ = "0.1.0"
