"""models/provenance.py: what a model was trained on, from its training run's tags in a real MLflow
registry (SQLite in a temporary folder), and the plain sentence the advice shows."""

from __future__ import annotations

import pytest

from models import provenance
from models.benchmarks import SHIPPED

SHIPPED_SOURCE = f"benchmark iosweep (shipped: {SHIPPED['iosweep']})"


@pytest.mark.parametrize(
    "source, origin",
    [
        # the texts jobs/train.py records as iolake.training_source
        (SHIPPED_SOURCE, "shipped_benchmark"),
        (f"gold/placement_labels from {SHIPPED_SOURCE}", "shipped_benchmark"),
        ("benchmark /data/centre/ior_sweep.csv", "benchmark"),
        ("gold/placement_labels from benchmark", "benchmark"),
        ("silver/file_features", "lake"),
        ("silver/job_features", "lake"),
        ("gold/placement_labels from lake", "lake"),
        ("lake", "lake"),  # iolake.label_source
        ("benchmark", "benchmark"),
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_origin_of_a_training_source(source, origin):
    assert provenance.origin_of(source) == origin


def test_note_says_plainly_when_the_model_learnt_another_machine():
    shipped = provenance.note("shipped_benchmark", SHIPPED_SOURCE)
    assert shipped == (
        "trained on the shipped IOR sweep of a 2-core VM (tmpfs vs ext4), not on this site's file "
        "systems: treat the factor as the direction, not the size"
    )
    other = provenance.note("benchmark", "benchmark /data/centre/ior_sweep.csv")
    assert "benchmark /data/centre/ior_sweep.csv" in other and "not on this lake's jobs" in other
    assert "direction, not the size" in other
    lake = provenance.note("lake", "silver/file_features")
    assert lake == "trained on this lake's own jobs (silver/file_features)"
    assert "direction" not in lake


def test_origin_train_records_follows_the_benchmark_setting():
    from iolake.config import load_config

    m = load_config("local").models
    assert m.default_benchmark == "iosweep" and m.benchmark_table is None
    assert provenance.origin_for(m, from_benchmark=False) == "lake"
    assert provenance.origin_for(m, from_benchmark=True) == "shipped_benchmark"
    import dataclasses

    own = dataclasses.replace(m, benchmark_table="/data/centre/ior_sweep.csv")
    assert provenance.origin_for(own, from_benchmark=True) == "benchmark"


def test_of_version_reads_the_training_run_tags(tmp_path):
    import mlflow
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    old = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        exp = mlflow.create_experiment("prov", artifact_location=(tmp_path / "a").as_uri())
        client = MlflowClient()
        versions = {}
        for name, tags in (
            # a run of today's trainer: both tags
            (
                "m-new",
                {provenance.SOURCE_TAG: SHIPPED_SOURCE, provenance.ORIGIN_TAG: "shipped_benchmark"},
            ),
            # a run from before the origin tag: the source text says it
            ("m-old", {provenance.SOURCE_TAG: "silver/file_features"}),
            # a placement run with only its label source
            ("m-label", {"iolake.label_source": "benchmark"}),
            ("m-unknown", {}),
        ):
            with mlflow.start_run(experiment_id=exp, tags=tags) as run:
                mlflow.log_param("model", "x")
            client.create_registered_model(name)
            versions[name] = client.create_model_version(name, "file:///nowhere", run.info.run_id)
        p = provenance.of_version(versions["m-new"], "champion")
        assert (p.name, p.version, p.alias, p.trained_on, p.origin) == (
            "m-new",
            "1",
            "champion",
            SHIPPED_SOURCE,
            "shipped_benchmark",
        )
        assert p.label() == "m-new v1 (@champion)" and "2-core VM" in p.note()
        assert p.short() == "trained on the shipped IOR sweep of a 2-core VM (tmpfs vs ext4)"
        old_run = provenance.of_version(versions["m-old"])
        assert old_run.origin == "lake" and old_run.label() == "m-old v1"
        assert provenance.of_version(versions["m-label"]).origin == "benchmark"
        unknown = provenance.of_version(versions["m-unknown"])
        assert unknown.origin == "unknown" and unknown.note() == "trained on an unrecorded source"
    finally:
        mlflow.set_tracking_uri(old[0])
        mlflow.set_registry_uri(old[1])
