"""Promotion and alias lookup against a real MLflow registry on a temporary SQLite file (no mocks)."""

import numpy as np
import pytest

from models import placement, pyfunc, registry, tracking
from schemas.placement_labels import FEATURES
from tests.models.tiny import placement_frame


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory):
    import mlflow

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    mlflow.set_experiment("test-placement")
    yield uri
    mlflow.set_tracking_uri(old)
    mlflow.set_registry_uri(old)


def _register(est, X, Xte, yte, name="t-placement", veto=None):
    import mlflow

    score = float(np.mean(est.predict(Xte) == yte.to_numpy()))
    with mlflow.start_run() as run:
        info = tracking.log_model(pyfunc.Placement(est, FEATURES), X)

        def score_fn(mv):
            model = registry.load_version(name, mv.version)
            return float(np.mean(model.predict(Xte)["predicted_tier"].to_numpy() == yte.to_numpy()))

        return registry.register_and_promote(
            name,
            info.model_uri,
            run.info.run_id,
            score,
            score_fn,
            "accuracy",
            "champion",
            veto=veto,
        ), run


def test_promotion_refuses_worse_challenger(mlflow_uri):
    from mlflow import MlflowClient

    X, y = placement_frame(24)
    good = placement.build_estimator("decision_tree").fit(X, y)
    flipped = y.map({"bb": "pfs", "pfs": "bb"})
    bad = placement.build_estimator("decision_tree").fit(X, flipped)
    first, _ = _register(good, X, X, y)
    assert first["alias"] == "champion"
    second, run = _register(bad, X, X, y)
    assert second["alias"] == "challenger"
    client = MlflowClient()
    assert client.get_model_version_by_alias("t-placement", "champion").version == first["version"]
    why = client.get_run(run.info.run_id).data.tags["iolake.promotion"]
    assert f"did not beat @champion v{first['version']}" in why
    third, _ = _register(good, X, X, y)  # as good as the champion: the newest fit takes the alias
    assert third["alias"] == "champion" and "matched or beat" in third["why"]


def test_vetoed_version_never_takes_the_alias(mlflow_uri):
    """A version its trainer vetoed (worse than the baseline) is a challenger even where it would win
    on score, first version included: then there is no champion, and the lookup says so."""
    from mlflow import MlflowClient

    X, y = placement_frame(24)
    good = placement.build_estimator("decision_tree").fit(X, y)
    first, _ = _register(
        good, X, X, y, name="t-veto", veto="accuracy 0.5 against the baseline's 0.8"
    )
    assert first["alias"] == "challenger"
    assert first["why"].startswith("held back: accuracy 0.5") and "no @champion yet" in first["why"]
    with pytest.raises(registry.ModelAliasMissing) as e:
        registry.version_by_alias("t-veto", "champion")
    assert f"v{first['version']}, did not take it: held back: accuracy 0.5" in str(e.value)
    assert e.value.held_back == (str(first["version"]), first["why"])
    second, _ = _register(good, X, X, y, name="t-veto")
    assert second["alias"] == "champion"
    third, run = _register(
        good, X, X, y, name="t-veto", veto="MdAPE % 208 against the baseline's 103"
    )
    assert third["alias"] == "challenger"
    client = MlflowClient()
    assert client.get_model_version_by_alias("t-veto", "champion").version == second["version"]
    tags = client.get_run(run.info.run_id).data.tags
    assert f"@champion stays with v{second['version']}" in tags["iolake.promotion"]
    assert tags["iolake.alias"] == "challenger"


def test_missing_alias_names_alias_and_registry(mlflow_uri):
    with pytest.raises(registry.ModelAliasMissing) as e:
        registry.version_by_alias("no-such-model", "champion")
    assert "'champion'" in str(e.value) and mlflow_uri in str(e.value)
    assert e.value.held_back is None and "train first" in str(e.value)
