"""Minimum covering set: against a brute-force minimum, IOMiner's greedy and edge cases (pure, fast)."""
from __future__ import annotations

import itertools
import random

import pytest

from features.covering_sets import iominer_greedy, member_shares, merged_union, minimum_cover, union_measure

IOMINER_COUNTER_EXAMPLE = [(0.0, 10.0), (0.5, 11.5), (9.0, 19.0)]


def _brute_force_size(ivs) -> int:
    """The fewest items whose union equals the union of all items, trying every subset."""
    target = merged_union(ivs)
    for k in range(1, len(ivs) + 1):
        for subset in itertools.combinations(ivs, k):
            if merged_union(subset) == target:
                return k
    return 0


def _random_sets(n_sets: int, seed: int = 20190514):
    """Small interval sets on a coarse grid: ties, nested, touching and zero-length items."""
    rng = random.Random(seed)
    for _ in range(n_sets):
        n = rng.randint(1, 9)
        ivs = []
        for _ in range(n):
            a = rng.randint(0, 12)
            ivs.append((float(a), float(a + rng.choice([0, 1, 1, 2, 3, 4, 6]))))
        if rng.random() < 0.3:  # an exact duplicate
            ivs.append(rng.choice(ivs))
        yield ivs[:9]


def test_minimum_cover_equals_brute_force_minimum_on_random_sets():
    checked = 0
    for ivs in _random_sets(400):
        members, pure = minimum_cover(ivs)
        assert len(members) == _brute_force_size(ivs), ivs
        assert len(set(members)) == len(members)
        assert merged_union([ivs[m] for m in members]) == merged_union(ivs), ivs
        assert pure == pytest.approx(union_measure(ivs))
        checked += 1
    assert checked == 400


def test_minimum_cover_shares_partition_pure_io_time():
    for ivs in _random_sets(200, seed=7):
        members, pure = minimum_cover(ivs)
        shares = member_shares(ivs, members)
        assert all(s >= 0 for s in shares), (ivs, shares)
        assert sum(shares) == pytest.approx(pure)


def test_iominer_greedy_covers_the_union_but_is_never_smaller():
    larger = 0
    for ivs in _random_sets(400, seed=3):
        greedy = iominer_greedy(ivs)
        assert merged_union([ivs[m] for m in greedy]) == merged_union(ivs), ivs
        assert len(greedy) >= len(minimum_cover(ivs)[0])
        larger += len(greedy) > len(minimum_cover(ivs)[0])
    assert larger > 0  # the random sets do exercise IOMiner's shortfall


def test_minimum_cover_beats_iominer_on_the_counter_example():
    assert sorted(iominer_greedy(IOMINER_COUNTER_EXAMPLE)) == [0, 1, 2]
    members, pure = minimum_cover(IOMINER_COUNTER_EXAMPLE)
    assert members == [0, 2]
    assert pure == pytest.approx(19.0)
    assert member_shares(IOMINER_COUNTER_EXAMPLE, members) == pytest.approx([10.0, 9.0])


def test_minimum_cover_empty_input():
    assert minimum_cover([]) == ([], 0.0)
    assert iominer_greedy([]) == []
    assert merged_union([]) == []


def test_minimum_cover_touching_nested_and_points():
    # touching items join one component; a nested item is never needed; an isolated point is
    ivs = [(0.0, 1.0), (1.0, 2.0), (0.2, 0.8), (5.0, 5.0), (1.5, 1.5)]
    members, pure = minimum_cover(ivs)
    assert members == [0, 1, 3]
    assert pure == pytest.approx(2.0)


def test_minimum_cover_ties_go_to_the_earlier_start_then_lower_index():
    assert minimum_cover([(0.0, 4.0), (0.0, 4.0)])[0] == [0]
    assert minimum_cover([(0.0, 2.0), (1.0, 5.0), (2.0, 5.0)])[0] == [0, 1]
