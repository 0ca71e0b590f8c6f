"""MLflow pyfunc wrappers of the fitted pipelines. Pickled by value (cloudpickle), so a registered
model loads with mlflow + scikit-learn (+ lightgbm / xgboost) alone, without this project.
Nothing here may import the project.
"""

import mlflow.pyfunc
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, clone


def _log2(x):
    """Feature transform used inside the pipelines (numbers spanning decades)."""
    return np.log2(np.clip(np.asarray(x, dtype=float), 1.0, None))


def _as_float(x):
    return np.asarray(x, dtype=float)


def _bytes_per_open(x):
    """Adds `bytes_per_open` = transfer_size x rw_per_open: the bytes a rank moves per open, which a
    change of request size at the same data (the what-if's) leaves as it is."""
    x = pd.DataFrame(x).copy()
    size = pd.to_numeric(x["transfer_size"], errors="coerce").astype(float)
    x["bytes_per_open"] = size * pd.to_numeric(x["rw_per_open"], errors="coerce").astype(float)
    return x


class IncreasingInFirst(BaseEstimator, RegressorMixin):
    """A gradient-boosted regressor (lightgbm or xgboost) constrained to be non-decreasing in its
    first input column and free in the others (their monotone constraints, set at fit time when
    the width of the encoded input is known)."""

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y):
        n = np.asarray(X).shape[1]
        cst = [1] + [0] * (n - 1)
        self.estimator_ = clone(self.estimator)
        if type(self.estimator_).__module__.startswith("xgboost"):
            self.estimator_.set_params(monotone_constraints="(" + ",".join(map(str, cst)) + ")")
        else:
            self.estimator_.set_params(monotone_constraints=cst)
        self.estimator_.fit(X, y)
        return self

    def predict(self, X):
        return self.estimator_.predict(X)


class Placement(mlflow.pyfunc.PythonModel):
    """Raw feature rows -> predicted_tier, probability (of that tier)."""

    def __init__(self, pipeline, features):
        self.pipeline, self.features = pipeline, list(features)

    def predict(self, context, model_input, params=None):
        X = pd.DataFrame(model_input)[self.features]
        proba = self.pipeline.predict_proba(X)
        classes = np.asarray(self.pipeline.classes_)
        best = proba.argmax(axis=1)
        return pd.DataFrame(
            {"predicted_tier": classes[best].astype(str), "probability": proba.max(axis=1)}
        )


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
        return pd.DataFrame(
            {
                "predicted_bandwidth_mib_s": np.where(known, own, np.nan),
                "bandwidth_by_tier": [
                    json.dumps({t: float(v) for t, v in r.items()}) for r in by.to_dict("records")
                ],
                "best_tier": best.astype(str).to_numpy(),
                "best_bandwidth_mib_s": best_bw,
                "speedup": np.where(known, best_bw / own, np.nan),
            }
        )
