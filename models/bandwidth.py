"""Bandwidth model: log(bandwidth) of a file (silver/file_features) or a job (silver/job_features)
from its I/O features plus the tier it ran on. Metrics: MdAPE, R² (of log bandwidth), RMSE (of log).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import ShuffleSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from models.placement import preprocessor
from models.pyfunc import _as_float, _log2
from schemas.placement_labels import FEATURES

FILE_FEATURES = (*FEATURES, "tier")
FILE_TARGET = "bandwidth_mib_s"
JOB_NUMERIC = ("nprocs", "file_count", "shared_file_count", "small_requests", "medium_requests", "read_requests",
               "write_requests", "bytes_read", "bytes_written")
JOB_FEATURES = (*JOB_NUMERIC, "seq_pct", "tier")
JOB_TARGET = "throughput_mib_s"
REGRESSORS = ("linear", "decision_tree", "random_forest", "gradient_boosting", "xgboost", "lightgbm")


def regressor(name: str, params: dict | None = None, seed: int = 0):
    p = dict(params or {})
    if name == "linear":
        from sklearn.linear_model import Ridge
        return Ridge(**{"alpha": 1.0, **p})
    if name == "decision_tree":
        from sklearn.tree import DecisionTreeRegressor
        return DecisionTreeRegressor(**{"max_depth": 10, "min_samples_leaf": 2, "random_state": seed, **p})
    if name == "random_forest":
        from sklearn.ensemble import RandomForestRegressor
        return RandomForestRegressor(**{"n_estimators": 60, "min_samples_leaf": 2, "n_jobs": 1, "random_state": seed, **p})
    if name == "gradient_boosting":
        from sklearn.ensemble import GradientBoostingRegressor
        return GradientBoostingRegressor(**{"n_estimators": 150, "max_depth": 3, "random_state": seed, **p})
    if name == "xgboost":
        from xgboost import XGBRegressor
        return XGBRegressor(**{"n_estimators": 150, "max_depth": 4, "learning_rate": 0.1, "n_jobs": 1,
                               "random_state": seed, **p})
    if name == "lightgbm":
        from lightgbm import LGBMRegressor
        return LGBMRegressor(**{"n_estimators": 150, "num_leaves": 15, "min_child_samples": 5, "n_jobs": 1,
                                "verbose": -1, "random_state": seed, **p})
    raise ValueError(f"unknown regressor {name!r}; known: {', '.join(REGRESSORS)}")


def _job_preprocessor() -> ColumnTransformer:
    return ColumnTransformer([
        ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["tier"]),
        ("num", Pipeline([("log2", FunctionTransformer(_log2, feature_names_out="one-to-one")),
                          ("scale", StandardScaler())]), list(JOB_NUMERIC)),
        ("pct", FunctionTransformer(_as_float, feature_names_out="one-to-one"), ["seq_pct"]),
    ])


def build_estimator(name: str, params: dict | None = None, level: str = "file", seed: int = 0) -> Pipeline:
    """Pipeline(ColumnTransformer -> regressor) predicting natural-log bandwidth from raw columns."""
    prep = preprocessor(FEATURES, extra_categorical=("tier",)) if level == "file" else _job_preprocessor()
    return Pipeline([("prep", prep), ("model", regressor(name, params, seed))])


def metrics(measured, predicted) -> dict:
    """MdAPE (%) on bandwidth; R² and RMSE on natural-log bandwidth."""
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    lm, lp = np.log(m), np.log(p)
    ss = np.sum((lm - lm.mean()) ** 2)
    return {"mdape_pct": float(100 * np.median(np.abs(p - m) / m)),
            "r2_log": float(1 - np.sum((lm - lp) ** 2) / ss) if ss > 0 else float("nan"),
            "rmse_log": float(np.sqrt(np.mean((lm - lp) ** 2)))}


def splits(n_rows: int, n: int, test_fraction: float, seed: int):
    return list(ShuffleSplit(n_splits=n, test_size=test_fraction, random_state=seed).split(np.zeros(n_rows)))


def fit_and_evaluate(name: str, X: pd.DataFrame, bandwidth: pd.Series, *, level: str = "file", params=None,
                     n_splits: int = 10, test_fraction: float = 0.1, seed: int = 42) -> dict:
    """Held-out MdAPE / R² / RMSE (mean ± std over random splits) of one regressor."""
    y = np.log(bandwidth.to_numpy(dtype=float))
    rows = []
    for tr, te in splits(len(X), n_splits, test_fraction, seed):
        est = build_estimator(name, params, level, seed).fit(X.iloc[tr], y[tr])
        rows.append(metrics(np.exp(y[te]), np.exp(est.predict(X.iloc[te]))))
    df = pd.DataFrame(rows)
    out = {"model": name, "level": level}
    for c in df.columns:
        out[f"{c}_mean"], out[f"{c}_std"] = float(df[c].mean()), float(df[c].std(ddof=0))
    return out
