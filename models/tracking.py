"""MLflow tracking for iolake: where runs go (conf `mlflow`), and logging one training run.

One experiment per model (named like the registered model). Each run logs params, metrics,
signature + input example, the Delta version of its training table, plots (matplotlib Agg) and
tags: git sha, iolake run id, config digest, model digest.
"""

from __future__ import annotations

from pathlib import Path


class TrackingUnset(ValueError):
    """A lake that is not a local folder has no place for the default SQLite store."""


class TrackingUnavailable(RuntimeError):
    """The tracking server cannot be reached, or refused this client's credentials."""


def _remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def _server(uri: str | None) -> bool:
    return bool(uri) and uri.split("://")[0] in ("http", "https", "databricks")


def tracking_uri(conf) -> str:
    if conf.mlflow.tracking_uri:
        return conf.mlflow.tracking_uri
    if _remote(conf.lake.root):
        raise TrackingUnset(
            f"mlflow.tracking_uri is not set, and the lake {conf.lake.root} is not a local folder "
            "that could hold the default SQLite store: set mlflow.tracking_uri to the tracking "
            "server (http://HOST:PORT) in the configuration (conf/<env>.yaml)"
        )
    return f"sqlite:///{Path(conf.lake.root).resolve()}/mlflow.db"


def artifact_root(conf) -> str | None:
    """Where new experiments keep artifacts: the setting, else <lake>/mlruns for a local lake with
    the default store, else None (a tracking server's own artifact store)."""
    if conf.mlflow.artifact_root:
        return conf.mlflow.artifact_root
    if _server(conf.mlflow.tracking_uri) or _remote(conf.lake.root):
        return None
    return str(Path(conf.lake.root).resolve() / "mlruns")


def configure(conf) -> str:
    """Point MLflow at the lake's tracking store; returns the tracking URI."""
    import mlflow

    uri = tracking_uri(conf)
    if _server(uri) and not uri.startswith("databricks"):
        check_server(uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    return uri


def check_server(uri: str, connect_s: float = 5.0, read_s: float = 60.0) -> None:
    """Fail fast, naming the server, when a tracking server is down or refuses the credentials
    (MLflow's own client would retry a refused connection for minutes, then name neither).
    Credentials are MLflow's environment variables: MLFLOW_TRACKING_USERNAME / _PASSWORD or
    MLFLOW_TRACKING_TOKEN."""
    import os

    import requests

    base = uri.rstrip("/")
    auth, headers = None, {}
    if os.environ.get("MLFLOW_TRACKING_TOKEN"):
        headers["Authorization"] = f"Bearer {os.environ['MLFLOW_TRACKING_TOKEN']}"
    elif os.environ.get("MLFLOW_TRACKING_USERNAME"):
        auth = (
            os.environ["MLFLOW_TRACKING_USERNAME"],
            os.environ.get("MLFLOW_TRACKING_PASSWORD", ""),
        )
    try:
        r = requests.get(
            f"{base}/api/2.0/mlflow/experiments/search",
            params={"max_results": 1},
            auth=auth,
            headers=headers,
            timeout=(connect_s, read_s),
        )
    except requests.RequestException as e:
        raise TrackingUnavailable(
            f"the MLflow tracking server {base} (mlflow.tracking_uri) cannot be reached: "
            f"{type(e).__name__}: {str(e)[:200]}"
        ) from None
    if r.status_code in (401, 403):
        who = "no credentials" if auth is None and not headers else "the credentials given"
        raise TrackingUnavailable(
            f"the MLflow tracking server {base} refused {who} (HTTP {r.status_code}): set "
            "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN)"
        )
    if r.status_code >= 500:
        raise TrackingUnavailable(
            f"the MLflow tracking server {base} failed (HTTP {r.status_code}): {r.text[:200]}"
        )


def experiment(conf, name: str) -> str:
    """The experiment id of `name`, created with its artifacts under the lake."""
    import mlflow

    exp = mlflow.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    root = artifact_root(conf)
    if root is None:
        return mlflow.create_experiment(name)
    if _remote(root):
        return mlflow.create_experiment(name, artifact_location=f"{root.rstrip('/')}/{name}")
    Path(root).mkdir(parents=True, exist_ok=True)
    return mlflow.create_experiment(name, artifact_location=Path(root, name).as_uri())


def tags(run_info) -> dict:
    return {
        "iolake.git_sha": run_info.git_sha,
        "iolake.run_id": run_info.run_id,
        "iolake.config_digest": run_info.config_digest,
        "iolake.model_digest": run_info.model_digest,
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
