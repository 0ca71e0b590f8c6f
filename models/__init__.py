"""Models: the estimators (`placement`, `bandwidth`), their evaluation, MLflow tracking and the
registry, and the shipped benchmark tables (`benchmarks`). Built on `schemas/` alone: the
platform (`iolake/`), features, stages and apps use the models, never the reverse."""

import os

# MLflow's usage telemetry (and its download progress bars) are off for every process that imports
# the models or the platform (iolake/__init__.py imports this package for it), and for the Spark
# workers and subprocesses they start (which inherit the environment). The one place.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # no bars in nightly logs
