"""jobs/train.py helpers: the bounded training sample (models.max_train_rows)."""
from collections import Counter

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
    assert sorted(map(tuple, again.collect())) == sorted(map(tuple, got))  # the same table, the same sample
    other, _ = sample_groups(df, ["a", "b"], cap=600, seed=7)
    assert sorted(map(tuple, other.collect())) != sorted(map(tuple, got))  # the seed chooses


def test_sample_groups_leaves_a_table_within_the_cap_alone(spark):
    df = spark.createDataFrame(_rows(), "a long, b long, tier string, bw double")
    same, note = sample_groups(df, ["a", "b"], cap=1830, seed=42)
    assert same is df and note is None
