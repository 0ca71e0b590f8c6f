"""Registered models and promotion by alias.

A new version becomes `champion` only when it beats the current champion on the SAME held-out
set: the champion is loaded and scored on the challenger's test split. Otherwise it gets the
alias `challenger` and its run records why (tag `iolake.promotion`).
"""
from __future__ import annotations


class ModelAliasMissing(LookupError):
    pass


def champion_uri(name: str, alias: str = "champion") -> str:
    return f"models:/{name}@{alias}"


def version_by_alias(name: str, alias: str = "champion"):
    """The ModelVersion holding `alias`, or ModelAliasMissing naming the alias and the registry URI."""
    import mlflow
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    try:
        return MlflowClient().get_model_version_by_alias(name, alias)
    except MlflowException as e:
        raise ModelAliasMissing(
            f"registered model '{name}' has no version with alias '{alias}' in the registry at "
            f"{mlflow.get_registry_uri()} (train first: `iolake run` or `python -m jobs.train`; {e.error_code})"
        ) from None


def load(name: str, alias: str = "champion"):
    import mlflow

    mv = version_by_alias(name, alias)
    return mv, mlflow.pyfunc.load_model(f"models:/{name}/{mv.version}")


def register_and_promote(name: str, model_uri: str, run_id: str, score: float, score_fn, metric: str) -> dict:
    """Register `model_uri` as a new version of `name`; make it champion if it beats the current one.

    score: the challenger's score on its held-out set (higher is better).
    score_fn(pyfunc_model) -> the same score of another model on that same held-out set.
    """
    import mlflow
    from mlflow import MlflowClient

    client = MlflowClient()
    mv = mlflow.register_model(model_uri, name)
    try:
        current = client.get_model_version_by_alias(name, "champion")
    except mlflow.exceptions.MlflowException:
        current = None
    if current is None:
        alias, why = "champion", f"first version: {metric} {score:.4f}"
    else:
        champ_score = float(score_fn(mlflow.pyfunc.load_model(f"models:/{name}/{current.version}")))
        if score > champ_score:
            alias = "champion"
            why = f"beat champion v{current.version} on the same held-out set: {metric} {score:.4f} > {champ_score:.4f}"
        else:
            alias = "challenger"
            why = (f"did not beat champion v{current.version} on the same held-out set: "
                   f"{metric} {score:.4f} <= {champ_score:.4f}")
    client.set_registered_model_alias(name, alias, mv.version)
    client.set_model_version_tag(name, mv.version, "iolake.promotion", why)
    client.set_tag(run_id, "iolake.promotion", why)
    client.set_tag(run_id, "iolake.alias", alias)
    return {"name": name, "version": mv.version, "alias": alias, "why": why}
