"""MLflow pyfunc wrappers of the fitted pipelines. Pickled by value (cloudpickle), so a registered
model loads with mlflow + scikit-learn (+ lightgbm / xgboost) alone, without this project.
Nothing here may import the project.
"""
import mlflow.pyfunc
import numpy as np
import pandas as pd


def _log2(x):
    """Feature transform used inside the pipelines (numbers spanning decades)."""
    return np.log2(np.clip(np.asarray(x, dtype=float), 1.0, None))


def _as_float(x):
    return np.asarray(x, dtype=float)


class Placement(mlflow.pyfunc.PythonModel):
    """Raw feature rows -> predicted_tier, probability (of that tier)."""

    def __init__(self, pipeline, features):
        self.pipeline, self.features = pipeline, list(features)

    def predict(self, context, model_input, params=None):
        X = pd.DataFrame(model_input)[self.features]
        proba = self.pipeline.predict_proba(X)
        classes = np.asarray(self.pipeline.classes_)
        best = proba.argmax(axis=1)
        return pd.DataFrame({"predicted_tier": classes[best].astype(str), "probability": proba.max(axis=1)})


class Bandwidth(mlflow.pyfunc.PythonModel):
    """Raw feature rows (+ tier) -> predicted_bandwidth_mib_s (the pipeline predicts log bandwidth)."""

    def __init__(self, pipeline, features):
        self.pipeline, self.features = pipeline, list(features)

    def predict(self, context, model_input, params=None):
        X = pd.DataFrame(model_input)[self.features]
        return pd.DataFrame({"predicted_bandwidth_mib_s": np.exp(self.pipeline.predict(X))})
