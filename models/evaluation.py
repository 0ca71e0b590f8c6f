"""Grouped evaluation: train/test splits that never put one configuration, or one log, on both sides.

PrismIO (§VII) evaluates placement on held-out configurations; a random row split does not: the
files of one run (a file-per-process job writes one file per rank, all with the same features)
and the repetitions of one configuration land on both sides and score each other. Here every
split is a `GroupShuffleSplit` over *split groups*:

- `connected_groups(pairs)`: the connected components of (feature group, log) pairs: two rows
  share a split group when they have identical features or come from the same log, transitively.
  For lake labels and lake files: a label group, every log that contributed to it and every other
  label group those logs contributed to stay together;
- a benchmark table's rows are configurations: their split group is their feature tuple
  (`feature_groups`), so configurations a trace cannot tell apart stay together.

The same splits (same groups, seed and fraction) serve every model and every baseline, so the
figures a run reports stand side by side.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def _norm(v) -> str:
    """A value as key text: numbers as floats (CSV's 64 equals Spark's 64.0), booleans and text as is."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return "null"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, float, np.integer, np.floating)):
        return repr(float(v))
    return str(v)


def feature_key(frame: pd.DataFrame, columns) -> pd.Series:
    """The text key of each row's tuple of `columns`, equal for equal values whatever the dtypes."""
    cols = list(columns)
    return pd.Series(["\x1f".join(_norm(v) for v in row) for row in frame[cols].itertuples(index=False)],
                     index=frame.index)


def feature_groups(frame: pd.DataFrame, columns) -> np.ndarray:
    """One integer per distinct tuple of `columns` (nulls equal to nulls)."""
    return pd.factorize(feature_key(frame, columns))[0]


def connected_groups(pairs: pd.DataFrame, a: str = "group_id", b: str = "log_id") -> pd.Series:
    """Split group of each value of column `a`: connected components of the bipartite graph of
    `pairs` (a, b). Returns a Series indexed by the values of `a` (component numbers from 0)."""
    parent: dict = {}

    def find(x):
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for u, v in pairs[[a, b]].itertuples(index=False):
        ru, rv = find(("a", u)), find(("b", v))
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    values = pd.unique(pairs[a])
    roots = [find(("a", u)) for u in values]
    return pd.Series(pd.factorize(pd.Series(roots, dtype=object))[0], index=values)


def splits(groups, n: int, test_fraction: float, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`n` (train, test) index pairs; a group is wholly on one side. `test_fraction` is of groups.
    With a single group there is nothing to hold out: an error naming the count."""
    from sklearn.model_selection import GroupShuffleSplit

    groups = np.asarray(groups)
    k = len(np.unique(groups))
    if k < 2:
        raise ValueError(f"grouped splits need at least 2 split groups; got {k}")
    gss = GroupShuffleSplit(n_splits=n, test_size=test_fraction, random_state=seed)
    return list(gss.split(np.zeros(len(groups)), groups=groups))


def oof_weights(folds, n_rows: int) -> np.ndarray:
    """How many test folds each row is in (the weight of a row in pooled out-of-fold scores)."""
    w = np.zeros(n_rows)
    for _, te in folds:
        w[te] += 1
    return w
