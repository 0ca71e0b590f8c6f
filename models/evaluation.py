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
    return pd.Series(
        ["\x1f".join(_norm(v) for v in row) for row in frame[cols].itertuples(index=False)],
        index=frame.index,
    )


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


VETO_P = 0.05  # a model worse than its baseline on average is held back when a sign test says it is not chance


def worse_than_chance(better: int, worse: int) -> float:
    """One-sided p-value of the sign test (Dixon & Mood 1946) that the baseline wins more of the
    rows where the two disagree: `worse` rows the baseline got closer, `better` rows the model did
    (ties dropped). For two classifiers on the same rows this is McNemar's exact test (Dietterich
    1998, "Approximate statistical tests for comparing supervised classification algorithms")."""
    from scipy.stats import binomtest

    n = better + worse
    return 1.0 if n == 0 else float(binomtest(worse, n, 0.5, alternative="greater").pvalue)


def select(results: list[dict], key, checks) -> tuple[dict, str | None, str | None]:
    """The winner of a comparison, why it may not serve (None when it may), and a note when it serves
    although its mean is below the baseline's by no more than chance.

    results: one dict per model (`fit_and_evaluate`'s means; `vs_baseline`: metric -> (better,
    worse), the held-out rows, pooled over folds, where the model's error *in that metric's terms*
    was below / above the baseline's: a sign test on another error than the check's can contradict
    it, e.g. |log error| against MdAPE).
    key(result) orders them (higher wins). checks: (label, metric, baseline metric, lower_is_better)
    tuples: a model *fails* a check when its mean `metric` is worse than its baseline's on the same
    folds and, where it has `vs_baseline`, the sign test puts that below `VETO_P`
    (`worse_than_chance`). A mean is not the typical row: a difference of one label in a hundred or so is
    not evidence, and a bandwidth model's mean MdAPE can come from a few folds with huge errors
    while the model is closer than the baseline on most held-out rows. Rows of one configuration
    group move together, so the p-value is optimistic either way; it weighs the typical row, which
    is what a champion serves.

    The winner is the best by `key` among the models that pass every check. When none passes, it is
    the best by `key` overall and the returned reason names the check it failed: a model worse than
    a constant on the typical row must not become the champion.
    """

    def compare(r) -> tuple[list[str], list[str]]:
        failed, chance = [], []
        for label, metric, base, lower in checks:
            v, b = r[metric], r[base]
            if not ((v > b) if lower else (v < b)):
                continue
            text = f"{label} {v:.3f} against the baseline's {b:.3f}"
            if metric in r.get("vs_baseline", {}):
                better, worse = r["vs_baseline"][metric]
                p = worse_than_chance(better, worse)
                text += f" (closer on {better:,} held-out rows, farther on {worse:,}: sign test p {p:.2g})"
                if p >= VETO_P:
                    chance.append(text)
                    continue
            failed.append(text)
        return failed, chance

    judged = [
        (r, *compare(r)) for r in results
    ]  # (result, failed checks, shortfalls within chance)
    passing = [j for j in judged if not j[1]]
    best, failed, chance = max(passing or judged, key=lambda j: key(j[0]))
    if passing:
        note = (
            (
                f"{best['model']} serves although its mean is below its baseline's, since it is not worse "
                f"beyond chance row by row (a few groups far off can sink a mean): "
                + "; ".join(chance)
            )
            if chance
            else None
        )
        return best, None, note
    return (
        best,
        (
            f"every model is worse than its baseline on the same folds; the best, {best['model']}, has "
            + ", ".join(failed)
        ),
        None,
    )


def time_splits(apps, starts, logs, test_fraction: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """One (train, test) split ordered in time within each application: of an application's logs
    sorted by (start, log), the last `max(1, floor(n * test_fraction))` are held out when it has
    n >= 2 logs, the earlier ones train; an application of one log only trains. A log's rows stay
    on one side, and every held-out application has history in the training part (the split
    where a per-application median baseline means something). Rows without a start train."""
    frame = pd.DataFrame(
        {
            "app": np.asarray(apps, dtype=object),
            "start": pd.to_datetime(pd.Series(starts), utc=True).to_numpy(),
            "log": np.asarray(logs, dtype=object),
        }
    )
    per_log = (
        frame.dropna(subset=["start"])
        .groupby(["app", "log"], sort=False)["start"]
        .min()
        .reset_index()
        .sort_values(["app", "start", "log"], kind="mergesort")
    )
    held: set = set()
    for _, g in per_log.groupby("app", sort=False):
        n = len(g)
        if n >= 2:
            k = max(1, int(np.floor(n * test_fraction)))
            held.update(g["log"].iloc[n - k :])
    test = frame["log"].isin(held).to_numpy()
    return [(np.flatnonzero(~test), np.flatnonzero(test))]
