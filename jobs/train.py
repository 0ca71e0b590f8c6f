"""train: gold/placement_labels -> iolake-placement; silver/file_features -> iolake-bandwidth (MLflow).

Reads:  gold/placement_labels, silver/file_features, silver/job_features, bronze/logs.
Writes: MLflow runs (experiments `iolake-placement`, `iolake-bandwidth`) and registered model
        versions; the `champion` alias moves only when a new version wins on the same held-out set.
Every model in `models.classifiers` / `models.regressors` is compared over `models.splits` random
splits; the best is refit on split 0's training part and registered. Skipped when MLflow already
holds a run trained on the same Delta version of the training table with the same config.
An empty or missing training table is reported, not an error.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from iolake.config import Config
from iolake.runinfo import RunInfo
from iolake.runner import entry_points


def _already_trained(exp_id: str, version, digest: str) -> bool:
    import mlflow

    runs = mlflow.search_runs([exp_id], filter_string=f"tags.`iolake.training_version` = '{version}' and "
                                                      f"tags.`iolake.config_digest` = '{digest}' and "
                                                      f"attributes.status = 'FINISHED'", max_results=1)
    return len(runs) > 0


MIN_LABELS = 10  # a random split needs both tiers on both sides


def _table_id(spark, path: str) -> str:
    return spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["id"]


def train_placement(labels, conf: Config, info: RunInfo, version, echo=print) -> dict:
    import mlflow

    from models import placement, pyfunc, registry, tracking
    from schemas.placement_labels import FEATURES

    m = conf.models
    X, y = labels[list(FEATURES)], labels["best_tier"]
    strong = labels["label_margin_gt_std"].astype("boolean")
    results = []
    for name in m.classifiers:
        t = time.monotonic()
        r = placement.fit_and_evaluate(name, X, y, n_splits=m.splits, test_fraction=m.test_fraction, seed=m.seed,
                                       strong=strong)
        r["seconds"] = time.monotonic() - t
        results.append(r)
        echo(f"[train] placement {name:<20} accuracy {r['accuracy_mean']:.3f} ± {r['accuracy_std']:.3f} "
             f"(majority {r['baseline_mean']:.3f}); margin>std {r.get('accuracy_strong_mean', float('nan')):.3f} "
             f"(majority {r.get('baseline_strong_mean', float('nan')):.3f}) [{r['seconds']:.1f} s]")
    best = max(results, key=lambda r: r["accuracy_mean"])
    tr, te = placement.splits(y, m.splits, m.test_fraction, m.seed)[0]
    est = placement.build_estimator(best["model"], seed=m.seed).fit(X.iloc[tr], y.iloc[tr])
    Xte, yte = X.iloc[te], y.iloc[te]
    held_out = float(np.mean(est.predict(Xte) == yte.to_numpy()))
    imp = placement.importances(est, X, y, seed=m.seed)  # permutation importance over all labels
    kept, trail = placement.eliminate_features("decision_tree", X, y, seed=m.seed)
    echo("[train] placement importances: " + ", ".join(f"{k} {v:.3f}" for k, v in imp.head(6).items()))
    echo(f"[train] placement feature elimination (decision tree) keeps {len(kept)}: {', '.join(kept)}")

    exp = tracking.experiment(conf, m.placement_model)
    with mlflow.start_run(experiment_id=exp, run_name=f"placement-{best['model']}", tags=tracking.tags(info)) as run:
        mlflow.set_tags({"iolake.training_table": "gold/placement_labels", "iolake.training_version": str(version),
                         "iolake.label_source": ",".join(sorted(labels.label_source.unique()))})
        mlflow.log_params({"model": best["model"], "features": ",".join(FEATURES), "splits": m.splits,
                           "test_fraction": m.test_fraction, "seed": m.seed, "rows": len(labels),
                           "label_min_margin": m.label_min_margin, "training_table_version": version,
                           "rfe_features": ",".join(kept)})
        for r in results:
            for k in ("accuracy_mean", "accuracy_std", "baseline_mean", "accuracy_strong_mean", "baseline_strong_mean"):
                if k in r:
                    mlflow.log_metric(f"{r['model']}.{k}", r[k])
        mlflow.log_metrics({"accuracy_mean": best["accuracy_mean"], "accuracy_std": best["accuracy_std"],
                            "baseline_mean": best["baseline_mean"], "held_out_accuracy": held_out})
        mlflow.log_figure(tracking.figure_confusion(yte, est.predict(Xte), ["bb", "pfs"]), "confusion_matrix.png")
        mlflow.log_figure(tracking.figure_importances(imp, "permutation importance"), "importances.png")
        mlflow.log_dict({"trail": trail, "comparison": results}, "selection.json")
        info_m = tracking.log_model(pyfunc.Placement(est, FEATURES), X)

        def score_fn(model):
            return float(np.mean(model.predict(Xte)["predicted_tier"].to_numpy() == yte.to_numpy()))

        promo = registry.register_and_promote(m.placement_model, info_m.model_uri, run.info.run_id, held_out,
                                              score_fn, "accuracy", m.alias)
    echo(f"[train] {m.placement_model} v{promo['version']} -> @{promo['alias']}: {promo['why']}")
    return {"best": best["model"], "results": results, "importances": imp.to_dict(), "rfe": kept, **promo}


def train_bandwidth(files, jobs, conf: Config, info: RunInfo, version, echo=print) -> dict:
    import mlflow

    from models import bandwidth, pyfunc, registry, tracking

    m = conf.models
    X, bw = files[list(bandwidth.FILE_FEATURES)], files[bandwidth.FILE_TARGET]
    results = []
    for name in m.regressors:
        r = bandwidth.fit_and_evaluate(name, X, bw, n_splits=m.splits, test_fraction=m.test_fraction, seed=m.seed)
        results.append(r)
        echo(f"[train] bandwidth/file {name:<18} MdAPE {r['mdape_pct_mean']:.1f}% R²(log) {r['r2_log_mean']:.3f} "
             f"RMSE(log) {r['rmse_log_mean']:.3f}")
    job_results = []
    if len(jobs) >= 20:
        for name in m.regressors:
            r = bandwidth.fit_and_evaluate(name, jobs[list(bandwidth.JOB_FEATURES)], jobs[bandwidth.JOB_TARGET],
                                           level="job", n_splits=m.splits, test_fraction=m.test_fraction, seed=m.seed)
            job_results.append(r)
            echo(f"[train] bandwidth/job  {name:<18} MdAPE {r['mdape_pct_mean']:.1f}% R²(log) {r['r2_log_mean']:.3f} "
                 f"RMSE(log) {r['rmse_log_mean']:.3f}")
    best = max(results, key=lambda r: r["r2_log_mean"])
    tr, te = bandwidth.splits(len(X), m.splits, m.test_fraction, m.seed)[0]
    est = bandwidth.build_estimator(best["model"], seed=m.seed).fit(X.iloc[tr], np.log(bw.iloc[tr]))
    Xte, bte = X.iloc[te], bw.iloc[te].to_numpy()
    held = bandwidth.metrics(bte, np.exp(est.predict(Xte)))
    exp = tracking.experiment(conf, m.bandwidth_model)
    with mlflow.start_run(experiment_id=exp, run_name=f"bandwidth-{best['model']}", tags=tracking.tags(info)) as run:
        mlflow.set_tags({"iolake.training_table": "silver/file_features", "iolake.training_version": str(version)})
        mlflow.log_params({"model": best["model"], "features": ",".join(bandwidth.FILE_FEATURES), "rows": len(X),
                           "splits": m.splits, "seed": m.seed, "training_table_version": version})
        for r in results + job_results:
            for k in ("mdape_pct_mean", "r2_log_mean", "rmse_log_mean"):
                mlflow.log_metric(f"{r['level']}.{r['model']}.{k}", r[k])
        mlflow.log_metrics({f"held_out_{k}": v for k, v in held.items()})
        mlflow.log_figure(tracking.figure_pred_vs_measured(bte, np.exp(est.predict(Xte)), "file bandwidth, held out"),
                          "predicted_vs_measured.png")
        info_m = tracking.log_model(pyfunc.Bandwidth(est, bandwidth.FILE_FEATURES), X)

        def score_fn(model):
            return bandwidth.metrics(bte, model.predict(Xte)["predicted_bandwidth_mib_s"].to_numpy())["r2_log"]

        promo = registry.register_and_promote(m.bandwidth_model, info_m.model_uri, run.info.run_id, held["r2_log"],
                                              score_fn, "R²(log)", m.alias)
    echo(f"[train] {m.bandwidth_model} v{promo['version']} -> @{promo['alias']}: {promo['why']}")
    return {"best": best["model"], "results": results, "job_results": job_results, **promo}


def execute(ctx) -> dict:
    import pyspark.sql.functions as F

    from features.placement_labels import data_files
    from models import tracking

    conf, echo, info = ctx.conf, ctx.echo, ctx.info
    labels_t, ff_t = "gold/placement_labels", "silver/file_features"
    if not ctx.exists(labels_t) or ctx.read(labels_t).limit(1).count() == 0:
        echo("[train] gold/placement_labels is missing or empty: no files were seen with the same I/O features "
             "on both tiers (or set models.benchmark_table); nothing to train")
        return {"trained": False}
    tracking.configure(conf)
    out = {"trained": True}
    # a table's version is only unique with its id (a table recreated in place restarts at 0)
    root = conf.lake.root
    lv = f"{_table_id(ctx.spark, ctx.spec(labels_t, 'input').path(root))}@{ctx.version(labels_t)}"
    exp = tracking.experiment(conf, conf.models.placement_model)
    if _already_trained(exp, lv, info.config_digest):
        echo(f"[train] placement: already trained on gold/placement_labels version {lv}")
    else:
        # Spark returns rows in no fixed order and the splits are positional: sort, so the same
        # table always trains the same models
        labels = ctx.read(labels_t).orderBy("label_source", "group_id").toPandas()
        counts = labels.best_tier.value_counts()
        if len(counts) < 2 or counts.min() < 2 or len(labels) < MIN_LABELS:
            echo(f"[train] placement: too few labels to train ({dict(counts)}; need both tiers, >= 2 of each "
                 f"and >= {MIN_LABELS} groups)")
        else:
            out["placement"] = train_placement(labels, conf, info, lv, echo)
    fv = f"{_table_id(ctx.spark, ctx.spec(ff_t, 'input').path(root))}@{ctx.version(ff_t)}"
    exp = tracking.experiment(conf, conf.models.bandwidth_model)
    if _already_trained(exp, fv, info.config_digest):
        echo(f"[train] bandwidth: already trained on silver/file_features version {fv}")
    else:
        from models.bandwidth import FILE_FEATURES, JOB_FEATURES

        logs = ctx.read("bronze/logs")
        files = (data_files(ctx.read(ff_t), logs, conf.models.label_formats).select(*FILE_FEATURES, "bandwidth_mib_s")
                 .orderBy(*FILE_FEATURES, "bandwidth_mib_s").toPandas())
        ok = logs.where(F.col("format").isin(list(conf.models.label_formats))).select("log_id")
        jobs = (ctx.read("silver/job_features").join(ok, "log_id", "left_semi")
                .where((F.col("throughput_mib_s") > 0) & (F.size("tiers") == 1))
                .withColumn("tier", F.col("tiers")[0]).select(*JOB_FEATURES, "throughput_mib_s")
                .orderBy(*JOB_FEATURES, "throughput_mib_s").toPandas())
        if len(files) < MIN_LABELS:
            echo(f"[train] bandwidth: too few data files with a bandwidth ({len(files)})")
        else:
            out["bandwidth"] = train_bandwidth(files, jobs.fillna(0), conf, info, fv, echo)
    return out


run, main = entry_points("train")


if __name__ == "__main__":
    sys.exit(main())
