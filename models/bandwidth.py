"""Bandwidth models: log(bandwidth) of a file (silver/file_features) or a job (silver/job_features)
from its I/O features plus the tier it ran on, so one model predicts every tier it was trained on
(the speed-up of moving a file is the ratio of two predictions). Metrics: MdAPE, MAPE and R² of
bandwidth, R² and RMSE of log bandwidth, beside the median-per-tier rule on the same folds.

The file model's inputs are the placement features plus the tier, with one change of variable:
the requests per open (`rw_per_open`) enter as the **bytes per open** (transfer_size x
rw_per_open), so changing the request size at the same data — what the what-if advice asks
(`features/what_if.py`) — changes one input, not two. With `monotone=True` (the default) lightgbm
and xgboost are also constrained to predict a bandwidth **non-decreasing in the transfer size** at
fixed other inputs: the same bytes in fewer, larger requests is never predicted slower (on the IOR
sweep the largest transfer size is at or near its group's best almost everywhere). The other
regressors are not constrained (`monotone=False` gives the unconstrained recipe for all). On the
shipped sweep table (`python -m bench.models_eval`, `python -m bench.advice_eval`) bytes per open and the
constraint keep the model's error about the same and bring the advice closer to the group's best.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

from models.placement import BOOLEAN, CATEGORICAL, log_scaled
from models.pyfunc import IncreasingInFirst, _as_float, _bytes_per_open
from schemas.placement_labels import FEATURES

FILE_FEATURES = (*FEATURES, "tier")
FILE_TARGET = "bandwidth_mib_s"
JOB_NUMERIC = (
    "nprocs",
    "file_count",
    "shared_file_count",
    "small_requests",
    "medium_requests",
    "read_requests",
    "write_requests",
    "bytes_read",
    "bytes_written",
)
JOB_FEATURES = (*JOB_NUMERIC, "seq_pct", "tier")
JOB_TARGET = "throughput_mib_s"
REGRESSORS = (
    "linear",
    "decision_tree",
    "random_forest",
    "gradient_boosting",
    "xgboost",
    "lightgbm",
)
MONOTONE = ("xgboost", "lightgbm")  # regressors that take a monotone constraint on transfer size


def regressor(name: str, params: dict | None = None, seed: int = 0):
    p = dict(params or {})
    if name == "linear":
        from sklearn.linear_model import Ridge

        return Ridge(**{"alpha": 1.0, **p})
    if name == "decision_tree":
        from sklearn.tree import DecisionTreeRegressor

        return DecisionTreeRegressor(
            **{"max_depth": 10, "min_samples_leaf": 2, "random_state": seed, **p}
        )
    if name == "random_forest":
        from sklearn.ensemble import RandomForestRegressor

        return RandomForestRegressor(
            **{"n_estimators": 60, "min_samples_leaf": 2, "n_jobs": 1, "random_state": seed, **p}
        )
    if name == "gradient_boosting":
        from sklearn.ensemble import GradientBoostingRegressor

        return GradientBoostingRegressor(
            **{"n_estimators": 150, "max_depth": 3, "random_state": seed, **p}
        )
    if name == "xgboost":
        from xgboost import XGBRegressor

        return XGBRegressor(
            **{
                "n_estimators": 150,
                "max_depth": 4,
                "learning_rate": 0.1,
                "n_jobs": 1,
                "random_state": seed,
                **p,
            }
        )
    if name == "lightgbm":
        from lightgbm import LGBMRegressor

        return LGBMRegressor(
            **{
                "n_estimators": 150,
                "num_leaves": 15,
                "min_child_samples": 5,
                "n_jobs": 1,
                "verbose": -1,
                "random_state": seed,
                **p,
            }
        )
    raise ValueError(f"unknown regressor {name!r}; known: {', '.join(REGRESSORS)}")


def _job_preprocessor() -> ColumnTransformer:
    return ColumnTransformer(
        [
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["tier"]),
            ("num", log_scaled(), list(JOB_NUMERIC)),
            ("pct", FunctionTransformer(_as_float, feature_names_out="one-to-one"), ["seq_pct"]),
        ]
    )


def _file_preprocessor() -> Pipeline:
    """FILE_FEATURES -> model input: transfer size first (log2, scaled: the column `monotone`
    constrains), then the categoricals with the tier one-hot, the booleans, and bytes per open,
    ranks and processes (log2, scaled); `rw_per_open` itself is not an input."""
    numeric = ["bytes_per_open", "n_ranks", "nprocs"]
    cols = ColumnTransformer(
        [
            ("size", log_scaled(), ["transfer_size"]),
            (
                "cat",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                [*CATEGORICAL, "tier"],
            ),
            ("bool", FunctionTransformer(_as_float, feature_names_out="one-to-one"), list(BOOLEAN)),
            ("num", log_scaled(), numeric),
        ],
        remainder="drop",
        verbose_feature_names_out=True,
    )
    return Pipeline([("per_open", FunctionTransformer(_bytes_per_open)), ("cols", cols)])


def build_estimator(
    name: str, params: dict | None = None, level: str = "file", seed: int = 0, monotone: bool = True
) -> Pipeline:
    """Pipeline(preprocessing -> regressor) predicting natural-log bandwidth from raw columns; at
    file level with `monotone`, lightgbm and xgboost are non-decreasing in transfer size (see the
    module's docstring)."""
    if level != "file":
        return Pipeline([("prep", _job_preprocessor()), ("model", regressor(name, params, seed))])
    model = regressor(name, params, seed)
    if monotone and name in MONOTONE:
        model = IncreasingInFirst(model)
    return Pipeline([("prep", _file_preprocessor()), ("model", model)])


def reference_estimator(params: pd.DataFrame, name: str = "lightgbm"):
    """The true-parameter reference for bandwidth: the `name` regressor (the file model's default
    kind, unconstrained) given a benchmark's own parameters (`ior_*`: text columns one-hot, numbers
    as they are, since trees split on order alone) and the tier instead of the trace features: how
    much of the bandwidth of held-out configurations the benchmark's design itself explains (the
    placement counterpart is `placement.reference_estimator`). `params` must include `tier`."""
    text = [c for c in params.columns if params[c].dtype == object or c == "tier"]

    def make(seed: int) -> Pipeline:
        prep = ColumnTransformer(
            [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), text)],
            remainder="passthrough",
        )
        return Pipeline([("prep", prep), ("model", regressor(name, seed=seed))])

    return make


def metrics(measured, predicted) -> dict:
    """MdAPE and MAPE (%, the PIDX papers' metric) and R² on bandwidth; R² and RMSE on natural-log
    bandwidth (bandwidths span decades: the log figures weigh every decade alike)."""
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    lm, lp = np.log(m), np.log(p)
    ape = np.abs(p - m) / m
    ss, ss_log = np.sum((m - m.mean()) ** 2), np.sum((lm - lm.mean()) ** 2)
    return {
        "mdape_pct": float(100 * np.median(ape)),
        "mape_pct": float(100 * np.mean(ape)),
        "r2": float(1 - np.sum((m - p) ** 2) / ss) if ss > 0 else float("nan"),
        "r2_log": float(1 - np.sum((lm - lp) ** 2) / ss_log) if ss_log > 0 else float("nan"),
        "rmse_log": float(np.sqrt(np.mean((lm - lp) ** 2))),
    }


def median_rule(X_train: pd.DataFrame, bw_train, X_test: pd.DataFrame) -> np.ndarray:
    """The plain-rule baseline: the training median bandwidth of the row's tier (overall median for
    a tier the training part lacks)."""
    train = pd.DataFrame({"tier": X_train["tier"].to_numpy(), "bw": np.asarray(bw_train, float)})
    med = train.groupby("tier").bw.median()
    return X_test["tier"].map(med).fillna(train.bw.median()).to_numpy(dtype=float)


def app_median_rule(apps_train, bw_train, apps_test) -> np.ndarray:
    """The per-application baseline (issue 40): the training median bandwidth of the row's
    application where it has history in the training part, the training part's global median
    otherwise (every held-out application of a split grouped by application)."""
    train = pd.DataFrame({"app": np.asarray(apps_train, object), "bw": np.asarray(bw_train, float)})
    med = train.groupby("app").bw.median()
    return (
        pd.Series(np.asarray(apps_test, object))
        .map(med)
        .fillna(train.bw.median())
        .to_numpy(dtype=float)
    )


def app_scores(
    name: str, X: pd.DataFrame, bandwidth, apps, folds, *, level: str, seed: int = 0
) -> dict:
    """On each (train, test) of `folds`: the model `name` refit on train (None: baselines only), the
    per-application median (`app_median_rule`) and the median-per-tier rule (`median_rule`),
    scored on test (`metrics`); the means over folds as `model_*`, `app_baseline_*`,
    `tier_baseline_*` (mdape_pct, r2_log), with `test_rows` and `test_apps_with_history` (share of
    held-out rows whose application has rows in the training part). None when no fold has rows
    on both sides."""
    y = np.log(np.asarray(bandwidth, float))
    apps = np.asarray(apps, object)
    per = []
    for tr, te in folds:
        if not len(te) or not len(tr):
            continue
        truth = np.exp(y[te])
        got = {}
        if name is not None:
            est = build_estimator(name, level=level, seed=seed).fit(X.iloc[tr], y[tr])
            got["model"] = metrics(truth, np.exp(est.predict(X.iloc[te])))
        got |= {
            "app_baseline": metrics(truth, app_median_rule(apps[tr], np.exp(y[tr]), apps[te])),
            "tier_baseline": metrics(truth, median_rule(X.iloc[tr], np.exp(y[tr]), X.iloc[te])),
        }
        row = {f"{k}_{m}": v[m] for k, v in got.items() for m in ("mdape_pct", "r2_log")}
        row["test_rows"] = len(te)
        # a hash look-up: numpy's isin on object arrays compares every pair (test x train rows)
        row["test_apps_with_history"] = (
            float(pd.Series(apps[te]).isin(set(apps[tr])).mean()) if len(te) else 0.0
        )
        per.append(row)
    if not per:
        return None
    df = pd.DataFrame(per)
    out = {k: float(df[k].mean()) for k in df.columns if k != "test_rows"}
    out["test_rows"] = int(df["test_rows"].sum())
    return out


def closer(measured, predicted, rule) -> dict:
    """metric -> (rows where `predicted` is closer to `measured` than `rule`, rows where `rule` is),
    in each metric's own error: absolute percentage error (MdAPE), |log error| (R²(log))."""
    m, p, r = (np.asarray(a, float) for a in (measured, predicted, rule))
    out = {}
    for k, (em, eb) in {
        "mdape_pct_mean": (np.abs(p - m) / m, np.abs(r - m) / m),
        "r2_log_mean": (np.abs(np.log(p / m)), np.abs(np.log(r / m))),
    }.items():
        out[k] = (int(np.sum(em < eb)), int(np.sum(em > eb)))
    return out


def _fold(
    name: str,
    X: pd.DataFrame,
    y: np.ndarray,
    tr,
    te,
    level: str,
    params,
    seed: int,
    monotone: bool,
    estimator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One grouped split: (measured, predicted, median rule) bandwidths of its held-out rows."""
    est = estimator(seed) if estimator else build_estimator(name, params, level, seed, monotone)
    est.fit(X.iloc[tr], y[tr])
    return (
        np.exp(y[te]),
        np.exp(est.predict(X.iloc[te])),
        median_rule(X.iloc[tr], np.exp(y[tr]), X.iloc[te]),
    )


def fit_and_evaluate(
    name: str,
    X: pd.DataFrame,
    bandwidth: pd.Series,
    folds,
    *,
    level: str = "file",
    params=None,
    seed: int = 0,
    monotone: bool = True,
    estimator=None,
    n_jobs: int = 1,
) -> dict:
    """Held-out metrics (mean ± std over grouped `folds`) of one regressor, and of the median-per-tier
    rule on the same folds (`baseline_*`). `pooled_r2_log` pools every (fold, test row) pair;
    `vs_baseline` (`evaluation.select`'s sign test), per metric, counts the pairs where the model's
    error is below / above the rule's in that metric's own terms: the absolute percentage error
    for MdAPE, the |log error| for R²(log). They differ: an over-prediction's APE has no ceiling and
    an under-prediction's stops at 100%, so a model closer in log terms on most rows can still be
    farther in APE. `estimator(seed)` overrides the named pipeline (the reference).

    `n_jobs` fits that many splits at once, in threads (joblib; -1: one per core): the regressors'
    fitting runs in C/Cython without the GIL, and every split's own estimator and seed make the
    result the same as one at a time (`tests/models/test_bandwidth.py`). `models.cv_jobs` sets it (0: -1)."""
    y = np.log(bandwidth.to_numpy(dtype=float))
    rows, base, pooled_m, pooled_p = [], [], [], []
    counts = {"mdape_pct_mean": [0, 0], "r2_log_mean": [0, 0]}  # (model closer, rule closer)
    args = (level, params, seed, monotone, estimator)
    if n_jobs == 1:
        held = [_fold(name, X, y, tr, te, *args) for tr, te in folds]
    else:
        from joblib import Parallel, delayed

        held = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_fold)(name, X, y, tr, te, *args) for tr, te in folds
        )
    for truth, pred, rule in held:  # in the splits' order, however they ran
        rows.append(metrics(truth, pred))
        base.append(metrics(truth, rule))
        for k, (b, w) in closer(truth, pred, rule).items():
            counts[k][0] += b
            counts[k][1] += w
        pooled_m.append(truth)
        pooled_p.append(pred)
    out = {"model": name, "level": level, "vs_baseline": {k: tuple(v) for k, v in counts.items()}}
    for prefix, df in (("", pd.DataFrame(rows)), ("baseline_", pd.DataFrame(base))):
        for c in df.columns:
            out[f"{prefix}{c}_mean"], out[f"{prefix}{c}_std"] = (
                float(df[c].mean()),
                float(df[c].std(ddof=0)),
            )
    out["pooled_r2_log"] = metrics(np.concatenate(pooled_m), np.concatenate(pooled_p))["r2_log"]
    return out
