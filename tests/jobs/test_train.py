"""jobs/train.py helpers: the bounded training sample (models.max_train_rows)."""

from collections import Counter

import numpy as np

from jobs.train import sample_groups


def _rows():
    # 60 feature groups (a, b) of 1 to 60 rows each: 1,830 rows, each group's rows on two tiers
    return [(g % 7, g, "bb" if k % 2 else "pfs", float(k)) for g in range(60) for k in range(g + 1)]


def test_sample_groups_keeps_whole_groups_and_bounds_the_rows(spark):
    rows = _rows()
    df = spark.createDataFrame(rows, "a long, b long, tier string, bw double")
    sampled, note = sample_groups(df, ["a", "b"], cap=600, seed=42)
    got = sampled.collect()
    sizes, want = Counter((r.a, r.b) for r in got), Counter((a, b) for a, b, _, _ in rows)
    assert 0 < len(got) < len(rows)
    assert all(n == want[g] for g, n in sizes.items())  # a group is kept whole or not at all
    assert len(got) <= 3 * 600 and len(sizes) < 60
    assert "1,830 rows" in note and "max_train_rows = 600" in note
    again, _ = sample_groups(df, ["a", "b"], cap=600, seed=42)
    assert sorted(map(tuple, again.collect())) == sorted(
        map(tuple, got)
    )  # the same table, the same sample
    other, _ = sample_groups(df, ["a", "b"], cap=600, seed=7)
    assert sorted(map(tuple, other.collect())) != sorted(map(tuple, got))  # the seed chooses


def test_sample_groups_leaves_a_table_within_the_cap_alone(spark):
    df = spark.createDataFrame(_rows(), "a long, b long, tier string, bw double")
    same, note = sample_groups(df, ["a", "b"], cap=1830, seed=42)
    assert same is df and note is None


def test_water_level_is_the_largest_cut_within_the_cap():
    from jobs.train import water_level

    rng = np.random.default_rng(3)
    for _ in range(200):
        sizes = rng.integers(1, 300, rng.integers(1, 30))
        cap = int(rng.integers(1, sizes.sum() + 1))
        fits = [k for k in range(1, sizes.max() + 1) if sum(min(int(s), k) for s in sizes) <= cap]
        assert water_level(sizes, cap) == (max(fits) if fits else 0)


def _skewed_rows():
    # 40 groups g: group 0 has 60 logs, the others 1 + g % 5 logs; every log writes 3 files
    return [
        (g % 7, g, f"log-{g}-{j}", float(f))
        for g in range(40)
        for j in range(60 if g == 0 else 1 + g % 5)
        for f in range(3)
    ]


def _sample_skewed(spark, cap: int, seed: int = 42):
    """(rows kept, rows per group kept, rows per group, note) of `_skewed_rows` sampled within logs."""
    rows = _skewed_rows()
    df = spark.createDataFrame(rows, "a long, b long, log_id string, bw double")
    sampled, note = sample_groups(df, ["a", "b"], cap=cap, seed=seed, within="log_id")
    got = sorted(map(tuple, sampled.collect()))
    return got, Counter(r[:2] for r in got), Counter((a, b) for a, b, _, _ in rows), note


def test_sample_groups_within_keeps_every_group_cut_by_whole_logs(spark):
    got, sizes, want, note = _sample_skewed(spark, 450)
    assert set(sizes) == set(want)  # every group is kept
    # 39 small groups hold 3 to 15 rows (357 in all), group 0 180: the cut is 450 - 357 = 93 rows
    assert all(sizes[g] == want[g] for g in want if g != (0, 0))
    assert 0 < sizes[(0, 0)] < want[(0, 0)] and abs(sizes[(0, 0)] - 93) <= 36
    per_log = Counter(r[2] for r in got)
    assert set(per_log.values()) == {3}  # a log's files are kept together
    assert "all 40 groups" in note and "about 93 rows" in note
    assert _sample_skewed(spark, 450)[0] == got  # the same table, the same sample
    assert _sample_skewed(spark, 450, seed=7)[0] != got  # the seed chooses


def test_sample_groups_within_falls_back_to_whole_groups_when_the_groups_alone_pass_the_cap(spark):
    _, sizes, want, note = _sample_skewed(spark, 30)
    assert all(n == want[g] for g, n in sizes.items()) and len(sizes) < 40
    assert "whole groups" in note
