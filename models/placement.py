"""Placement model (PrismIO §VII): which tier (bb | pfs) gives a file's I/O pattern the better bandwidth.

Inputs are I/O characteristics only (`FEATURES`) — never tier, paths, mounts, times or
bandwidths. `build_estimator(name, params)` returns an sklearn Pipeline whose ColumnTransformer
one-hot encodes the categoricals, so a registered model takes raw feature rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from models.pyfunc import _as_float, _log2  # pickled by value with the model
from schemas.placement_labels import FEATURES

CATEGORICAL = ("interface", "io_type")
BOOLEAN = (
    "collective",
    "fsync",
    "fsync_per_write",
    "preallocate",
    "file_view",
    "random_access",
    "file_per_process",
    "unique_dir",
)
NUMERIC = ("transfer_size", "rw_per_open", "n_ranks", "nprocs")  # log2-scaled: they span decades


def log_scaled() -> Pipeline:
    """log2 (clipped at 1), then standard scaling: numbers that span decades."""
    return Pipeline(
        [
            ("log2", FunctionTransformer(_log2, feature_names_out="one-to-one")),
            ("scale", StandardScaler()),
        ]
    )


def preprocessor(features=FEATURES, extra_categorical=()) -> ColumnTransformer:
    cats = [
        c for c in (*CATEGORICAL, *extra_categorical) if c in features or c in extra_categorical
    ]
    parts = [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), cats)]
    bools = [c for c in BOOLEAN if c in features]
    nums = [c for c in NUMERIC if c in features]
    if bools:
        parts.append(
            ("bool", FunctionTransformer(_as_float, feature_names_out="one-to-one"), bools)
        )
    if nums:
        parts.append(("num", log_scaled(), nums))
    return ColumnTransformer(parts, remainder="drop", verbose_feature_names_out=True)


def classifier(name: str, params: dict | None = None, seed: int = 0):
    p = dict(params or {})
    if name == "decision_tree":
        from sklearn.tree import DecisionTreeClassifier

        return DecisionTreeClassifier(**{"max_depth": 8, "random_state": seed, **p})
    if name == "random_forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(
            **{"n_estimators": 60, "n_jobs": 1, "random_state": seed, **p}
        )
    if name == "gradient_boosting":
        from sklearn.ensemble import GradientBoostingClassifier

        return GradientBoostingClassifier(
            **{"n_estimators": 60, "max_depth": 3, "random_state": seed, **p}
        )
    if name == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(
            **{
                "n_estimators": 60,
                "num_leaves": 15,
                "min_child_samples": 5,
                "n_jobs": 1,
                "verbose": -1,
                "random_state": seed,
                **p,
            }
        )
    if name == "logistic_regression":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(**{"max_iter": 2000, "C": 1.0, **p})
    if name == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        return KNeighborsClassifier(**{"n_neighbors": 5, **p})
    if name == "svm":
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.svm import SVC

        return CalibratedClassifierCV(SVC(**{"C": 3.0, "random_state": seed, **p}), ensemble=False)
    if name == "naive_bayes":
        from sklearn.naive_bayes import GaussianNB

        return GaussianNB(**p)
    if name == "mlp":
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(
            **{"hidden_layer_sizes": (32,), "max_iter": 1500, "random_state": seed, **p}
        )
    if name == "adaboost":
        from sklearn.ensemble import AdaBoostClassifier

        return AdaBoostClassifier(**{"n_estimators": 60, "random_state": seed, **p})
    raise ValueError(f"unknown classifier {name!r}; known: {', '.join(CLASSIFIERS)}")


CLASSIFIERS = (
    "decision_tree",
    "random_forest",
    "gradient_boosting",
    "lightgbm",
    "logistic_regression",
    "knn",
    "svm",
    "naive_bayes",
    "mlp",
    "adaboost",
)


def build_estimator(
    name: str, params: dict | None = None, features=FEATURES, seed: int = 0
) -> Pipeline:
    """An unfitted Pipeline(ColumnTransformer -> classifier) taking raw feature columns."""
    return Pipeline([("prep", preprocessor(features)), ("model", classifier(name, params, seed))])


def fit_and_evaluate(
    name: str,
    X: pd.DataFrame,
    y: pd.Series,
    folds,
    *,
    params=None,
    strong: pd.Series | None = None,
    features=FEATURES,
    seed: int = 0,
    estimator=None,
) -> dict:
    """Accuracy of one classifier over grouped `folds` (models/evaluation.py): mean ± std per fold,
    beside the majority class of each fold's training part (the baseline), also on the `strong`
    subset (label_margin_gt_std). `pooled` is the accuracy over every (fold, test row) pair, the
    figure promotion compares; `vs_baseline` (right where the majority was wrong, wrong where it was
    right) over the same pairs, McNemar's discordant counts (`evaluation.select`).
    `estimator(seed)` overrides the named pipeline (the reference)."""
    acc, acc_strong, base, base_strong = [], [], [], []
    hits = total = better = worse = 0
    X = X[list(features)] if estimator is None else X
    for tr, te in folds:
        est = estimator(seed) if estimator else build_estimator(name, params, features, seed)
        est.fit(X.iloc[tr], y.iloc[tr])
        pred = np.asarray(est.predict(X.iloc[te]))
        truth = y.iloc[te].to_numpy()
        majority = y.iloc[tr].mode().iloc[0]
        acc.append(float(np.mean(pred == truth)))
        base.append(float(np.mean(truth == majority)))
        hits, total = hits + int(np.sum(pred == truth)), total + len(te)
        better += int(np.sum((pred == truth) & (truth != majority)))
        worse += int(np.sum((pred != truth) & (truth == majority)))
        if strong is not None:
            m = strong.iloc[te].fillna(False).to_numpy(dtype=bool)
            if m.any():
                acc_strong.append(float(np.mean(pred[m] == truth[m])))
                base_strong.append(float(np.mean(truth[m] == majority)))
    out = {
        "model": name,
        "accuracy_mean": float(np.mean(acc)),
        "accuracy_std": float(np.std(acc)),
        "baseline_mean": float(np.mean(base)),
        "pooled": hits / total,
        "accuracy": acc,
        "vs_baseline": {"accuracy_mean": (better, worse)},
    }
    if acc_strong:
        out.update(
            accuracy_strong_mean=float(np.mean(acc_strong)),
            accuracy_strong_std=float(np.std(acc_strong)),
            baseline_strong_mean=float(np.mean(base_strong)),
        )
    return out


def reference_estimator(params: pd.DataFrame):
    """The true-parameter reference: a decision tree given a benchmark's own parameters (one-hot
    text columns, numbers as they are), the ceiling the trace-feature models are measured against."""
    from sklearn.tree import DecisionTreeClassifier

    text = [c for c in params.columns if params[c].dtype == object]

    def make(seed: int) -> Pipeline:
        prep = ColumnTransformer(
            [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), text)],
            remainder="passthrough",
        )
        return Pipeline([("prep", prep), ("model", DecisionTreeClassifier(random_state=seed))])

    return make


def importances(
    estimator: Pipeline, X: pd.DataFrame, y: pd.Series, seed: int = 0, repeats: int = 5
) -> pd.Series:
    """Permutation importance of each raw feature (drop in accuracy when it is shuffled)."""
    from sklearn.inspection import permutation_importance

    r = permutation_importance(estimator, X, y, n_repeats=repeats, random_state=seed, n_jobs=1)
    return pd.Series(r.importances_mean, index=list(X.columns)).sort_values(ascending=False)


def eliminate_features(
    name: str,
    X: pd.DataFrame,
    y: pd.Series,
    folds,
    *,
    seed: int = 0,
    tolerance: float = 0.005,
    features=FEATURES,
) -> tuple[list[str], list[dict]]:
    """Recursive (backward) elimination over raw features (PrismIO §VII's reduced tree): drop the
    feature whose removal costs the least mean accuracy over the grouped `folds`, while the accuracy
    stays within `tolerance` of the best seen. Returns the kept features and the trail."""
    keep = list(features)
    score = fit_and_evaluate(name, X, y, folds, seed=seed, features=keep)["accuracy_mean"]
    best, trail = score, [{"features": list(keep), "accuracy": score}]
    while len(keep) > 1:
        trials = {
            f: fit_and_evaluate(name, X, y, folds, seed=seed, features=[k for k in keep if k != f])[
                "accuracy_mean"
            ]
            for f in keep
        }
        drop, s = max(trials.items(), key=lambda kv: kv[1])
        if s < best - tolerance:
            break
        keep.remove(drop)
        best = max(best, s)
        trail.append({"dropped": drop, "features": list(keep), "accuracy": s})
    return keep, trail
