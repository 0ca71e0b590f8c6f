"""Minimum covering set: against brute-force minima (one interval and a set of op intervals per
member), IOMiner's greedy and edge cases (pure, fast)."""

from __future__ import annotations

import itertools
import random

import pytest

from features.covering_sets import (
    cover_frame,
    iominer_greedy,
    member_shares,
    merged_union,
    minimum_cover,
    set_cover,
    union_measure,
)
from tests.support.covering import dxt_union_s, union

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


# -- a set of op intervals per (rank, file) member: set cover ----------------------------------


def _brute_force_members(items) -> int:
    """The fewest members whose op intervals together equal the union of every op, by trying
    every subset of members in order of size."""
    whole = union([iv for ivs in items for iv in ivs])
    for k in range(1, len(items) + 1):
        for subset in itertools.combinations(range(len(items)), k):
            if union([iv for m in subset for iv in items[m]]) == whole:
                return k
    return 0


def _random_members(n_cases: int, seed: int):
    """Up to 7 members of 1-4 ops each on a half-unit grid: gaps, ties, zero-length ops."""
    rng = random.Random(seed)
    for _ in range(n_cases):
        items = []
        for _ in range(rng.randint(1, 7)):
            ops = []
            for _ in range(rng.randint(1, 4)):
                a = rng.randint(0, 16) / 2
                ops.append((a, a + rng.choice([0, 0.5, 1, 1.5, 2, 3])))
            items.append(ops)
        yield items


def test_set_cover_equals_brute_force_minimum_on_random_per_op_cases():
    sizes, multi = [], 0
    for items in _random_members(500, seed=20190514):
        cover = set_cover(items)
        whole = union([iv for ivs in items for iv in ivs])
        assert cover.proven_minimum, items
        assert len(cover.members) == _brute_force_members(items), items
        assert union([iv for m in cover.members for iv in items[m]]) == whole, items
        assert cover.pure_io_time_s == pytest.approx(sum(b - a for a, b in whole)), items
        assert all(s >= 0 for s in cover.shares) and sum(cover.shares) == pytest.approx(
            cover.pure_io_time_s
        ), items
        sizes.append(len(cover.members))
        multi += len(union(items[cover.members[0]])) > 1  # a member whose ops leave gaps
    assert max(sizes) >= 4 and multi > 100  # the cases do reach several members with gapped ops


def test_set_cover_a_span_that_would_swallow_the_others_does_not():
    # member 0 (like IOR's ior.json): ops at the start and the end; its [first, last] span would
    # cover members 1 and 2 alone, but its ops leave [1, 9] to them
    items = [[(0.0, 1.0), (9.0, 10.0)], [(1.0, 5.0)], [(5.0, 9.0)]]
    cover = set_cover(items)
    assert cover.members == [0, 1, 2] and cover.proven_minimum
    assert cover.pure_io_time_s == pytest.approx(10.0)
    assert cover.shares == pytest.approx([2.0, 4.0, 4.0])
    assert minimum_cover([(0.0, 10.0), (1.0, 5.0), (5.0, 9.0)])[0] == [
        0
    ]  # what the span method kept


def test_set_cover_gaps_between_ops_are_not_io_time():
    cover = set_cover([[(0.0, 1.0), (9.0, 10.0)], [(2.0, 3.0)]])
    assert cover.members == [0, 1]
    assert cover.pure_io_time_s == pytest.approx(3.0)  # not the 10 s of member 0's span
    assert cover.shares == pytest.approx([2.0, 1.0])


def test_set_cover_needs_the_search_when_no_member_is_forced():
    # every unit segment of [0, 4] has two coverers and no member's segments contain another's:
    # the reductions decide nothing; two members suffice (0 and 2, or 1 and 3), never one
    items = [[(0.0, 2.0)], [(1.0, 3.0)], [(2.0, 4.0)], [(0.0, 1.0), (3.0, 4.0)]]
    cover = set_cover(items)
    assert cover.members == [0, 2] and cover.proven_minimum
    assert cover.pure_io_time_s == pytest.approx(4.0)
    assert cover.shares == pytest.approx([2.0, 2.0])


def test_set_cover_isolated_zero_length_op_is_a_member_of_its_own():
    # the point op at 5 touches no other op: it is a (zero-time) component; the one at 1 is inside
    cover = set_cover([[(0.0, 2.0)], [(1.0, 1.0), (5.0, 5.0)], [(1.0, 1.0)]])
    assert cover.members == [0, 1] and cover.pure_io_time_s == pytest.approx(2.0)
    assert cover.shares == pytest.approx([2.0, 0.0])


def test_set_cover_without_budget_is_greedy_covers_and_says_so():
    unproven = 0
    for items in _random_members(200, seed=5):
        exact, greedy = set_cover(items), set_cover(items, budget=0)
        whole = union([iv for ivs in items for iv in ivs])
        assert union([iv for m in greedy.members for iv in items[m]]) == whole, items
        assert len(greedy.members) >= len(exact.members)
        assert greedy.pure_io_time_s == pytest.approx(exact.pure_io_time_s)
        unproven += not greedy.proven_minimum
    assert unproven > 0  # some cases were left to the greedy, and flagged


def test_set_cover_one_interval_per_member_is_the_interval_cover():
    for ivs in _random_sets(200, seed=11):
        cover = set_cover([[iv] for iv in ivs])
        members, pure = minimum_cover(ivs)
        assert cover.proven_minimum and len(cover.members) == len(members), ivs
        assert cover.pure_io_time_s == pytest.approx(pure)
        assert sum(cover.shares) == pytest.approx(pure)


def test_set_cover_empty_input():
    assert set_cover([]) == ([], 0.0, [], True)


def test_set_cover_search_beats_the_greedy_where_the_greedy_is_fooled():
    # unit segments x1..x3 of [0, 3] and y1..y3 of [3, 6]: X = [0, 3] and Y = [3, 6] suffice.
    # G1 = {x1, x2, y1, y2} (4 segments) lures the greedy, which then needs G2 = {x3, y1} and
    # G3 = {x1, y3} too. Every segment has two coverers and no member's segments contain another's,
    # so the reductions decide nothing and only the search finds the 2
    items = [
        [(0.0, 2.0), (3.0, 5.0)],
        [(2.0, 4.0)],
        [(0.0, 1.0), (5.0, 6.0)],
        [(0.0, 3.0)],
        [(3.0, 6.0)],
    ]
    greedy = set_cover(items, budget=0)
    assert greedy.members == [0, 1, 2] and not greedy.proven_minimum
    assert greedy.shares == pytest.approx([4.0, 1.0, 1.0])
    exact = set_cover(items)
    assert exact.members == [3, 4] and exact.proven_minimum
    assert exact.pure_io_time_s == pytest.approx(6.0) and exact.shares == pytest.approx([3.0, 3.0])


# -- real DXT ops: the IOR sweep, decoded natively, against pydarshan's segments ----------------


def test_cover_frame_pure_io_time_is_the_union_of_dxt_ops_on_sweep_logs():
    """Every 45th Darshan log of the IOR sweep (24 logs, all three interfaces and both tiers): the
    project's decoder's ops through `cover_frame` against pydarshan's DXT segments. The whole
    sweep through ingest and the covering stage is `python -m bench.sweep_checks`."""
    import pandas as pd

    from readers import native_darshan as native
    from tests.support.data import need, shared_path

    need(
        native._native is not None,
        "needs iolake_native, the native decoder's extension (pip install ./native)",
    )
    root = shared_path("iosweep")
    runs = pd.read_csv(root / "runs.csv")
    runs = runs[runs.tracer == "darshan"].iloc[::45]
    assert len(runs) == 24 and set(runs.api) == {"POSIX", "MPIIO", "HDF5"}
    gapped = 0
    for run in runs.itertuples():
        path = str(root / run.darshan_log)
        t = native.decode_darshan(path)
        ops = t["io_ops"].to_pandas()
        streams = set(
            t["files"].to_pandas().query("name in ['<STDIN>', '<STDOUT>', '<STDERR>']").record_id
        )
        ops = ops[ops.op.isin(["read", "write"]) & ~ops.record_id.isin(streams)]
        rows = ops.assign(log_id=run.run_id, job_month="2026-11", interval_source="dxt")
        cover = cover_frame(rows)
        want = dxt_union_s(path)  # pydarshan's segments: an independent decoder
        assert cover.pure_io_time_s.iloc[0] == pytest.approx(want, rel=1e-9, abs=1e-12), run.run_id
        assert cover.share_s.sum() == pytest.approx(want, rel=1e-9, abs=1e-12), run.run_id
        assert cover.cover_proven_minimum.all() and (cover.cover_size == len(cover)).all(), (
            run.run_id
        )
        members = ops.groupby(["record_id", "rank"])
        gapped += any(len(union(list(zip(g.start_s, g.end_s)))) > 1 for _, g in members)
    assert gapped == len(
        runs
    )  # every log has a (rank, file) whose ops leave gaps: spans would overstate


def test_cover_batches_keeps_each_log_whole_across_batch_boundaries():
    """The executor path: each log's rows consecutive, cut into Arrow batches anywhere (mid-log, one log over
    three batches, a batch of one row). Each log's cover, worked out by hand, comes out once and whole, with
    the log's source and untraced count."""
    import pyarrow as pa

    from features.covering_sets import COUNTER_SPAN, OP_DXT, OP_RECORDER, STREAM, cover_batches

    # a: one DXT op; its counter span of the same record is not an interval, and record 9 has no op: untraced.
    # b: (rec 1, rank 0) [0,2] and [4,5]; (rec 2, rank 1) [1,3]: both needed, 4 s; rec 5 is a stream: dropped.
    # c: counters only: (rec 1, rank 0) [0,10] swallows (rec 1, rank 1) [2,3]: one member, 10 s.
    # d (same log id as c, another month): one Recorder op [1,2].
    rows = [
        ("a", "m1", OP_DXT, 7, 0, 0.0, 1.0),
        ("a", "m1", COUNTER_SPAN, 7, 0, 0.0, 5.0),
        ("a", "m1", COUNTER_SPAN, 9, 0, 0.0, 9.0),
        ("b", "m1", OP_DXT, 1, 0, 0.0, 2.0),
        ("b", "m1", OP_DXT, 2, 1, 1.0, 3.0),
        ("b", "m1", OP_DXT, 1, 0, 4.0, 5.0),
        ("b", "m1", OP_DXT, 5, 0, 0.0, 50.0),
        ("b", "m1", STREAM, 5, 0, 0.0, 0.0),
        ("c", "m1", COUNTER_SPAN, 1, 1, 2.0, 3.0),
        ("c", "m1", COUNTER_SPAN, 1, 0, 0.0, 10.0),
        ("c", "m2", OP_RECORDER, 3, 2, 1.0, 2.0),
    ]
    cols = list(zip(*rows))
    names = ["log_id", "job_month", "kind", "record_id", "rank", "start_s", "end_s"]
    types = [
        pa.string(),
        pa.string(),
        pa.int8(),
        pa.int64(),
        pa.int64(),
        pa.float64(),
        pa.float64(),
    ]
    n = len(rows)
    for cuts in ([n], [1, 3, n], [2, 5, 6, n], [4, 8, 9, 10, n], list(range(1, n + 1))):
        batches, a = [], 0
        for b in cuts:
            batches.append(
                pa.RecordBatch.from_pydict(
                    {k: pa.array(c[a:b], type=t) for k, c, t in zip(names, cols, types)}
                )
            )
            a = b
        out = pa.Table.from_batches(list(cover_batches(iter(batches)))).to_pylist()
        got = sorted(
            (
                r["log_id"],
                r["job_month"],
                r["interval_source"],
                r["record_id"],
                r["rank"],
                r["share_s"],
                r["pure_io_time_s"],
                r["cover_size"],
                r["n_intervals"],
                r["n_untraced_items"],
            )
            for r in out
        )
        assert got == [
            ("a", "m1", "dxt", 7, 0, 1.0, 1.0, 1, 1, 1),
            ("b", "m1", "dxt", 1, 0, 3.0, 4.0, 2, 2, 0),
            ("b", "m1", "dxt", 2, 1, 1.0, 4.0, 2, 2, 0),
            ("c", "m1", "counters", 1, 0, 10.0, 10.0, 1, 2, 0),
            ("c", "m2", "recorder", 3, 2, 1.0, 1.0, 1, 1, 0),
        ], cuts
