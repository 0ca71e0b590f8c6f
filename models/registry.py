"""Registered models and promotion by alias (`models.alias` in the configuration, `champion` by default).

A new version takes the alias when it scores at least as well as the version holding it on the
SAME evaluation: `score_fn(holder)` scores the holder there (`jobs/train.py` refits the holder's
recipe, its model kind, on the challenger's grouped folds: both are judged out of sample, on the
current labels; a tie goes to the new version, fitted on the newest data). Otherwise the new
version gets the alias `challenger` and its run records why (tag `iolake.promotion`). A version
`veto`ed by its trainer (every model worse than its baseline beyond chance:
`models.evaluation.select`) is a challenger whatever the holder scores: the holder, or no
champion at all, is better than a model worse than a constant. Scoring and `iolake predict` load
the same configured alias.
"""

from __future__ import annotations


class ModelAliasMissing(LookupError):
    """No version holds the alias. `held_back`: (version, why) of the newest version when there is one
    (its `iolake.promotion` tag), else None: the model was never registered."""

    def __init__(self, message: str, held_back: tuple[str, str] | None = None):
        super().__init__(message)
        self.held_back = held_back


def champion_uri(name: str, alias: str) -> str:
    return f"models:/{name}@{alias}"


def version_by_alias(name: str, alias: str):
    """The ModelVersion holding `alias`, or ModelAliasMissing naming the alias and the registry URI."""
    import mlflow
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient()
    try:
        return client.get_model_version_by_alias(name, alias)
    except MlflowException as e:
        hint = f"train first: `iolake run` or `python -m jobs.train`; {e.error_code}"
        try:  # versions exist but none took the alias: the newest one's promotion tag says why
            newest = max(
                client.search_model_versions(f"name = '{name}'"),
                key=lambda v: int(v.version),
                default=None,
            )
        except MlflowException:
            newest = None
        held = (
            (str(newest.version), newest.tags.get("iolake.promotion", "?"))
            if newest is not None
            else None
        )
        if held:
            hint = f"its newest version, v{held[0]}, did not take it: {held[1]}"
        raise ModelAliasMissing(
            f"registered model '{name}' has no version with alias '{alias}' in the registry at "
            f"{mlflow.get_registry_uri()} ({hint})",
            held,
        ) from None


def load_version(name: str, version) -> object:
    import mlflow

    return mlflow.pyfunc.load_model(f"models:/{name}/{version}")


def load(name: str, alias: str):
    import mlflow

    mv = version_by_alias(name, alias)
    return mv, mlflow.pyfunc.load_model(f"models:/{name}/{mv.version}")


def register_and_promote(
    name: str,
    model_uri: str,
    run_id: str,
    score: float,
    score_fn,
    metric: str,
    alias: str,
    veto: str | None = None,
) -> dict:
    """Register `model_uri` as a new version of `name`; give it `alias` if it beats the version holding it.

    `alias` is `models.alias` of the configuration, the same one `score` and `predict` load.

    score: the challenger's score (higher is better).
    score_fn(model_version) -> the same score of the version holding the alias, on the same evaluation.
    veto: why this version must not take `alias` (it gets `challenger`; the reason is its tag).
    """
    import mlflow
    from mlflow import MlflowClient

    client = MlflowClient()
    mv = mlflow.register_model(model_uri, name)
    try:
        current = client.get_model_version_by_alias(name, alias)
    except mlflow.exceptions.MlflowException:
        current = None
    given = alias
    if veto:
        given = "challenger"
        held = (
            f"; @{alias} stays with v{current.version}"
            if current is not None
            else f"; no @{alias} yet"
        )
        why = f"held back: {veto}{held}"
    elif current is None:
        why = f"first version: {metric} {score:.4f}"
    else:
        champ_score = float(score_fn(current))
        if score >= champ_score:
            why = (
                f"matched or beat @{alias} v{current.version} on the same evaluation: "
                f"{metric} {score:.4f} >= {champ_score:.4f}"
            )
        else:
            given = "challenger"
            why = (
                f"did not beat @{alias} v{current.version} on the same evaluation: "
                f"{metric} {score:.4f} < {champ_score:.4f}"
            )
    alias = given
    client.set_registered_model_alias(name, alias, mv.version)
    client.set_model_version_tag(name, mv.version, "iolake.promotion", why)
    client.set_tag(run_id, "iolake.promotion", why)
    client.set_tag(run_id, "iolake.alias", alias)
    return {"name": name, "version": mv.version, "alias": alias, "why": why}
