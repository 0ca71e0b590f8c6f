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


# -- bounds without DXT: HEATMAP bins and the slowest process ----------------------------------


def test_clip_to_keeps_the_parts_of_each_interval_inside_the_components():
    import numpy as np

    from features.covering_sets import clip_to

    comp_s, comp_e = np.array([1.0, 4.0]), np.array([2.0, 6.0])
    spans = [(0.5, 5.5), (2.0, 4.0), (1.5, 1.5), (3.0, 3.0), (7.0, 8.0), (0.0, 1.0)]
    s, e = (np.array(c) for c in zip(*spans))
    rows, lo, hi = clip_to(np.arange(len(spans)), s, e, comp_s, comp_e)
    got = list(zip(rows.tolist(), lo.tolist(), hi.tolist()))
    # [0.5, 5.5] -> [1, 2] and [4, 5.5]; [2, 4] touches both components only at their edges;
    # the point 1.5 lies inside [1, 2], the point 3 in a gap; [7, 8] is past U; [0, 1] touches it
    assert got == [(0, 1.0, 2.0), (0, 4.0, 5.5), (2, 1.5, 1.5)]


def test_slowest_process_is_max_of_posix_or_mpiio_plus_stdio_per_rank():
    """Hand-derived: rank 0 spends max(POSIX 0.8, MPI-IO 1.0) + STDIO 0.25 = 1.25 s in reads and
    writes; rank 1 spends 1.1 s on its own file and, as the slowest rank of a shared file, 2.0 - 0.5
    s there: 2.6 s. NaN and negative contributions count 0."""
    import numpy as np

    from features.covering_sets import IO_TIME, slowest_process_s

    P, M, S = IO_TIME["posix"], IO_TIME["mpiio"], IO_TIME["stdio"]
    rows = [
        (P, 0, 0.8),
        (M, 0, 1.0),
        (S, 0, 0.25),
        (P, 1, 1.1),
        (P, 1, 1.5),  # the shared record's F_SLOWEST_RANK_TIME - META_TIME, given to rank 1
        (S, 1, float("nan")),
        (P, 2, -3.0),
        (2, 3, 99.0),  # a counter span, not a time
    ]
    kind, rk, secs = (np.array(c) for c in zip(*rows))
    assert slowest_process_s(kind, rk, secs) == 2.6
    # the order of the rows does not change a bit of it
    for perm in ([7, 6, 5, 4, 3, 2, 1, 0], [4, 0, 3, 1, 7, 2, 6, 5]):
        assert slowest_process_s(kind[perm], rk[perm], secs[perm]) == 2.6
    assert slowest_process_s(kind[:0], rk[:0], secs[:0]) == 0.0


def _heatmap_log():
    """One log's worker rows without traced ops (the log `K` of tests/jobs/test_covering.py):
    HEATMAP rank 0 at 1 s bins, non-empty [1, 2] and [4, 5]; rank 1 at 2 s bins, non-empty [4, 6]:
    U = [1, 2] u [4, 6], 3 s. Counter spans: (60, 0) [0.5, 5.5], (61, 1) [4.5, 5.75], shared (62, -1)
    [1.5, 4.2], STDIO (63, 0) [1.2, 1.7]."""
    from features.covering_sets import COUNTER_SPAN, HEATMAP_BIN, IO_TIME

    P, S = IO_TIME["posix"], IO_TIME["stdio"]
    return [
        (COUNTER_SPAN, 60, 0, 0.5, 5.5),
        (COUNTER_SPAN, 61, 1, 4.5, 5.75),
        (COUNTER_SPAN, 62, -1, 1.5, 4.2),
        (COUNTER_SPAN, 63, 0, 1.2, 1.7),
        (HEATMAP_BIN, 900, 0, 1.0, 2.0),
        (HEATMAP_BIN, 900, 0, 4.0, 5.0),
        (HEATMAP_BIN, 900, 1, 4.0, 6.0),
        (P, 60, 0, 0.8, 0.8),
        (P, 61, 1, 1.1, 1.1),
        (P, 62, 1, 1.5, 1.5),
        (S, 63, 0, 0.25, 0.25),
    ]


def test_log_members_bound_a_log_without_dxt_by_its_heatmap_bins():
    """Cut to U, (60, 0) is [1, 2] u [4, 5.5], (61, 1) [4.5, 5.75], (62, -1) [1.5, 2] u [4, 4.2],
    (63, 0) [1.2, 1.7]: their union [1, 2] u [4, 5.75] is 2.75 s (the spans whole: 5.25 s), covered
    by (60, 0) and (61, 1), with shares 2.5 and 0.25. The lower bound is rank 1's 2.6 s."""
    import numpy as np

    from features.covering_sets import HEATMAP_BIN, log_members

    cols = [np.array(c) for c in zip(*_heatmap_log())]
    source, untraced, m, bound = log_members(*cols)
    assert (source, untraced) == ("counters", 0)
    assert bound == ("heatmap", False, 2.6)
    assert list(zip(m["record_id"].tolist(), m["rank"].tolist())) == [(60, 0), (61, 1)]
    assert m["start_s"].tolist() == [1.0, 4.5] and m["end_s"].tolist() == [5.5, 5.75]
    assert m["share_s"].tolist() == [2.5, 0.25]
    assert m["pure_io_time_s"].tolist() == [2.75, 2.75] and m["n_intervals"].tolist() == [4, 4]
    # without the HEATMAP rows: the spans whole, [0.5, 5.75], 5.25 s; the lower bound unchanged
    no_bins = cols[0] != HEATMAP_BIN
    source, _, m, bound = log_members(*[c[no_bins] for c in cols])
    assert bound == ("counters", False, 2.6) and m["pure_io_time_s"].tolist() == [5.25, 5.25]
    # a lower bound past the upper one (counters that disagree) is kept at the upper one
    slow = [c.copy() for c in cols]
    slow[3][-1] = slow[4][-1] = 40.0
    assert log_members(*slow)[3] == ("heatmap", False, 2.75)


def test_log_members_of_a_log_whose_spans_miss_every_heatmap_bin_is_none():
    """HEATMAP says no byte moved while the counter span was open: no interval, no row; a log whose
    HEATMAP bins are all empty sends no bin and keeps its counter spans."""
    import numpy as np

    from features.covering_sets import COUNTER_SPAN, HEATMAP_BIN, log_members

    rows = [(COUNTER_SPAN, 1, 0, 2.0, 3.0), (HEATMAP_BIN, 9, 0, 0.0, 1.0)]
    assert log_members(*[np.array(c) for c in zip(*rows)]) is None
    got = log_members(*[np.array(c) for c in zip(*rows[:1])])
    assert got[3] == ("counters", False, 0.0) and got[2]["pure_io_time_s"].tolist() == [1.0]


def test_log_members_with_traced_ops_are_exact_whatever_the_heatmap():
    import numpy as np

    from features.covering_sets import HEATMAP_BIN, OP_DXT, log_members

    rows = [*_heatmap_log(), (OP_DXT, 60, 0, 0.5, 0.75), (OP_DXT, 61, 1, 3.0, 3.5)]
    source, untraced, m, bound = log_members(*[np.array(c) for c in zip(*rows)])
    # the ops lie outside the HEATMAP bins: DXT's times stand, exact, lower bound = the figure
    assert source == "dxt" and untraced == 2 and bound == ("dxt", True, 0.75)
    assert HEATMAP_BIN not in m["record_id"]


def _manifest_logs(want_dxt: bool) -> list:
    """The shared Darshan logs pydarshan 3.5.0 can open, with HEATMAP and without DXT (or with DXT)."""
    import csv

    from tests.support.data import shared_path

    root = shared_path("darshan")
    with open(root / "MANIFEST.csv") as fh:
        rows = list(csv.DictReader(fh))
    return [
        root / r["path"]
        for r in rows
        if ("DXT" in r["modules"]) == want_dxt
        and (want_dxt or "HEATMAP" in r["modules"])
        and not r["pydarshan_error"]
    ]


def _slowest_by_pydarshan(path) -> float:
    """The oracle's slowest process's read and write time, from pydarshan's records: per rank
    max(POSIX, MPI-IO) + STDIO, a rank's own records' READ_TIME + WRITE_TIME and, for a shared
    record, F_SLOWEST_RANK_TIME - META_TIME (at least 0) given to its SLOWEST_RANK; the standard
    streams are not storage I/O."""
    import darshan

    report = darshan.DarshanReport(str(path), read_all=False)
    report.read_name_records()
    streams = {
        k for k, v in report.name_records.items() if v in ("<STDIN>", "<STDOUT>", "<STDERR>")
    }
    per: dict = {}
    for mod, p in (("POSIX", "POSIX"), ("MPI-IO", "MPIIO"), ("STDIO", "STDIO")):
        if mod not in report.modules:
            continue
        report.mod_read_all_records(mod)
        df = report.records[mod].to_df()
        c, f = df["counters"], df["fcounters"]
        for k in range(len(c)):
            if int(c["id"].iloc[k]) in streams:
                continue
            rank = int(c["rank"].iloc[k])
            if rank >= 0:
                secs = f[f"{p}_F_READ_TIME"].iloc[k] + f[f"{p}_F_WRITE_TIME"].iloc[k]
            else:
                rank = int(c[f"{p}_SLOWEST_RANK"].iloc[k])
                secs = f[f"{p}_F_SLOWEST_RANK_TIME"].iloc[k] - f[f"{p}_F_META_TIME"].iloc[k]
            per.setdefault(rank, {}).setdefault(p, 0.0)
            per[rank][p] += max(float(secs), 0.0)
    return max(
        (max(t.get("POSIX", 0.0), t.get("MPIIO", 0.0)) + t.get("STDIO", 0.0) for t in per.values()),
        default=0.0,
    )


@pytest.mark.slow
def test_real_logs_with_heatmap_and_no_dxt_are_bounded_between_slowest_process_and_bins():
    """Every shared log with HEATMAP and no DXT (pydarshan's example logs, darshan-logs' dlio and
    e3sm_io_heatmap_only, whose ranks hold bins of two widths): lower <= pure I/O time <= the union
    of non-empty bins re-binned to the widest width (`rebin`), the lower bound is pydarshan's slowest
    process (kept at most the upper), and no figure is longer than the counter spans gave."""
    import numpy as np

    from apps.analysis.timeline import common_bins, rebin
    from features.covering_sets import COUNTER_SPAN, HEATMAP_BIN, log_covers, log_rows
    from readers.darshan import decode_darshan

    logs = _manifest_logs(want_dxt=False)
    assert len(logs) >= 40
    seen = {}
    for path in logs:
        t = decode_darshan(str(path))
        rows = log_covers(t).to_pylist()
        if not rows:
            continue
        r = rows[0]
        heat = t["heatmap"].to_pandas()
        width, nbins = common_bins(heat)
        total = np.zeros(nbins, dtype="int64")
        for h in heat.itertuples():
            both = np.asarray(h.read_bytes, "int64") + np.asarray(h.write_bytes, "int64")
            total += rebin(both, float(h.bin_width_s), width, nbins)
        bins_s = float(np.count_nonzero(total) * width)
        assert r["time_source"] == "heatmap" and r["exact"] is False, path.name
        assert r["pure_io_time_min_s"] <= r["pure_io_time_s"] <= bins_s + 1e-9, path.name
        assert r["pure_io_time_min_s"] == pytest.approx(
            min(_slowest_by_pydarshan(path), r["pure_io_time_s"]), rel=1e-9, abs=1e-12
        ), path.name
        # the counter spans alone (no bins) never give less
        kind, *rest = log_rows(t)
        whole = union_measure(
            [(a, b) for k, a, b in zip(kind, rest[2], rest[3]) if k == COUNTER_SPAN]
        )
        assert r["pure_io_time_s"] <= whole + 1e-9, path.name
        assert (kind == HEATMAP_BIN).any()
        seen[path.name] = (r["pure_io_time_s"], r["pure_io_time_min_s"], bins_s)
    assert len(seen) >= 30
    e3sm = seen["e3sm_io_heatmap_only.darshan"]  # 512 ranks, bins of 0.1 s and 6.4 s
    assert e3sm[1] > 600 and e3sm[0] < e3sm[2] <= 720


@pytest.mark.slow
def test_real_logs_with_dxt_stay_exact():
    from features.covering_sets import log_covers
    from readers.darshan import decode_darshan

    n = 0
    for path in _manifest_logs(want_dxt=True):
        rows = log_covers(decode_darshan(str(path))).to_pylist()
        if rows:
            assert {(r["time_source"], r["exact"]) for r in rows} == {("dxt", True)}, path.name
            assert rows[0]["pure_io_time_min_s"] == rows[0]["pure_io_time_s"], path.name
            n += 1
    assert n >= 15
