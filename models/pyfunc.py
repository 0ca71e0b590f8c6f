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
    """Raw feature rows (+ tier) -> the predicted bandwidth on the row's tier and on every tier the
    model was trained on (the pipeline predicts log bandwidth):

    predicted_bandwidth_mib_s   on the row's own tier (null when the model never saw that tier)
    bandwidth_by_tier           JSON object {tier: MiB/s} over the model's tiers
    best_tier, best_bandwidth_mib_s
    speedup                     best / predicted on the row's tier (1.0 when already on the best)
    """

    def __init__(self, pipeline, features, tiers=()):
        self.pipeline, self.features, self.tiers = pipeline, list(features), [str(t) for t in tiers]

    def predict(self, context, model_input, params=None):
        import json

        X = pd.DataFrame(model_input)[self.features].reset_index(drop=True)
        tiers = getattr(self, "tiers", [])  # versions logged before per-tier predictions had none
        own = np.exp(self.pipeline.predict(X))
        if not tiers:
            return pd.DataFrame({"predicted_bandwidth_mib_s": own})
        by = pd.DataFrame({t: np.exp(self.pipeline.predict(X.assign(tier=t))) for t in tiers})
        known = X["tier"].astype(str).isin(tiers).to_numpy()
        best = by.idxmax(axis=1)
        best_bw = by.max(axis=1).to_numpy()
        return pd.DataFrame({
            "predicted_bandwidth_mib_s": np.where(known, own, np.nan),
            "bandwidth_by_tier": [json.dumps({t: float(v) for t, v in r.items()}) for r in by.to_dict("records")],
            "best_tier": best.astype(str).to_numpy(),
            "best_bandwidth_mib_s": best_bw,
            "speedup": np.where(known, best_bw / own, np.nan),
        })
