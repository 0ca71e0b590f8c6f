"""train: placement and bandwidth models in MLflow, evaluated on grouped splits, refit on all labels.

Reads:  gold/placement_labels, silver/file_features, silver/job_features, bronze/logs (suspect
        logs' rows, silver/job_features.suspect, left out of the lake's bandwidth rows),
        gold/app_runs (the watch's application key: the lake's bandwidth rows are split by it);
        the benchmark table (`models.benchmark_table`, else `models.default_benchmark` when the
        lake has no two-tier labels or bandwidths: `models/benchmarks/`).

Which rows train the bandwidth models: the lake's own (files: silver/file_features; jobs: the
plausible single-tier jobs of silver/job_features) when they span two tiers, or when they hold
at least `models.lake_min_jobs` such jobs from at least `models.lake_min_apps` applications
(decision record 0033), even on one tier; else the benchmark. A benchmark forced in
`models.benchmark_table` always wins. Placement is unchanged: it needs two tiers.
Writes: MLflow runs (experiments `iolake-placement`, `iolake-bandwidth`, `iolake-job-bandwidth`)
        and registered versions of the three models.

How a model is chosen (models/evaluation.py):
1. every model in `models.classifiers` / `models.regressors` is scored on the same
   `models.splits` grouped splits: a configuration's files and a log's files are never on both
   sides; the lake's bandwidth rows are split by application (gold/app_runs.app), so a model is
   scored on applications it never saw. Each figure stands beside its baseline on the same
   splits: the majority class (placement), the median bandwidth of the tier (bandwidth; on the
   lake's rows also each application's own median where it has history, the global median
   otherwise, and a second split, time-ordered within each application, where every held-out
   run's application has history), and, when the labels come from a
   benchmark with its own parameters, a decision tree given those parameters (the reference);
2. the best mean score wins; the winner is refit on *all* labelled rows and registered;
3. the new version takes `models.alias` when it beats the version holding it on the same rows
   (every row of a held-out fold), else `challenger`; the run records why.
The recursive-elimination decision tree of PrismIO §VII is logged as its own run.
Skipped when MLflow already holds a run trained on the same version of the same training data
with the same config. Too few labels is reported, not an error.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from iolake.cli import entry_points
from iolake.config import Config
from iolake.lake import delta_id
from iolake.runinfo import RunInfo

MIN_LABELS = 10  # label groups (and, per tier, 2) for grouped splits to hold both tiers out
MIN_JOBS = 20
MIN_SPLIT_GROUPS = 5  # fewer (log-connected) split groups than this cannot be split 10 ways
LAKE_ROWS_TAG = "iolake.lake_rows"  # rows a lake-trained model saw (feature tables, or labels)


def _already_trained(exp_id: str, version, digest: str) -> bool:
    import mlflow

    runs = mlflow.search_runs(
        [exp_id],
        filter_string=f"tags.`iolake.training_version` = '{version}' and "
        f"tags.`iolake.model_digest` = '{digest}' and "
        f"attributes.status = 'FINISHED'",
        max_results=1,
    )
    return len(runs) > 0


def _lake_rows_seen(exp_id: str, table_id: str, digest: str) -> int | None:
    """The lake rows (LAKE_ROWS_TAG) of the newest finished run of the experiment trained on the
    lake table `table_id` (any version) with this configuration; None when there is none."""
    import mlflow

    runs = mlflow.search_runs(
        [exp_id],
        filter_string=f"tags.`iolake.training_version` LIKE '{table_id}@%' and "
        f"tags.`iolake.model_digest` = '{digest}' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    col = f"tags.{LAKE_ROWS_TAG}"
    if not len(runs) or col not in runs.columns or pd.isna(runs[col].iloc[0]):
        return None
    return int(runs[col].iloc[0])


def lake_growth_holds(
    ctx,
    table_id: str,
    rows_now: int,
    models: tuple[str, ...] | None = None,
    what: str = "bandwidth",
) -> str | None:
    """`models.retrain_growth`: when `models` (default: both bandwidth models) were last trained on
    the lake table `table_id` and it has grown by less than that share of the rows they saw since,
    a line saying so (the stage keeps the champions: no retraining for a night's drop); else None.
    A new champion makes `score` predict every file of the lake again with it, so keeping it is
    what keeps a night's scoring in proportion to the night."""
    from models import tracking

    conf, growth = ctx.conf, ctx.conf.models.retrain_growth
    if growth <= 0:
        return None
    models = models or (conf.models.bandwidth_model, conf.models.job_bandwidth_model)
    then = []
    for name in models:
        rows = _lake_rows_seen(tracking.experiment(conf, name), table_id, ctx.info.model_digest)
        if rows is None or rows_now >= rows * (1 + growth):
            return None
        then.append(rows)
    base = min(then)
    who = "models were" if len(models) > 1 else "model was"
    return (
        f"[train] {what}: the lake's {who} trained on {base:,} rows; the lake holds "
        f"{rows_now:,} ({(rows_now - base) / base:+.1%}), under models.retrain_growth "
        f"{growth:.0%}: kept, not retrained"
    )


def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def enough_labels(y: pd.Series) -> bool:
    counts = y.value_counts()
    return len(y) >= MIN_LABELS and len(counts) >= 2 and counts.min() >= 2


def _weighted_rows(X: pd.DataFrame, target, folds):
    """The rows of every held-out fold, each as often as it was held out."""
    idx = np.concatenate([te for _, te in folds])
    return X.iloc[idx].reset_index(drop=True), np.asarray(target)[idx]


def holder_score(evaluate, artefact_score):
    """`score_fn` for registry.register_and_promote: the alias holder's recipe (its model kind, from
    its run's params) evaluated on the challenger's folds; a holder whose kind is unknown here is
    scored as it is (`artefact_score(version)`) on the held-out rows."""

    def score(mv):
        import mlflow

        kind = mlflow.get_run(mv.run_id).data.params.get("model") if mv.run_id else None
        try:
            return evaluate(kind)
        except (ValueError, TypeError):
            return artefact_score(mv)

    return score


def train_placement(
    labels: pd.DataFrame,
    groups,
    conf: Config,
    info: RunInfo,
    version: str,
    source: str,
    reference: pd.DataFrame | None = None,
    echo=print,
    source_text: str | None = None,
    lake_rows: int | None = None,
) -> dict:
    """Compare `models.classifiers` on grouped splits, refit the best on every label, register it;
    `lake_rows`: the label rows, recorded (LAKE_ROWS_TAG) when the labels come from the lake."""
    import mlflow

    from models import evaluation, placement, provenance, pyfunc, registry, tracking
    from schemas.placement_labels import FEATURES

    m = conf.models
    X, y = labels[list(FEATURES)].reset_index(drop=True), labels["best_tier"].reset_index(drop=True)
    strong = labels["label_margin_gt_std"].astype("boolean").reset_index(drop=True)
    folds = evaluation.splits(groups, m.splits, m.test_fraction, m.seed)
    echo(
        f"[train] placement: {len(X)} label rows from {source} (bb {int((y == 'bb').sum())} / "
        f"pfs {int((y == 'pfs').sum())}), {len(np.unique(groups))} split groups, {m.splits} grouped splits"
    )

    def show(r):
        echo(
            f"[train] placement {r['model']:<20} accuracy {r['accuracy_mean']:.3f} ± {r['accuracy_std']:.3f} "
            f"(majority {r['baseline_mean']:.3f}); margin>std {r.get('accuracy_strong_mean', float('nan')):.3f} "
            f"(majority {r.get('baseline_strong_mean', float('nan')):.3f}) [{r['seconds']:.1f} s]"
        )

    results = []
    for name in m.classifiers:
        t = time.monotonic()
        r = placement.fit_and_evaluate(name, X, y, folds, strong=strong, seed=m.seed)
        r["seconds"] = time.monotonic() - t
        results.append(r)
        show(r)
    ref = None
    if reference is not None:
        t = time.monotonic()
        ref = placement.fit_and_evaluate(
            "reference_true_params",
            reference.reset_index(drop=True),
            y,
            folds,
            strong=strong,
            seed=m.seed,
            estimator=placement.reference_estimator(reference),
        )
        ref["seconds"] = time.monotonic() - t
        show(ref)
    best, veto, note = evaluation.select(
        results,
        lambda r: (r["accuracy_mean"], r.get("accuracy_strong_mean", 0.0)),
        [("accuracy", "accuracy_mean", "baseline_mean", False)],
    )
    if note:
        echo(f"[train] placement: {note}")
    est = placement.build_estimator(best["model"], seed=m.seed).fit(
        X, y
    )  # the winner, refit on every label
    imp = placement.importances(est, X, y, seed=m.seed)
    echo(
        "[train] placement importances: "
        + ", ".join(f"{k} {v:.3f}" for k, v in imp.head(6).items())
    )

    exp = tracking.experiment(conf, m.placement_model)
    common_tags = {
        **tracking.tags(info),
        "iolake.training_table": "gold/placement_labels",
        "iolake.training_version": version,
        "iolake.label_source": source,
        "iolake.training_source": f"gold/placement_labels from {source_text or source}",
        provenance.ORIGIN_TAG: provenance.origin_for(m, source != "lake"),
        **({LAKE_ROWS_TAG: str(lake_rows)} if lake_rows is not None else {}),
    }
    t = time.monotonic()
    kept, trail = placement.eliminate_features("decision_tree", X, y, folds, seed=m.seed)
    rfe = trail[-1]["accuracy"]
    with mlflow.start_run(
        experiment_id=exp, run_name="placement-rfe-decision_tree", tags=common_tags
    ):
        mlflow.log_params(
            {"model": "decision_tree", "features": ",".join(kept), "elimination": "backward"}
        )
        mlflow.log_metrics({"accuracy_mean": rfe, "baseline_mean": best["baseline_mean"]})
        mlflow.log_dict({"trail": trail}, "elimination.json")
    echo(
        f"[train] placement recursive elimination (decision tree) keeps {len(kept)}: {', '.join(kept)}; "
        f"accuracy {rfe:.3f} [{time.monotonic() - t:.1f} s]"
    )

    Xp, yp = _weighted_rows(X, y, folds)
    with mlflow.start_run(
        experiment_id=exp, run_name=f"placement-{best['model']}", tags=common_tags
    ) as run:
        mlflow.log_params(
            {
                "model": best["model"],
                "features": ",".join(FEATURES),
                "splits": m.splits,
                "split": "grouped",
                "test_fraction": m.test_fraction,
                "seed": m.seed,
                "rows": len(X),
                "refit": "all labelled rows",
                "label_min_margin": m.label_min_margin,
                "training_version": version,
                "rfe_features": ",".join(kept),
            }
        )
        for r in results + ([ref] if ref else []):
            for k in (
                "accuracy_mean",
                "accuracy_std",
                "baseline_mean",
                "accuracy_strong_mean",
                "baseline_strong_mean",
            ):
                if k in r:
                    mlflow.log_metric(f"{r['model']}.{k}", r[k])
        metrics = {
            k: best[k]
            for k in (
                "accuracy_mean",
                "accuracy_std",
                "baseline_mean",
                "accuracy_strong_mean",
                "baseline_strong_mean",
            )
            if k in best
        }
        if ref:
            metrics["reference_accuracy_mean"] = ref["accuracy_mean"]
            if "accuracy_strong_mean" in ref:
                metrics["reference_accuracy_strong_mean"] = ref["accuracy_strong_mean"]
        mlflow.log_metrics({**metrics, "rfe_accuracy_mean": rfe})
        tr, te = folds[0]
        shown = placement.build_estimator(best["model"], seed=m.seed).fit(X.iloc[tr], y.iloc[tr])
        mlflow.log_figure(
            tracking.figure_confusion(y.iloc[te], shown.predict(X.iloc[te]), ["bb", "pfs"]),
            "confusion_matrix_split0.png",
        )
        mlflow.log_figure(
            tracking.figure_importances(imp, "permutation importance"), "importances.png"
        )
        mlflow.log_dict({"comparison": results, "reference": ref}, "selection.json")
        info_m = tracking.log_model(pyfunc.Placement(est, FEATURES), X)

        def artefact(mv):
            pred = (
                registry.load_version(m.placement_model, mv.version)
                .predict(Xp)["predicted_tier"]
                .to_numpy()
            )
            return float(np.mean(pred == yp))

        def recipe(kind):
            if kind == best["model"]:
                return best["accuracy_mean"]
            return placement.fit_and_evaluate(kind, X, y, folds, seed=m.seed)["accuracy_mean"]

        promo = registry.register_and_promote(
            m.placement_model,
            info_m.model_uri,
            run.info.run_id,
            best["accuracy_mean"],
            holder_score(recipe, artefact),
            "grouped-CV accuracy",
            m.alias,
            veto=veto,
        )
    echo(
        f"[train] {m.placement_model} v{promo['version']} ({best['model']}, refit on {len(X)} labels) -> "
        f"@{promo['alias']}: {promo['why']}"
    )
    return {
        "best": best["model"],
        "results": results,
        "reference": ref,
        "rfe": kept,
        "rfe_accuracy": rfe,
        **promo,
    }


def train_bandwidth(
    rows: pd.DataFrame,
    groups,
    features,
    target: str,
    level: str,
    model_name: str,
    conf: Config,
    info: RunInfo,
    version: str,
    source: str,
    echo=print,
    sample: str | None = None,
    reference: pd.DataFrame | None = None,
    apps: pd.DataFrame | None = None,
    lake_rows: int | None = None,
) -> dict:
    """Compare `models.regressors` on grouped splits (beside the median-per-tier rule), refit the best
    on every row, register it as `model_name`: one model that predicts every tier it saw. `sample`
    says how the rows were sampled (`sample_groups`' note), logged as the run's param `sample`.
    `reference` (a benchmark's own parameters and the tier, row for row): the true-parameter
    reference on the same folds (`bandwidth.reference_estimator`), printed and logged
    (`reference_*` metrics) beside the models; it never competes.

    `apps` (the lake's rows: columns app, start, log_id, row for row; `groups` are then the
    applications): the per-application median baseline beside the scores (`app_scores`), on the
    grouped splits and on a second split, time-ordered within each application
    (`evaluation.time_splits`), where the held-out runs' applications have history; printed and
    logged (`app_baseline_*`, `time_split.*`)."""
    import mlflow

    from models import bandwidth, evaluation, provenance, pyfunc, registry, tracking

    m = conf.models
    X = rows[list(features)].reset_index(drop=True)
    bw = rows[target].astype(float).reset_index(drop=True)
    tiers = sorted(X["tier"].astype(str).unique())
    folds = evaluation.splits(groups, m.splits, m.test_fraction, m.seed)
    cv_jobs = m.cv_jobs or -1  # splits fitted at once; models.cv_jobs 0: one per core (joblib's -1)
    echo(
        f"[train] bandwidth/{level}: {len(X)} rows from {source} on tiers {', '.join(tiers)}, "
        f"{len(np.unique(groups))} split groups"
    )
    results = []
    for name in m.regressors:
        t = time.monotonic()
        r = bandwidth.fit_and_evaluate(name, X, bw, folds, level=level, seed=m.seed, n_jobs=cv_jobs)
        r["seconds"] = time.monotonic() - t
        results.append(r)
        echo(
            f"[train] bandwidth/{level} {name:<18} MdAPE {r['mdape_pct_mean']:.1f}% MAPE {r['mape_pct_mean']:.0f}% "
            f"R² {r['r2_mean']:.3f} R²(log) {r['r2_log_mean']:.3f} (median rule: MdAPE "
            f"{r['baseline_mdape_pct_mean']:.1f}%, R²(log) {r['baseline_r2_log_mean']:.3f}) [{r['seconds']:.1f} s]"
        )
    ref = None
    if reference is not None:
        ref = bandwidth.fit_and_evaluate(
            "reference_true_params",
            reference.reset_index(drop=True),
            bw,
            folds,
            level=level,
            seed=m.seed,
            estimator=bandwidth.reference_estimator(reference),
            n_jobs=cv_jobs,
        )
        echo(
            f"[train] bandwidth/{level} reference: lightgbm on the benchmark's own parameters MdAPE "
            f"{ref['mdape_pct_mean']:.1f}% R²(log) {ref['r2_log_mean']:.3f} (not a candidate)"
        )
    best, veto, note = evaluation.select(
        results,
        lambda r: r["r2_log_mean"],
        [
            ("MdAPE %", "mdape_pct_mean", "baseline_mdape_pct_mean", True),
            ("R²(log)", "r2_log_mean", "baseline_r2_log_mean", False),
        ],
    )
    if note:
        echo(f"[train] bandwidth/{level}: {note}")
    by_app = _app_baselines(X, bw, apps, folds, best, level, m, echo) if apps is not None else {}
    if veto and source.startswith("silver/"):
        veto += (
            " (the lake's own files do not predict their bandwidth better than the median rule: set "
            "models.benchmark_table to train on a benchmark of two tiers instead)"
        )
    est = bandwidth.build_estimator(best["model"], level=level, seed=m.seed).fit(
        X, np.log(bw.to_numpy())
    )
    Xp, bp = _weighted_rows(X, bw, folds)
    exp = tracking.experiment(conf, model_name)
    with mlflow.start_run(
        experiment_id=exp,
        run_name=f"{level}-bandwidth-{best['model']}",
        tags={
            **tracking.tags(info),
            "iolake.training_version": version,
            "iolake.training_source": source,
            provenance.ORIGIN_TAG: provenance.origin_for(m, not source.startswith("silver/")),
            **({LAKE_ROWS_TAG: str(lake_rows)} if lake_rows is not None else {}),
        },
    ) as run:
        mlflow.log_params(
            {
                "model": best["model"],
                "features": ",".join(features),
                "rows": len(X),
                "level": level,
                "tiers": ",".join(tiers),
                "splits": m.splits,
                "split": "grouped by application" if apps is not None else "grouped",
                "seed": m.seed,
                "refit": "all rows",
                "training_version": version,
                "sample": sample or f"all rows (models.max_train_rows = {m.max_train_rows:,})",
                **(
                    {
                        "inputs": "rw_per_open as bytes_per_open (transfer_size x rw_per_open)",
                        "monotone": (
                            "non-decreasing in transfer_size"
                            if isinstance(est.named_steps["model"], pyfunc.IncreasingInFirst)
                            else "none"
                        ),
                    }
                    if level == "file"
                    else {}
                ),
            }
        )
        for r in results:
            for k, v in r.items():
                if k.endswith("_mean") or k.endswith("_std"):
                    mlflow.log_metric(f"{r['model']}.{k}", v)
        mlflow.log_metrics({k: best[k] for k in best if k.endswith("_mean") or k.endswith("_std")})
        if by_app:
            mlflow.log_metrics(by_app)
        if apps is not None:
            mlflow.log_dict(held_out(apps, folds), "splits.json")
        if ref is not None:
            mlflow.log_metrics(
                {
                    f"reference_{k}": ref[k]
                    for k in ("mdape_pct_mean", "mape_pct_mean", "r2_mean", "r2_log_mean")
                }
            )
        tr, te = folds[0]
        shown = bandwidth.build_estimator(best["model"], level=level, seed=m.seed).fit(
            X.iloc[tr], np.log(bw.iloc[tr])
        )
        mlflow.log_figure(
            tracking.figure_pred_vs_measured(
                bw.iloc[te].to_numpy(),
                np.exp(shown.predict(X.iloc[te])),
                f"{level} bandwidth, held-out split 0",
            ),
            "predicted_vs_measured_split0.png",
        )
        info_m = tracking.log_model(pyfunc.Bandwidth(est, features, tiers), X)

        def artefact(mv):
            pred = registry.load_version(model_name, mv.version).predict(Xp)[
                "predicted_bandwidth_mib_s"
            ]
            return bandwidth.metrics(bp, pred.to_numpy(dtype=float))["r2_log"]

        def recipe(kind):
            if kind == best["model"]:
                return best["r2_log_mean"]
            return bandwidth.fit_and_evaluate(
                kind, X, bw, folds, level=level, seed=m.seed, n_jobs=cv_jobs
            )["r2_log_mean"]

        promo = registry.register_and_promote(
            model_name,
            info_m.model_uri,
            run.info.run_id,
            best["r2_log_mean"],
            holder_score(recipe, artefact),
            "grouped-CV R²(log)",
            m.alias,
            veto=veto,
        )
    echo(
        f"[train] {model_name} v{promo['version']} ({best['model']}, refit on {len(X)} rows) -> @{promo['alias']}: "
        f"{promo['why']}"
    )
    return {"best": best["model"], "results": results, "reference": ref, "by_app": by_app, **promo}


SPLIT_LOGS_MAX = 50_000  # rows up to which splits.json lists each split's held-out logs


def held_out(apps: pd.DataFrame, folds) -> dict:
    """What each grouped split held out (the run's `splits.json`): its applications, and its logs
    while the rows are at most SPLIT_LOGS_MAX, so a reader can check that no application (and no
    log) trained and was scored in the same split."""
    app, log = apps["app"].to_numpy(dtype=object), apps["log_id"].to_numpy(dtype=object)
    listed = len(apps) <= SPLIT_LOGS_MAX
    return {
        "by": "application (gold/app_runs.app)",
        "rows": len(apps),
        "splits": [
            {
                "test_apps": sorted(set(app[te])),
                **({"test_logs": sorted(set(log[te]))} if listed else {}),
            }
            for _, te in folds
        ],
    }


def _app_baselines(X, bw, apps: pd.DataFrame, folds, best: dict, level: str, m, echo) -> dict:
    """The per-application median baseline (`bandwidth.app_median_rule`) beside the winner's scores:
    on the grouped-by-application `folds` (where no held-out application has history, so it is the
    training part's global median) and on one split time-ordered within each application
    (`evaluation.time_splits`: earlier runs train, later runs test), where it is each held-out
    run's own application's median. Printed; returned as MLflow metrics."""
    from models import bandwidth, evaluation

    app = apps["app"].to_numpy(dtype=object)
    out = {}
    g = bandwidth.app_scores(None, X, bw, app, folds, level=level, seed=m.seed)
    if g is not None:
        out |= {
            "app_baseline_mdape_pct_mean": g["app_baseline_mdape_pct"],
            "app_baseline_r2_log_mean": g["app_baseline_r2_log"],
            "app_split_test_apps_with_history": g["test_apps_with_history"],
        }
        echo(
            f"[train] bandwidth/{level} split by application ({len(folds)} splits, {len(np.unique(app))} "
            f"applications, held-out applications never seen): {best['model']} MdAPE "
            f"{best['mdape_pct_mean']:.1f}% R²(log) {best['r2_log_mean']:.3f}; per-application median "
            f"MdAPE {g['app_baseline_mdape_pct']:.1f}% R²(log) {g['app_baseline_r2_log']:.3f} "
            f"(the global median: {100 * g['test_apps_with_history']:.0f}% of held-out rows have "
            f"history); median per tier MdAPE {g['tier_baseline_mdape_pct']:.1f}% R²(log) "
            f"{g['tier_baseline_r2_log']:.3f}"
        )
    ts = evaluation.time_splits(app, apps["start"], apps["log_id"], m.test_fraction)
    t = bandwidth.app_scores(best["model"], X, bw, app, ts, level=level, seed=m.seed)
    if t is None:
        echo(
            f"[train] bandwidth/{level} time-ordered split: no application has two runs with a start "
            "time: not scored"
        )
        return out
    out |= {f"time_split.{k}": float(v) for k, v in t.items()}
    echo(
        f"[train] bandwidth/{level} time-ordered split within application ({t['test_rows']:,} later "
        f"rows held out, their applications' earlier runs train): {best['model']} MdAPE "
        f"{t['model_mdape_pct']:.1f}% R²(log) {t['model_r2_log']:.3f}; per-application median MdAPE "
        f"{t['app_baseline_mdape_pct']:.1f}% R²(log) {t['app_baseline_r2_log']:.3f}; median per tier "
        f"MdAPE {t['tier_baseline_mdape_pct']:.1f}% R²(log) {t['tier_baseline_r2_log']:.3f}"
    )
    return out


def file_model_rows(file_features, logs, m) -> tuple[pd.DataFrame, str | None]:
    """The file bandwidth model's rows from the lake, as `train` fits them: the data files
    (`data_files` of silver/file_features and bronze/logs DataFrames), sampled past
    `models.max_train_rows` by whole logs within every feature group (`sample_groups`), collected
    in a fixed order; (rows, the sample's note or None)."""
    from features.placement_labels import data_files
    from models.bandwidth import FILE_FEATURES
    from schemas.placement_labels import FEATURES

    df = data_files(file_features, logs, m.label_formats).select(
        "log_id", *FILE_FEATURES, "bandwidth_mib_s"
    )
    df, note = sample_groups(df, FEATURES, m.max_train_rows, m.seed, within="log_id")
    return df.orderBy("log_id", *FILE_FEATURES, "bandwidth_mib_s").toPandas(), note


def file_split_groups(rows: pd.DataFrame, what: str, echo) -> np.ndarray:
    """Split groups of file rows (`split_groups` of their feature groups, tied by their logs)."""
    from models.evaluation import feature_groups
    from schemas.placement_labels import FEATURES

    fg = feature_groups(rows, FEATURES)
    return split_groups(fg, pd.DataFrame({"group_id": fg, "log_id": rows.log_id}), what, echo)


def split_groups(feature_group, pairs: pd.DataFrame, what: str, echo) -> np.ndarray:
    """Split group of each row: the connected component of its feature group in `pairs`
    (group_id, log_id), so a log's files stay on one side. When the logs tie the feature groups
    into fewer than MIN_SPLIT_GROUPS components (jobs sharing patterns across many logs), the
    feature group alone, and the run says so."""
    from models.evaluation import connected_groups

    comp = connected_groups(pairs)
    groups = pd.Series(feature_group).map(comp)
    n = groups.nunique()
    if n >= MIN_SPLIT_GROUPS and not groups.isna().any():
        return groups.to_numpy()
    echo(
        f"[train] {what}: the logs tie {pd.Series(feature_group).nunique()} feature groups into {n} component(s): "
        f"splitting by feature group only (files of one log may sit on both sides)"
    )
    return pd.factorize(pd.Series(feature_group))[0]


def water_level(sizes, cap: int) -> int:
    """The largest k >= 1 for which groups of these `sizes`, each cut to at most k rows, hold at
    most `cap` rows together (every group smaller than k stays whole); 0 when even one row a
    group is more than `cap`. The total only grows with k: a bisection."""
    c = np.asarray(sizes, dtype=np.int64)
    if len(c) > cap:
        return 0
    lo, hi = 1, int(c.max())  # total(lo) <= cap holds
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if np.minimum(c, mid).sum() <= cap:
            lo = mid
        else:
            hi = mid - 1
    return lo


def sample_groups(df, columns, cap: int, seed: int, within: str | None = None):
    """(`df` with at most about `cap` rows, the sample's note): `df` itself and None within the cap.

    Past `cap`, with `within` (a column, e.g. log_id): **every group** of `columns` is kept, cut to
    at most about k rows, the largest k that keeps the total within `cap` (`water_level`: groups
    smaller than k stay whole). A larger group of n rows keeps the rows whose seeded hash of
    `within` falls in its first k/n: whole logs, and the same logs in every group, so the split
    groups (connected by logs) stay whole too. Without `within`, or when the groups alone are more
    than `cap`, rows are kept by a hash of `columns`: every row of one group kept or dropped
    together. Either way the same table gives the same sample, and the collect to the driver and
    the fits are bounded however large the lake grows.

    Whole groups alone do not bound a skewed table, nor keep its variety: when one feature group
    holds a large share of the rows, the sample is about the cap or far past it as that group's
    hash falls, and on a large lake a fixed cap keeps few of the configurations
    (decision record 0018 in docs/decisions/)."""
    import pyspark.sql.functions as F
    from pyspark.sql import Window

    sizes = (
        None
        if within is None
        else df.groupBy(*columns).count().select("count").toPandas()["count"].to_numpy()
    )
    n = df.count() if sizes is None else int(sizes.sum())
    if n <= cap:
        return df, None
    buckets = 1_000_000
    what = f"({', '.join(columns)})"
    if sizes is not None:
        k = water_level(sizes, cap)
        if k:
            size = F.count(F.lit(1)).over(Window.partitionBy(*columns))
            h = F.pmod(F.xxhash64(F.lit(seed), F.col(within)), F.lit(buckets))
            kept = int(np.minimum(sizes, k).sum())
            return (
                df.withColumn("_group_rows", size)
                .where(
                    (F.col("_group_rows") <= k) | (h < F.lit(buckets * k) / F.col("_group_rows"))
                )
                .drop("_group_rows"),
                f"{n:,} rows past models.max_train_rows = {cap:,}: all {len(sizes):,} groups of {what} kept, "
                f"each cut to about {k:,} rows (whole values of {within} by a seeded hash), about {kept:,} rows",
            )
    keep = int(buckets * cap / n)
    h = F.pmod(F.xxhash64(F.lit(seed), *[F.col(c) for c in columns]), F.lit(buckets))
    return df.where(h < keep), (
        f"{n:,} rows past models.max_train_rows = {cap:,}: about {cap:,} kept, whole "
        f"groups of {what} by a seeded hash"
    )


def _benchmark(conf) -> str | None:
    from models.benchmarks import resolve

    m = conf.models
    return (
        resolve(m.benchmark_table)
        if m.benchmark_table
        else (resolve(m.default_benchmark) if m.default_benchmark else None)
    )


def _train_placement_stage(ctx, out: dict) -> None:
    import pyspark.sql.functions as F

    from features.placement_labels import data_files, group_id, read_benchmark
    from models import evaluation, tracking
    from models.benchmarks import reference_params
    from schemas.placement_labels import FEATURES

    conf, echo, info = ctx.conf, ctx.echo, ctx.info
    labels_t = "gold/placement_labels"
    if not ctx.exists(labels_t) or ctx.read(labels_t).limit(1).count() == 0:
        echo(
            "[train] gold/placement_labels is missing or empty: no files were seen with the same I/O features "
            "on both tiers (set models.benchmark_table or models.default_benchmark); nothing to train"
        )
        return
    labels_id = delta_id(ctx.spark, ctx.spec(labels_t, "input").path(conf.lake.root))
    lv = f"{labels_id}@{ctx.version(labels_t)}"
    exp = tracking.experiment(conf, conf.models.placement_model)
    if _already_trained(exp, lv, info.model_digest):
        echo(f"[train] placement: already trained on gold/placement_labels version {lv}")
        return
    # Spark returns rows in no fixed order and the splits are positional: sort, so the same
    # table always trains the same models
    labels = ctx.read(labels_t).orderBy("label_source", "group_id").toPandas()
    if not enough_labels(labels.best_tier):
        echo(
            f"[train] placement: too few labels to train ({dict(labels.best_tier.value_counts())}; need both "
            f"tiers, >= 2 of each and >= {MIN_LABELS} groups)"
        )
        return
    source = ",".join(sorted(labels.label_source.unique()))
    reference = None
    if source == "lake":
        held = lake_growth_holds(
            ctx, labels_id, len(labels), (conf.models.placement_model,), "placement"
        )
        if held:
            echo(held)
            return
        files = data_files(
            ctx.read("silver/file_features"), ctx.read("bronze/logs"), conf.models.label_formats
        )
        # only the labelled groups' logs can tie training rows together: a log joining a labelled
        # group to an unlabelled one puts nothing on both sides. Bounded by the labels, not the lake.
        labelled = ctx.spark.createDataFrame(labels[["group_id"]].drop_duplicates())
        pairs = (
            files.select(group_id().alias("group_id"), "log_id")
            .join(F.broadcast(labelled), "group_id", "left_semi")
            .distinct()
            .toPandas()
        )
        groups = split_groups(labels.group_id.to_numpy(), pairs, "placement", echo)
    else:
        groups = evaluation.feature_groups(labels, FEATURES)
        bench = _benchmark(conf)
        if bench and bench.endswith(".csv"):
            bpdf = read_benchmark(ctx.spark, bench)
            params = reference_params(bpdf)
            if (
                params is not None
            ):  # the first configuration of each label group (identical trace features)
                keyed = bpdf.assign(_k=evaluation.feature_key(bpdf, FEATURES))
                first = keyed.drop_duplicates("_k").set_index("_k")
                lk = evaluation.feature_key(labels, FEATURES)
                if lk.isin(first.index).all():
                    reference = first.loc[lk, params.columns].reset_index(drop=True)
    text = None
    if source == "benchmark":
        from models.benchmarks import describe

        text = "benchmark " + describe(
            conf.models.benchmark_table or conf.models.default_benchmark or "?"
        )
    out["placement"] = train_placement(
        labels,
        groups,
        conf,
        info,
        lv,
        source,
        reference,
        echo,
        text,
        lake_rows=len(labels) if source == "lake" else None,
    )


def _train_bandwidth_stage(ctx, out: dict) -> None:
    import pyspark.sql.functions as F

    from features import suspect
    from features.placement_labels import read_benchmark
    from models import benchmarks, evaluation, tracking
    from models.bandwidth import FILE_FEATURES, JOB_FEATURES, JOB_NUMERIC
    from schemas.placement_labels import FEATURES

    conf, echo, info = ctx.conf, ctx.echo, ctx.info
    m = conf.models
    ff_t, jf_t = "silver/file_features", "silver/job_features"
    ff_id = delta_id(ctx.spark, ctx.spec(ff_t, "input").path(conf.lake.root))
    lake_v = f"{ff_id}@{ctx.version(ff_t)}"
    # the rows a lake-trained model saw: both feature tables' counts (from Delta's statistics)
    lake_rows = sum(ctx.read(t, whole=True).count() for t in (ff_t, jf_t) if ctx.exists(t))
    held = lake_growth_holds(ctx, ff_id, lake_rows) if not m.benchmark_table else None
    if held:
        echo(held)
        return
    logs = ctx.read("bronze/logs")
    # a suspect log's throughput (silver/job_features.suspect, features/suspect.py) trains nothing
    bad = (
        suspect.suspect_ids(ctx.read(jf_t, whole=True)).cache()
        if ctx.exists(jf_t)
        else ctx.spark.createDataFrame([], "log_id string")
    )
    n_bad = bad.count()
    if n_bad:
        echo(f"[train] bandwidth: {n_bad:,} suspect logs left out of the lake's training rows")
    files, f_note = file_model_rows(ctx.read(ff_t).join(bad, "log_id", "left_anti"), logs, m)
    if f_note:
        echo(f"[train] bandwidth/file: {f_note}")
    ok = logs.where(F.col("format").isin(list(m.label_formats))).select("log_id")
    jobs, j_note = pd.DataFrame(), None
    j_ints: set[str] = set()
    f_sample = j_sample = (
        None  # the sample's note when the lake's own rows train (the benchmark is whole)
    )
    if ctx.exists(jf_t):
        keys = _app_keys(ctx)
        job_df = (
            suspect.plausible(ctx.read(jf_t))
            .join(ok, "log_id", "left_semi")
            .where((F.col("throughput_mib_s") > 0) & (F.size("tiers") == 1))
            .withColumn("tier", F.col("tiers")[0])
            .select("log_id", *JOB_FEATURES, "throughput_mib_s")
            .join(keys, "log_id", "left")
        )
        job_df, j_note = sample_groups(job_df, ["log_id"], m.max_train_rows, m.seed)
        if j_note:
            echo(f"[train] bandwidth/job: {j_note}")
        jobs = _with_apps(job_df.orderBy("log_id", *JOB_FEATURES).toPandas())
        j_ints = _integer_columns(job_df.schema)
    lake_ok, n_apps = _lake_enough(jobs, m)
    if ctx.exists(jf_t) and not m.benchmark_table:
        echo(
            f"[train] bandwidth: {len(jobs):,} plausible single-tier lake jobs with a throughput from "
            f"{n_apps:,} applications (models.lake_min_jobs {m.lake_min_jobs:,}, lake_min_apps "
            f"{m.lake_min_apps:,}): "
            + (
                "the bandwidth models train on the lake"
                if lake_ok
                else "too few to train on the lake's own tier(s) alone"
            )
        )
    bench = _benchmark(conf)
    bpdf = None

    def benchmark_frame():
        nonlocal bpdf
        if bpdf is None:
            bpdf = read_benchmark(ctx.spark, bench)
        return bpdf

    def two_tiers(df, n):
        return len(df) >= n and df["tier"].nunique() >= 2

    # files: the lake when it measured two tiers (and no benchmark is forced), else the benchmark
    f_ref = j_ref = (
        None  # the true-parameter reference's inputs, for benchmark rows with parameters
    )
    f_apps = j_apps = None  # the lake's rows' applications, when the splits group by them
    if (two_tiers(files, MIN_LABELS) or (lake_ok and len(files) >= MIN_LABELS)) and not (
        m.benchmark_table
    ):
        f_rows, f_src, f_ver = files, "silver/file_features", lake_v
        f_sample = f_note
        f_apps = _file_apps(ctx, files) if ctx.exists(jf_t) else None
        if f_apps is not None and f_apps["app"].nunique() >= MIN_SPLIT_GROUPS:
            f_groups = pd.factorize(f_apps["app"])[0]
        else:
            f_apps = None
            f_groups = file_split_groups(files, "bandwidth/file", echo)
    elif bench:
        f_rows = benchmarks.file_rows(benchmark_frame())
        f_ref = benchmarks.reference_rows(f_rows, benchmark_frame())
        f_groups = evaluation.feature_groups(f_rows, FEATURES)
        f_src, f_ver = (
            f"benchmark {benchmarks.describe(m.benchmark_table or m.default_benchmark)}",
            f"benchmark:{_file_digest(bench)}" if Path(bench).is_file() else bench,
        )
    else:
        f_rows = None
        echo(
            f"[train] bandwidth: {len(files)} lake files with a bandwidth on "
            f"{files['tier'].nunique() if len(files) else 0} "
            f"tier(s) and no benchmark table: no bandwidth model"
        )
    for level, rows, groups, feats, target, name, src, ver in (
        (
            "file",
            f_rows,
            f_groups if f_rows is not None else None,
            FILE_FEATURES,
            "bandwidth_mib_s",
            m.bandwidth_model,
            f_src if f_rows is not None else None,
            f_ver if f_rows is not None else None,
        ),
    ):
        if rows is None:
            continue
        exp = tracking.experiment(conf, name)
        if _already_trained(exp, ver, info.model_digest):
            echo(f"[train] bandwidth/{level}: already trained on {ver}")
        else:
            out["bandwidth"] = train_bandwidth(
                rows,
                groups,
                feats,
                target,
                level,
                name,
                conf,
                info,
                ver,
                src,
                echo,
                sample=f_sample,
                reference=f_ref,
                apps=f_apps,
                lake_rows=lake_rows if f_src == "silver/file_features" else None,
            )

    # jobs: the lake's single-tier jobs when they span two tiers or are enough (lake_ok), else the
    # benchmark's job rows
    if (two_tiers(jobs, MIN_JOBS) or lake_ok) and not m.benchmark_table:
        j_rows = _as_scored(jobs[[*JOB_FEATURES, "throughput_mib_s"]].fillna(0), j_ints)
        if jobs["app"].nunique() >= MIN_SPLIT_GROUPS:
            j_apps = jobs[["app", "start", "log_id"]].reset_index(drop=True)
            j_groups = pd.factorize(j_apps["app"])[0]
        else:
            j_groups = evaluation.feature_groups(j_rows, JOB_NUMERIC)
        j_src, j_ver = "silver/job_features", f"{lake_v}+{ctx.version(jf_t)}"
        j_sample = j_note
    elif bench and len(benchmarks.job_rows(benchmark_frame())) >= MIN_JOBS:
        j_rows = benchmarks.job_rows(benchmark_frame())
        key = pd.Series(
            evaluation.feature_key(benchmark_frame(), FEATURES).to_numpy(),
            index=benchmark_frame().config_id,
        )
        j_groups = pd.factorize(j_rows.config_id.map(key))[0]
        j_ref = benchmarks.reference_rows(j_rows, benchmark_frame())
        j_src = f"benchmark {benchmarks.describe(m.benchmark_table or m.default_benchmark)}"
        j_ver = f"benchmark:{_file_digest(bench)}" if Path(bench).is_file() else bench
    else:
        echo(
            f"[train] bandwidth/job: {len(jobs)} single-tier lake jobs and no benchmark job rows: no per-job model"
        )
        return
    exp = tracking.experiment(conf, m.job_bandwidth_model)
    if _already_trained(exp, j_ver, info.model_digest):
        echo(f"[train] bandwidth/job: already trained on {j_ver}")
    else:
        out["job_bandwidth"] = train_bandwidth(
            j_rows,
            j_groups,
            JOB_FEATURES,
            "throughput_mib_s",
            "job",
            m.job_bandwidth_model,
            conf,
            info,
            j_ver,
            j_src,
            echo,
            sample=j_sample,
            reference=j_ref,
            apps=j_apps,
            lake_rows=lake_rows if j_src == "silver/job_features" else None,
        )


def _integer_columns(schema) -> set[str]:
    """The names of a Spark schema's integer (long, int) columns."""
    from pyspark.sql import types as T

    return {f.name for f in schema.fields if isinstance(f.dataType, (T.LongType, T.IntegerType))}


def _as_scored(rows: pd.DataFrame, integers: set[str]) -> pd.DataFrame:
    """The lake's job rows with their integer columns (`integers`, from silver/job_features'
    schema as read) as int64: a nullable count (small_requests) arrives as float64 from Spark
    when a value is null, and a model whose signature says double refuses the long column
    `score` gives it. `rows` has no nulls (filled before)."""
    out = rows.copy()
    for c in out.columns:
        if c in integers:
            out[c] = out[c].astype("int64")
    return out


NO_APP = (
    "log:"  # the split group of a row whose job has no application key (no start time): its log
)


def _app_keys(ctx):
    """(log_id, app, start) of the lake's jobs: the watch's key (gold/app_runs, written by the watch
    stage before train), or, on a lake without it, the same key computed by the same function
    (`features.regressions.app_runs`)."""
    from features import regressions

    if ctx.exists("gold/app_runs"):
        return ctx.read("gold/app_runs", whole=True).select("log_id", "app", "start")
    return regressions.app_runs(
        ctx.read("silver/job_features", whole=True),
        ctx.read("silver/file_features", whole=True),
        ctx.conf.watch,
    ).select("log_id", "app", "start")


def _with_apps(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` (with app, start from `_app_keys`, null where a job has none) whose missing app is
    the log's own group (`NO_APP` + log_id)."""
    out = rows.copy()
    missing = out["app"].isna()
    out.loc[missing, "app"] = NO_APP + out.loc[missing, "log_id"].astype(str)
    return out.reset_index(drop=True)


def _lake_enough(jobs: pd.DataFrame, m) -> tuple[bool, int]:
    """(whether the lake's single-tier jobs train the bandwidth models on their own: at least
    `models.lake_min_jobs` of them from at least `models.lake_min_apps` applications with a key,
    the number of those applications)."""
    if not len(jobs):
        return False, 0
    keyed = jobs.loc[~jobs["app"].astype(str).str.startswith(NO_APP), "app"]
    n_apps = int(keyed.nunique())
    return len(jobs) >= m.lake_min_jobs and n_apps >= m.lake_min_apps, n_apps


def _file_apps(ctx, files: pd.DataFrame) -> pd.DataFrame | None:
    """(app, start, log_id) of each file row: its log's application (`_app_keys`); None when no
    file's log has one."""
    logs = ctx.spark.createDataFrame(files[["log_id"]].drop_duplicates(), "log_id string")
    keys = _app_keys(ctx).join(logs, "log_id", "left_semi").toPandas()
    if keys.empty:
        return None
    out = files[["log_id"]].merge(keys, on="log_id", how="left")
    return _with_apps(out)[["app", "start", "log_id"]]


def execute(ctx) -> dict:
    from models import tracking

    tracking.configure(ctx.conf)
    out = {"trained": True}
    _train_placement_stage(ctx, out)
    if ctx.exists("silver/file_features"):
        _train_bandwidth_stage(ctx, out)
    out["trained"] = any(k in out for k in ("placement", "bandwidth", "job_bandwidth"))
    return out


run, main = entry_points("train")


if __name__ == "__main__":
    sys.exit(main())
