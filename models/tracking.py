"""MLflow tracking for iolake: where runs go (conf `mlflow`), and logging one training run.

One experiment per model (named like the registered model). Each run logs params, metrics,
signature + input example, the Delta version of its training table, plots (matplotlib Agg) and
tags: git sha, iolake run id, config digest.
"""

from __future__ import annotations

from pathlib import Path


def tracking_uri(conf) -> str:
    if conf.mlflow.tracking_uri:
        return conf.mlflow.tracking_uri
    return f"sqlite:///{Path(conf.lake.root).resolve()}/mlflow.db"


def artifact_root(conf) -> str:
    return conf.mlflow.artifact_root or str(Path(conf.lake.root).resolve() / "mlruns")


def configure(conf) -> str:
    """Point MLflow at the lake's tracking store; returns the tracking URI."""
    import mlflow

    uri = tracking_uri(conf)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    return uri


def experiment(conf, name: str) -> str:
    """The experiment id of `name`, created with its artifacts under the lake."""
    import mlflow

    exp = mlflow.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    Path(artifact_root(conf)).mkdir(parents=True, exist_ok=True)
    return mlflow.create_experiment(
        name, artifact_location=Path(artifact_root(conf), name).as_uri()
    )


def tags(run_info) -> dict:
    return {
        "iolake.git_sha": run_info.git_sha,
        "iolake.run_id": run_info.run_id,
        "iolake.config_digest": run_info.config_digest,
        "mlflow.source.git.commit": run_info.git_sha,
    }


def log_model(python_model, X_example, name: str = "model"):
    """Log a pyfunc wrapper (models/pyfunc.py) with signature and input example; returns ModelInfo."""
    import cloudpickle
    import mlflow
    from mlflow.models import infer_signature

    from models import pyfunc

    cloudpickle.register_pickle_by_value(pyfunc)  # consumers need no iolake code to load it
    example = X_example.head(5).reset_index(drop=True)
    signature = infer_signature(example, python_model.predict(None, example))
    return mlflow.pyfunc.log_model(
        name=name,
        python_model=python_model,
        signature=signature,
        input_example=example,
        pip_requirements=_requirements(),
    )


def _requirements() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for names in (
        ("mlflow",),
        ("scikit-learn",),
        ("pandas",),
        ("numpy",),
        ("cloudpickle",),
        ("lightgbm",),
        ("xgboost", "xgboost-cpu"),
    ):
        for p in names:
            try:
                out.append(f"{p}=={version(p)}")
                break
            except PackageNotFoundError:
                continue
    return out


def figure_confusion(y_true, y_pred, labels):
    import matplotlib

    matplotlib.use("Agg")
    from sklearn.metrics import ConfusionMatrixDisplay

    disp = ConfusionMatrixDisplay.from_predictions(y_true, y_pred, labels=labels)
    disp.ax_.set_title("placement: held-out confusion matrix")
    return disp.figure_


def figure_importances(series, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    series.sort_values().plot.barh(ax=ax)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def figure_pred_vs_measured(measured, predicted, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.loglog(measured, predicted, ".", alpha=0.5)
    lo, hi = min(min(measured), min(predicted)), max(max(measured), max(predicted))
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set_xlabel("measured MiB/s")
    ax.set_ylabel("predicted MiB/s")
    ax.set_title(title)
    fig.tight_layout()
    return fig
