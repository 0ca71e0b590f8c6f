import numpy as np
import pandas as pd
import pytest

from models import evaluation, placement
from schemas.placement_labels import FEATURES
from tests.models.tiny import placement_frame


@pytest.mark.parametrize("name", placement.CLASSIFIERS)
def test_build_estimator_fits_raw_rows(name):
    X, y = placement_frame()
    est = placement.build_estimator(name, seed=1).fit(X, y)
    pred = est.predict(X)
    assert set(pred) <= {"bb", "pfs"}
    assert est.predict_proba(X).shape == (len(X), 2)
    if name != "naive_bayes":  # the two tiers are separable here
        assert np.mean(pred == y.to_numpy()) >= 0.9


def test_build_estimator_unknown_name_lists_known():
    with pytest.raises(ValueError, match="random_forest"):
        placement.build_estimator("catboost")


def test_build_estimator_ignores_tier_and_paths():
    X, y = placement_frame()
    est = placement.build_estimator("decision_tree").fit(X.assign(tier="bb", file_name="/x"), y)
    names = est.named_steps["prep"].get_feature_names_out()
    assert not any("tier" in n or "file_name" in n for n in names)


def test_fit_and_evaluate_reports_mean_std_and_baseline():
    X, y = placement_frame(40)
    folds = evaluation.splits(np.arange(40) // 2, 3, 0.25, seed=0)
    r = placement.fit_and_evaluate(
        "decision_tree", X, y, folds, seed=0, strong=pd.Series(X.index % 4 == 0, index=X.index)
    )
    assert len(r["accuracy"]) == 3
    assert r["accuracy_mean"] == pytest.approx(1.0)
    assert r["baseline_mean"] == pytest.approx(0.5)
    assert "accuracy_strong_mean" in r


def test_eliminate_features_keeps_a_deciding_feature():
    X, y = placement_frame(40)
    kept, trail = placement.eliminate_features(
        "decision_tree", X, y, evaluation.splits(np.arange(40), 2, 0.25, 0)
    )
    assert len(kept) < len(FEATURES)
    assert kept and trail[-1]["accuracy"] == pytest.approx(1.0)


def test_baseline_is_the_training_majority_of_each_fold():
    """Hand-made folds: the test parts' share of the training majority, by hand."""
    X, y = placement_frame(8)  # odd rows bb, even rows pfs
    y = pd.Series(["bb", "bb", "bb", "pfs", "bb", "pfs", "pfs", "pfs"])
    folds = [
        (np.array([0, 1, 2, 3, 4]), np.array([5, 6, 7])),  # train majority bb: 0 of 3 test rows
        (np.array([3, 5, 6, 7, 0]), np.array([1, 2, 4])),
    ]  # train majority pfs: 0 of 3
    r = placement.fit_and_evaluate("decision_tree", X, y, folds, seed=0)
    assert r["baseline_mean"] == 0.0


def test_reference_estimator_reads_the_benchmark_parameters():
    params = pd.DataFrame(
        {"ior_api": ["POSIX", "MPIIO"] * 10, "ior_block_size": [1 << 20, 1 << 10] * 10}
    )
    y = pd.Series(["bb", "pfs"] * 10)
    folds = evaluation.splits(np.arange(20), 4, 0.25, seed=3)
    r = placement.fit_and_evaluate(
        "reference", params, y, folds, estimator=placement.reference_estimator(params)
    )
    assert r["accuracy_mean"] == 1.0 and r["baseline_mean"] <= 0.6


def test_vs_baseline_counts_rows_where_model_and_majority_disagree():
    """A constant 'pfs' model against each fold's training majority, counted by hand."""
    from sklearn.dummy import DummyClassifier

    X, _ = placement_frame(8)
    y = pd.Series(["bb", "bb", "bb", "pfs", "bb", "pfs", "pfs", "pfs"])
    folds = [
        (
            np.array([0, 1, 2, 3, 4]),
            np.array([5, 6, 7]),
        ),  # majority bb; truth pfs pfs pfs: pfs right 3x
        (np.array([0, 1, 2, 3, 5]), np.array([4, 6, 7])),
    ]  # majority bb; truth bb pfs pfs: right 2x, wrong 1x
    r = placement.fit_and_evaluate(
        "constant_pfs",
        X,
        y,
        folds,
        estimator=lambda seed: DummyClassifier(strategy="constant", constant="pfs"),
    )
    assert r["vs_baseline"] == {"accuracy_mean": (5, 1)}
