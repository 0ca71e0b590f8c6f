"""Grouped splits: a configuration's rows and a log's rows never straddle train and test."""
import numpy as np
import pandas as pd
import pytest

from models import evaluation


def test_connected_groups_join_label_groups_through_shared_logs():
    # g1 and g2 share log L2; g3 stands alone; g4 and g5 share L5 and L6
    pairs = pd.DataFrame({"group_id": ["g1", "g1", "g2", "g3", "g4", "g5", "g5"],
                          "log_id": ["L1", "L2", "L2", "L3", "L5", "L5", "L6"]})
    comp = evaluation.connected_groups(pairs)
    assert comp["g1"] == comp["g2"] and comp["g4"] == comp["g5"]
    assert len({comp["g1"], comp["g3"], comp["g4"]}) == 3


def test_connected_groups_are_transitive_over_long_chains():
    n = 500
    pairs = pd.DataFrame({"group_id": [f"g{i}" for i in range(n)] * 2,
                          "log_id": [f"L{i}" for i in range(n)] + [f"L{i + 1}" for i in range(n)]})
    assert evaluation.connected_groups(pairs).nunique() == 1


def test_feature_groups_number_identical_tuples_alike():
    df = pd.DataFrame({"a": [1, 1, 2, None, None], "b": ["x", "x", "x", "y", "y"]})
    g = evaluation.feature_groups(df, ["a", "b"])
    assert g[0] == g[1] and g[3] == g[4] and len(set(g)) == 3


def test_splits_never_put_a_group_on_both_sides():
    groups = np.repeat(np.arange(30), 4)
    folds = evaluation.splits(groups, 10, 0.2, seed=1)
    assert len(folds) == 10
    for tr, te in folds:
        assert not set(groups[tr]) & set(groups[te])
        assert len(set(groups[te])) == 6  # 20% of 30 groups


def test_splits_need_two_groups():
    with pytest.raises(ValueError, match="at least 2 split groups; got 1"):
        evaluation.splits(np.zeros(5), 2, 0.2, seed=0)


def test_oof_weights_count_held_out_appearances():
    folds = [(np.array([0, 1]), np.array([2, 3])), (np.array([2, 3]), np.array([0, 3]))]
    assert list(evaluation.oof_weights(folds, 5)) == [1, 0, 1, 2, 0]
