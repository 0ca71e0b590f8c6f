"""Minimum I/O covering set per job, from per-op intervals (sweep-line analysis): pure logic.

Source. The keynote's "Sweep-line analysis" slides (seeds/001: "I/O covering set: the minimum
set of files whose I/O times cover the whole job"), after IOMiner (Wang et al., IEEE Cluster
2018, its sweep-line analysis of a job's (rank, file) I/O intervals; public code hpc-io/IOMiner,
iominer/iominer_sweepline_analysis.py `GenSweepLine`).

Members and intervals. A member is a (rank, file) pair, one per (log, record_id, rank). Each
job takes all its intervals from one source, stated as `interval_source` on every row of it:
- `dxt` / `recorder`: the log has traced read or write operations (bronze/io_ops). A member's
  intervals are its ops' [start_s, end_s] (DXT_POSIX and DXT_MPIIO rows of a file share its
  record id and fold into one member). Files without traced ops (STDIO files such as IOR's
  `ior.json`, which DXT does not trace) are left out and counted in `n_untraced_items`: their
  counters give one [first, last] span, not I/O time, and such a span would swallow the traced
  files' ops and the gaps between them.
- `counters`: a log without traced ops takes one interval per member from Darshan's file-level
  timestamps in bronze/posix, mpiio and stdio: start = min of the READ/WRITE_START timestamps
  > 0, end = max of the READ/WRITE_END timestamps, folded over the modules of the same (record,
  rank) (MPI-IO wraps the POSIX calls beneath it; STDIO files have no POSIX record). A record
  Darshan reduced over ranks (rank -1) is one member with rank -1. Open, close and metadata
  timestamps (and Recorder's open/seek/meta calls) never make an interval: a file that was only
  opened or stat'ed has none.
- Invalid intervals (null, NaN, negative start, end < start) are dropped; so are the standard
  streams (<STDIN>, <STDOUT>, <STDERR>) when the `files` table is given: terminal output is not
  storage I/O (IOMiner drops them too).

Pure I/O time is the measure of the union of all the job's intervals (closed intervals:
touching ones join; an isolated zero-length op is a zero-time component of its own). With DXT
or Recorder it is exactly the union of the ops' intervals, so gaps between one rank's ops on a
file are not I/O time.

Bounds without DXT. Without traced ops the true pure I/O time (the measure of the time some
process is in a read or write) is not known; each job's rows say what is (`time_source`, `exact`,
`pure_io_time_min_s`):
- `heatmap`: the log has non-empty HEATMAP bins (bronze/heatmap: Darshan 3.4's per-rank bytes
  per time bin). Darshan's runtime adds each read's and write's bytes to the bins its call spans
  (darshan-runtime/lib/darshan-heatmap.c `heatmap_update`), so every such call lies in the union U
  of the non-empty bins [i * w, (i + 1) * w] (read + write bytes > 0, every module's records, each
  at its own width w). Each member's counter span is cut to U (`clip_to`: a span that falls in
  several components of U gives a member with several intervals; a member with nothing inside U
  drops out) and the cover is taken over the pieces. `pure_io_time_s`, the measure of the pieces'
  union, is an upper bound that is never longer than U, and U is never longer than the union
  after re-binning every row to the widest width (`apps/analysis/timeline.py` `rebin`, as
  pydarshan's heatmap handling does): a bin lies inside the wider bin it re-bins into.
- `counters`: no HEATMAP bin either: the spans whole, an upper bound (often the whole run).
- `pure_io_time_min_s`: the slowest process's read and write time (`slowest_process_s`), a lower
  bound whatever the source, kept at most `pure_io_time_s` (counters that disagree cannot raise
  the lower bound past the upper); equal to `pure_io_time_s` when `exact` (`dxt`, `recorder`).
Bytes moved by a call of zero bytes or rounded out of a bin leave no trace in U: the bound rests
on the HEATMAP's bytes.

Cover. The minimum covering set is the fewest members whose intervals together equal that
union. With one interval per member (counters, or a member whose ops merge into one interval)
this is interval cover, and the classic greedy (`minimum_cover`) is optimal: start with the item
that starts first (reaching furthest); then, among items starting at or before the covered end,
take the one reaching furthest. With a *set* of intervals per member it is set cover, NP-hard in
general (any set system can be drawn as unions of unit intervals), so `set_cover`:
1. cuts time at every interval end into elementary segments (plus isolated points); a member
   covers a segment or misses it whole;
2. takes every member that alone covers some segment (it is in every cover), then repeatedly
   drops members whose uncovered segments another member's include and takes the members that
   became sole coverers (set-cover reductions that keep a minimum);
3. splits what is left into independent groups and solves each exactly by branch and bound
   (branch on the segment with fewest coverers; bound by segments with pairwise-disjoint
   coverers), within `budget` nodes and a size cap;
4. past the budget or cap, covers the group greedily (most new segments first, then drops
   redundant members) and the job's row says `cover_proven_minimum = false`.
So a cover always covers exactly the union; its size is proven minimum whenever
`cover_proven_minimum` is true (the brute-force oracle tests check that on random per-op cases),
and is an upper bound otherwise.

IOMiner's `GenSweepLine` instead replaces the current item, when it ends, by the *longest*
active item that reaches beyond it: A=[0,10], B=[0.5,11.5], C=[9,19] gives A, B, C where A, C
suffice. `iominer_greedy` re-states that rule (selection only, not IOMiner's per-rank re-timing
of overlapping files) to measure the difference.

Shares. Members are ordered in time (first start, last end, rank, record_id); `share_s` of a
member is the part of the union it covers that no member before it covers. Shares are
non-negative and sum to the pure I/O time, a partition of it by member. With one interval per
member this is end - max(start, previous member's end), as before.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import reduce
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pyarrow is imported where it is used; the annotations only name it
    import pyarrow as pa

ITEM_KEY = ["log_id", "job_month", "record_id", "rank"]
NOT_DATA = ("<STDIN>", "<STDOUT>", "<STDERR>")
COUNTER_MODULES = {"posix": "POSIX", "mpiio": "MPIIO", "stdio": "STDIO"}
BUDGET = 20_000  # branch-and-bound nodes per job before the greedy answer stands unproven
EXACT_CAP = (400, 4_000)  # (members, segments) of a group past which the search is not tried


# -- pure interval logic: one interval per member ---------------------------------------------


def _arrays(intervals) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(intervals, dtype=float).reshape(-1, 2)
    return a[:, 0], a[:, 1]


def merged_union(intervals) -> list[tuple[float, float]]:
    """The union of closed intervals as sorted disjoint components (touching ones join)."""
    s, e = _arrays(intervals)
    out: list[list[float]] = []
    for i in np.lexsort((e, s)):
        if out and s[i] <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e[i])
        else:
            out.append([s[i], e[i]])
    return [(a, b) for a, b in out]


def union_measure(intervals) -> float:
    return float(sum(b - a for a, b in merged_union(intervals)))


def minimum_cover(intervals) -> tuple[list[int], float]:
    """(member indices in time order, pure I/O time) of a minimum covering set of single intervals.

    `intervals` is a sequence of (start, end) with start <= end; ties between equally good
    items go to the earlier start, then to the lower index.
    """
    s, e = _arrays(intervals)
    n = len(s)
    if n == 0:
        return [], 0.0
    # sweep order: by start, reaching furthest first, then by index
    sweep = np.lexsort((np.arange(n), -e, s))
    members: list[int] = []
    total = 0.0
    k = 0
    while k < n:
        first = int(sweep[k])
        members.append(first)
        comp_start, reach = s[first], e[first]
        k += 1
        while True:
            best = -1
            while k < n and s[sweep[k]] <= reach:
                j = int(sweep[k])
                if e[j] > reach and (best < 0 or e[j] > e[best]):
                    best = j
                k += 1
            if best < 0:
                break
            members.append(best)
            reach = e[best]
        total += reach - comp_start
    return members, float(total)


def member_shares(intervals, members: Sequence[int]) -> list[float]:
    """Each member's share of pure I/O time: what it adds to the members before it in time."""
    s, e = _arrays(intervals)
    shares, prev_end = [], -np.inf
    for m in members:
        shares.append(float(e[m] - max(s[m], prev_end)))
        prev_end = max(prev_end, e[m])
    return shares


def iominer_greedy(intervals) -> list[int]:
    """IOMiner's sweep-line selection: when the current item ends, take the longest active item
    reaching beyond it; a new component starts with the first item to start. Not minimum."""
    s, e = _arrays(intervals)
    n = len(s)
    # IOMiner sorts events by (time, ends before starts, longest first); a zero-length item's
    # end must still follow its own start (IOMiner's code raises a KeyError on one)
    events = sorted(
        [(s[i], 1, -(e[i] - s[i]), i) for i in range(n)]
        + [(e[i], 0 if e[i] > s[i] else 2, -(e[i] - s[i]), i) for i in range(n)]
    )
    active: set[int] = set()
    members: list[int] = []
    current, reach = -1, -np.inf
    for _, kind, _, i in events:
        if kind == 1:
            active.add(i)
            if len(active) == 1:
                current, reach = i, e[i]
                members.append(i)
            continue
        active.discard(i)
        if i == current:
            beyond = [j for j in active if e[j] > reach]
            if beyond:
                current = max(beyond, key=lambda j: (e[j] - s[j], -j))
                reach = e[current]
                members.append(current)
    return members


# -- pure interval logic: a set of intervals per member (set cover) ---------------------------


class Cover(NamedTuple):
    members: list[int]  # ascending member index (the caller's time order)
    pure_io_time_s: float  # measure of the union of every interval
    shares: list[float]  # per member, in `members` order; they sum to pure_io_time_s
    proven_minimum: bool  # False: the budget or size cap left a greedy part in the cover


def _merge_runs(key: np.ndarray, s: np.ndarray, e: np.ndarray):
    """Per key, the union of its intervals: (key, start, end) of the disjoint pieces, sorted by
    key then start. `key` must already be sorted, and `s` ascending within each key."""
    if len(s) == 0:
        return key, s, e
    first = np.r_[True, key[1:] != key[:-1]]
    # running max of `end` within each key, in integers: (key number, rank of end) accumulate
    ranked = np.sort(e)
    code = (np.cumsum(first) - 1) * len(e) + np.searchsorted(ranked, e)
    reach = ranked[np.maximum.accumulate(code) % len(e)]
    prev = np.r_[-np.inf, reach[:-1]]
    new = first | (s > prev)
    at = np.flatnonzero(new)
    ends = np.maximum.reduceat(e, at)
    return key[at], s[at], ends


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def _greedy(masks: list[int], full: int) -> list[int]:
    """Most new elements first (ties: lower index), then drop members the others make redundant.
    Lazy: a member's gain only shrinks as the cover grows, so a stale gain is an upper bound."""
    rem, chosen = full, []
    heap = [(-(m & full).bit_count(), i) for i, m in enumerate(masks)]
    heapq.heapify(heap)
    while rem:
        _, i = heapq.heappop(heap)
        gain = (masks[i] & rem).bit_count()
        if heap and (-heap[0][0], -heap[0][1]) > (gain, -i):
            heapq.heappush(heap, (-gain, i))
            continue
        chosen.append(i)
        rem &= ~masks[i]

    def twice_covered(members):
        once = twice = 0
        for j in members:
            twice |= once & masks[j]
            once |= masks[j]
        return twice

    twice = twice_covered(chosen)
    for i in reversed(list(chosen)):  # reverse delete: later picks first
        if masks[i] & full & ~twice == 0:
            chosen.remove(i)
            twice = twice_covered(chosen)
    return sorted(chosen)


class _OverBudget(Exception):
    pass


def _exact(masks: list[int], full: int, upper: list[int], budget: list[int]) -> list[int]:
    """A minimum cover of `full` by `masks` (branch and bound from the cover `upper`);
    raises _OverBudget when more than budget[0] nodes are needed (budget[0] is spent)."""
    cov: dict[int, int] = {}
    for i, m in enumerate(masks):
        for b in _bits(m & full):
            cov[b] = cov.get(b, 0) | (1 << i)
    best = list(upper)

    def rec(rem: int, allowed: int, chosen: list[int]) -> None:
        nonlocal best
        if rem == 0:
            if len(chosen) < len(best):
                best = list(chosen)
            return
        budget[0] -= 1
        if budget[0] < 0:
            raise _OverBudget
        # one pass: the element with fewest allowed coverers, and a packing of elements whose
        # coverers are pairwise disjoint (each needs a member of its own: a lower bound)
        pick, fewest, used, bound = -1, 1 << 30, 0, 0
        for b in _bits(rem):
            c = cov[b] & allowed
            if c == 0:
                return
            n = c.bit_count()
            if n < fewest:
                pick, fewest = b, n
            if c & used == 0:
                used |= c
                bound += 1
        if len(chosen) + bound >= len(best):
            return
        options = sorted(
            _bits(cov[pick] & allowed), key=lambda i: (-(masks[i] & rem).bit_count(), i)
        )
        for i in options:
            rec(rem & ~masks[i], allowed, chosen + [i])
            allowed &= ~(1 << i)  # later branches do without i: the covers with i are explored

    rec(full, (1 << len(masks)) - 1, [])
    return sorted(best)


def _solve(masks: list[int], full: int, budget: int) -> tuple[list[int], bool]:
    """A cover of the bitset `full` by `masks` (indices ascending) and whether it is minimum."""
    chosen: set[int] = set()
    alive = [i for i, m in enumerate(masks) if m & full]
    rem = full
    while rem:
        # dominated members go (an equal one keeps its lower index): some minimum cover avoids them
        if len(alive) <= EXACT_CAP[0]:
            cut = {i: masks[i] & rem for i in alive}
            alive = [
                i
                for i in alive
                if cut[i]
                and not any(
                    j != i and cut[i] & ~cut[j] == 0 and (cut[i] != cut[j] or j < i) for j in alive
                )
            ]
        # a sole coverer of any element is in every cover
        once = twice = 0
        for i in alive:
            m = masks[i] & rem
            twice |= once & m
            once |= m
        sole = once & ~twice & rem
        forced = [i for i in alive if masks[i] & sole]
        if not forced:
            break
        for i in forced:
            chosen.add(i)
            rem &= ~masks[i]
        alive = [i for i in alive if i not in chosen and masks[i] & rem]
    proven = True
    left = [budget]
    while rem:  # independent groups: members linked by shared elements
        seen, span = {alive[0]}, masks[alive[0]] & rem
        grown = True
        while grown:
            grown = False
            for i in alive:
                if i not in seen and masks[i] & span:
                    seen.add(i)
                    span |= masks[i] & rem
                    grown = True
        group = sorted(seen)
        local = [masks[i] & span for i in group]
        pick = _greedy(local, span)
        if len(pick) > 1:  # one member is trivially minimum
            if len(group) <= EXACT_CAP[0] and span.bit_count() <= EXACT_CAP[1] and left[0] > 0:
                try:
                    pick = _exact(local, span, pick, left)
                except _OverBudget:
                    proven = False
            else:
                proven = False
        chosen.update(group[k] for k in pick)
        rem &= ~span
        alive = [i for i in alive if masks[i] & rem]
    return sorted(chosen), proven


def cover_arrays(
    member: np.ndarray, start: np.ndarray, end: np.ndarray, budget: int = BUDGET
) -> Cover:
    """The minimum covering set of members given as one row per interval: `member` (int codes,
    ascending in the caller's time order), `start` <= `end`. See the module docstring."""
    member = np.asarray(member, dtype=np.int64)
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    if len(member) == 0:
        return Cover([], 0.0, [], True)
    o = np.lexsort((end, start, member))
    m, s, e = _merge_runs(member[o], start[o], end[o])  # each member's own union, sorted by member
    by_start = np.argsort(s, kind="stable")
    _, us, ue = _merge_runs(np.zeros(len(s), dtype=np.int64), s[by_start], e[by_start])
    pure = float(np.sum(ue - us))
    # elementary segments between consecutive interval ends; a piece covers segments [a, b)
    cuts = np.unique(np.r_[s, e])
    a, b = np.searchsorted(cuts, s), np.searchsorted(cuts, e)
    pos = b > a
    if len(np.unique(m)) == len(m):  # one interval per member: interval cover, greedy is optimal
        picked, _ = minimum_cover(np.c_[s, e])
        members, proven = sorted(int(m[k]) for k in picked), True
    else:
        members, proven = _set_cover(m, a, b, pos, len(cuts) - 1, budget)
    return Cover(members, pure, _shares(members, m, s, e), proven)


def _set_cover(m, a, b, pos, nseg: int, budget: int) -> tuple[list[int], bool]:
    """Members (ascending) covering every segment some piece covers, and every isolated point."""
    count = np.zeros(nseg + 1, dtype=np.int64)
    ids = np.zeros(nseg + 1, dtype=np.int64)
    np.add.at(count, a[pos], 1)
    np.add.at(count, b[pos], -1)
    np.add.at(ids, a[pos], m[pos])
    np.add.at(ids, b[pos], -m[pos])
    count, ids = (
        np.cumsum(count)[:nseg],
        np.cumsum(ids)[:nseg],
    )  # coverers and the sum of their codes
    # isolated points: a zero-length piece no positive piece touches (a component of its own)
    touched = np.zeros(nseg + 1, dtype=bool)
    touched[:nseg] |= count > 0
    touched[1:] |= count > 0
    zero = ~pos & ~touched[a]
    points: dict[int, set[int]] = {}
    for k, who in zip(a[zero].tolist(), m[zero].tolist()):
        points.setdefault(k, set()).add(who)

    # a sole coverer of a segment or point is in every cover
    forced = set(ids[count == 1].tolist()) | {next(iter(w)) for w in points.values() if len(w) == 1}
    fz = np.isin(m, list(forced))
    fcount = np.zeros(nseg + 1, dtype=np.int64)
    np.add.at(fcount, a[pos & fz], 1)
    np.add.at(fcount, b[pos & fz], -1)
    open_seg = (count > 0) & (np.cumsum(fcount)[:nseg] == 0)
    open_pts = [k for k, w in points.items() if not (w & forced)]
    if not open_seg.any() and not open_pts:
        return sorted(int(c) for c in forced), True
    # what the forced members leave open, as bitsets over the open elements
    number = np.r_[0, np.cumsum(open_seg)]
    masks: dict[int, int] = {}
    rest = pos & ~fz
    x, y, who = number[a[rest]], number[b[rest]], m[rest]
    keep = y > x
    x, y, who = x[keep], y[keep], who[keep]
    starts = (
        np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
        if len(who)
        else np.array([], dtype=np.int64)
    )
    for lo_i, hi_i in zip(
        starts.tolist(), np.r_[starts[1:], len(who)].tolist()
    ):  # one member's pieces
        xs, ys = x[lo_i:hi_i], y[lo_i:hi_i]
        lo, hi = int(xs.min()), int(ys.max())
        d = np.zeros(hi - lo + 1, dtype=np.int32)
        np.add.at(d, xs - lo, 1)
        np.add.at(d, ys - lo, -1)
        bits = np.packbits(np.cumsum(d)[: hi - lo] > 0, bitorder="little")
        masks[int(who[lo_i])] = int.from_bytes(bits.tobytes(), "little") << lo
    base = int(number[-1])
    for j, k in enumerate(open_pts):
        for who in points[k]:
            masks[who] = masks.get(who, 0) | (1 << (base + j))
    cand = sorted(masks)
    picked, proven = _solve([masks[c] for c in cand], (1 << (base + len(open_pts))) - 1, budget)
    return sorted(int(c) for c in forced | {cand[k] for k in picked}), proven


def _shares(members: list[int], m, s, e) -> list[float]:
    """Each member's share: the part of its pieces no member before it (in code order) covers,
    over the cover's own elementary segments."""
    if not members:
        return []
    mine = np.isin(m, members)
    cm, cs, ce = m[mine], s[mine], e[mine]
    cuts = np.unique(np.r_[cs, ce])
    a, b = np.searchsorted(cuts, cs), np.searchsorted(cuts, ce)
    n = b - a
    seg = np.repeat(a - np.r_[0, np.cumsum(n)[:-1]], n) + np.arange(
        int(n.sum())
    )  # each piece's segments
    first = np.full(len(cuts) - 1, np.iinfo(np.int64).max)
    np.minimum.at(first, seg, np.repeat(cm, n))
    owned = first < np.iinfo(np.int64).max
    got = np.bincount(
        np.searchsorted(members, first[owned]), weights=np.diff(cuts)[owned], minlength=len(members)
    )
    return got.tolist()


def set_cover(items: Sequence[Sequence[tuple[float, float]]], budget: int = BUDGET) -> Cover:
    """The minimum covering set of members given as lists of (start, end) intervals; member
    indices are the positions in `items`, taken as the time order."""
    rows = [(k, a, b) for k, ivs in enumerate(items) for a, b in ivs]
    if not rows:
        return Cover([], 0.0, [], True)
    k, a, b = (np.array(c) for c in zip(*rows))
    return cover_arrays(k, a, b, budget)


# -- Spark: intervals per (log, record, rank), then one cover per log ---------------------------


def _counter_items(df, module: str):
    import pyspark.sql.functions as F

    p = COUNTER_MODULES[module]

    def stamps(edge: str):  # Darshan leaves a timestamp it never took at 0
        cols = [F.col(f"{p}_F_{x}_{edge}_TIMESTAMP") for x in ("READ", "WRITE")]
        return [F.when(c > 0, c) for c in cols]

    starts, ends = stamps("START"), stamps("END")
    return df.select(*ITEM_KEY, F.least(*starts).alias("start_s"), F.greatest(*ends).alias("end_s"))


def _valid():
    import pyspark.sql.functions as F

    return (
        F.col("start_s").isNotNull()
        & F.col("end_s").isNotNull()
        & (F.col("start_s") >= 0)
        & (F.col("end_s") >= F.col("start_s"))
        & ~F.isnan("start_s")
        & ~F.isnan("end_s")
    )


def _valid_ops(io_ops):
    """Traced reads and writes of a known record with a valid interval."""
    import pyspark.sql.functions as F

    return io_ops.where(F.col("op").isin("read", "write") & F.col("record_id").isNotNull()).where(
        _valid()
    )


def _counter_spans(posix, mpiio, stdio):
    """One valid (start_s, end_s) per (log, record, rank) from the modules' read/write timestamps."""
    import pyspark.sql.functions as F

    counted = reduce(
        lambda a, b: a.unionByName(b),
        [_counter_items(df, m) for m, df in (("posix", posix), ("mpiio", mpiio), ("stdio", stdio))],
    )
    return (
        counted.groupBy(*ITEM_KEY)
        .agg(F.min("start_s").alias("start_s"), F.max("end_s").alias("end_s"))
        .where(_valid())
    )


def _streams(files):
    """The `files` rows of the standard streams (terminal output is not storage I/O)."""
    import pyspark.sql.functions as F

    return files.where(F.col("name").isin(*NOT_DATA))


def _sources(io_ops, posix, mpiio, stdio, files=None):
    """(op intervals, counter items, the logs with ops and their source), streams removed."""
    import pyspark.sql.functions as F

    ops = _valid_ops(io_ops).select(*ITEM_KEY, "start_s", "end_s", "source")
    counters = _counter_spans(posix, mpiio, stdio)
    if files is not None:
        streams = _streams(files).select("log_id", "record_id").distinct()
        ops = ops.join(streams, ["log_id", "record_id"], "left_anti")
        counters = counters.join(streams, ["log_id", "record_id"], "left_anti")
    traced = ops.groupBy("log_id").agg(
        F.when(F.max((F.col("source") == "RECORDER").cast("int")) == 1, F.lit("recorder"))
        .otherwise(F.lit("dxt"))
        .alias("interval_source")
    )
    return ops, counters, traced


def _intervals(ops, counters, traced):
    import pyspark.sql.functions as F

    per_op = ops.join(traced, ["log_id"], "inner").drop("source")
    spans = counters.join(traced.select("log_id"), ["log_id"], "left_anti").withColumn(
        "interval_source", F.lit("counters")
    )
    return per_op.unionByName(spans).select(*ITEM_KEY, "start_s", "end_s", "interval_source")


def _untraced(ops, counters, traced):
    import pyspark.sql.functions as F

    with_ops = ops.select("log_id", "record_id").distinct()
    return (
        counters.join(traced.select("log_id"), ["log_id"], "inner")
        .join(with_ops, ["log_id", "record_id"], "left_anti")
        .groupBy("log_id")
        .agg(F.count(F.lit(1)).alias("n_untraced_items"))
    )


def intervals(io_ops, posix, mpiio, stdio, files=None):
    """One row per interval: log_id, job_month, record_id, rank, start_s, end_s, interval_source.

    A log with traced reads or writes gives one row per op (`dxt` or `recorder`); any other log
    one row per (record, rank) from its read/write timestamps (`counters`)."""
    return _intervals(*_sources(io_ops, posix, mpiio, stdio, files))


def untraced_items(io_ops, posix, mpiio, stdio, files=None):
    """Per log with traced ops: its (record, rank) counter items whose file has no traced op
    (left out of the cover; e.g. STDIO files, which DXT does not trace). log_id, n_untraced_items."""
    return _untraced(*_sources(io_ops, posix, mpiio, stdio, files))


MEMBER_COLS = [
    "rank",
    "record_id",
    "start_s",
    "end_s",
    "share_s",
    "n_intervals",
    "pure_io_time_s",
    "cover_size",
    "cover_proven_minimum",
]  # a cover row's columns besides the log's own (log_id, job_month, source)


def member_arrays(rec: np.ndarray, rk: np.ndarray, start: np.ndarray, end: np.ndarray) -> dict:
    """The covering-set members of one log from its intervals (one per row: record_id, rank,
    start_s, end_s as arrays): MEMBER_COLS -> arrays, one entry per member of the cover.

    Members are numbered in time order (first start, last end, rank, record_id) with numpy
    alone: pandas' groupby and sort cost more per call than the cover itself, and this runs
    once per log."""
    rec, rk = np.asarray(rec, np.int64), np.asarray(rk, np.int64)
    start, end = np.asarray(start, float), np.asarray(end, float)
    by_key = np.lexsort((rk, rec))
    rs, ks = rec[by_key], rk[by_key]
    first = np.r_[True, (rs[1:] != rs[:-1]) | (ks[1:] != ks[:-1])]
    item = np.empty(len(rec), dtype=np.int64)
    item[by_key] = np.cumsum(first) - 1  # each row's (record, rank) in key order
    n = int(first.sum())
    i_start, i_end = np.full(n, np.inf), np.full(n, -np.inf)
    np.fmin.at(i_start, item, start)
    np.fmax.at(i_end, item, end)
    i_rec, i_rank = rs[first], ks[first]
    order = np.lexsort((i_rec, i_rank, i_end, i_start))  # time order; (rank, record) is unique
    code = np.empty(n, dtype=np.int64)
    code[order] = np.arange(n)
    cover = cover_arrays(code[item], start, end)
    picked = order[np.asarray(cover.members, dtype=np.int64)]
    k = len(picked)
    return {
        "rank": i_rank[picked],
        "record_id": i_rec[picked],
        "start_s": i_start[picked],
        "end_s": i_end[picked],
        "share_s": np.asarray(cover.shares, dtype=float),
        "n_intervals": np.repeat(n, k).astype(np.int64),
        "pure_io_time_s": np.repeat(cover.pure_io_time_s, k),
        "cover_size": np.repeat(k, k).astype(np.int64),
        "cover_proven_minimum": np.repeat(cover.proven_minimum, k),
    }


def cover_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The covering-set rows of one log (a pandas frame of its `intervals` rows), without
    `n_untraced_items` and the bound columns: `member_arrays` beside the log's log_id, job_month and
    interval_source."""
    from schemas.covering_sets import SPEC

    cols = [c for c in SPEC.columns if c not in ("n_untraced_items", *BOUND_COLS)]
    if rows.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    out = pd.DataFrame(
        member_arrays(
            rows["record_id"].to_numpy(),
            rows["rank"].to_numpy(),
            rows["start_s"].to_numpy(),
            rows["end_s"].to_numpy(),
        )
    )
    for c in ("log_id", "job_month", "interval_source"):
        out[c] = np.repeat(rows[c].iloc[0], len(out))
    return out[cols]


# One pass: the Python workers get every row a log's cover needs, tagged by kind, and apply the
# rules of `intervals` and `untraced_items` per log themselves (`log_members`). Joining the per-log
# facts back in Spark (source, untraced count, log ids numbered by a global window) has Spark scan
# io_ops four times and posix/mpiio/stdio many more, which does not scale to large lakes.
OP_DXT, OP_RECORDER, COUNTER_SPAN, STREAM = 0, 1, 2, 3  # `kind` of a row sent to the workers
HEATMAP_BIN = 4  # a non-empty HEATMAP bin of one record: [i * width, (i + 1) * width]
IO_TIME = {"posix": 5, "mpiio": 6, "stdio": 7}  # a counter record's read+write seconds (`_io_time`)
ROW_COLS = ["log_id", "job_month", "kind", "record_id", "rank", "start_s", "end_s"]


def bin_union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of closed intervals (HEATMAP bins) as sorted disjoint components (starts, ends)."""
    o = np.lexsort((end, start))
    _, a, b = _merge_runs(np.zeros(len(o), dtype=np.int64), start[o], end[o])
    return a, b


def clip_to(
    rows: np.ndarray, start: np.ndarray, end: np.ndarray, comp_s: np.ndarray, comp_e: np.ndarray
):
    """Each interval [start, end] cut to the components [comp_s, comp_e] (sorted, disjoint): (the
    input row of each piece, piece start, piece end). A piece of positive length is kept; a
    zero-length interval is kept where it lies inside a component; one that touches a component
    only at its edge gives nothing."""
    j0 = np.searchsorted(comp_e, start, side="left")  # first component ending at or after start
    j1 = np.searchsorted(comp_s, end, side="right")  # components starting at or before end
    n = np.maximum(j1 - j0, 0)
    at = np.repeat(np.arange(len(start)), n)
    j = np.repeat(j0 - np.r_[0, np.cumsum(n)[:-1]], n) + np.arange(int(n.sum()))
    lo, hi = np.maximum(start[at], comp_s[j]), np.minimum(end[at], comp_e[j])
    ok = (hi > lo) | ((start[at] == end[at]) & (lo <= hi))
    return rows[at[ok]], lo[ok], hi[ok]


def slowest_process_s(kind: np.ndarray, rk: np.ndarray, secs: np.ndarray) -> float:
    """The slowest process's read and write time: max over ranks of max(POSIX, MPI-IO) + STDIO,
    each the sum of the rank's `IO_TIME` rows of that module (`_io_time`: non-finite values are 0,
    negative ones 0). MPI-IO calls wrap the POSIX calls beneath them, so the two are not added;
    STDIO calls are separate calls. One process's calls do not overlap, so the time is a lower
    bound on the time during which any process is in a read or write.

    darshan-util's accumulator (darshan-util/darshan-logutils-accumulator.c,
    `darshan_accumulator_inject`, with each module's `log_record_metrics`, e.g.
    darshan-posix-logutils.c) sums per rank `io_total_time` = READ_TIME + WRITE_TIME + META_TIME
    of the rank's own records, and `rw_only_time` = READ_TIME + WRITE_TIME; a shared record (rank -1)
    contributes F_SLOWEST_RANK_TIME to `shared_io_total_time_by_slowest`; `agg_time_by_slowest` is
    the slowest rank's unique-file time plus that sum. Here metadata time is left out (pure I/O time
    counts reads and writes only, and open, stat and close calls leave no HEATMAP bytes), and a shared
    record gives its slowest rank (SLOWEST_RANK) F_SLOWEST_RANK_TIME - META_TIME, a lower bound on
    that rank's read and write time in it (META_TIME sums every rank's metadata time), rather than
    adding every shared file's slowest time to one rank. Sums go in sorted order, so the figure does
    not depend on the order of the rows."""
    pick = np.isin(kind, list(IO_TIME.values()))
    if not pick.any():
        return 0.0
    k, r, v = kind[pick], rk[pick], secs[pick]
    v = np.where(np.isfinite(v), np.maximum(v, 0.0), 0.0)
    o = np.lexsort((v, r, k))
    k, r, v = k[o], r[o], v[o]
    first = np.r_[True, (k[1:] != k[:-1]) | (r[1:] != r[:-1])]
    at = np.flatnonzero(first)
    total = np.add.reduceat(v, at)
    gk, gr = k[at], r[at]
    ranks = np.unique(gr)
    per = {}
    for m, code in IO_TIME.items():
        x = np.zeros(len(ranks))
        sel = gk == code
        x[np.searchsorted(ranks, gr[sel])] = total[sel]
        per[m] = x
    return float(np.max(np.maximum(per["posix"], per["mpiio"]) + per["stdio"]))


def log_members(
    kind: np.ndarray, rec: np.ndarray, rk: np.ndarray, start: np.ndarray, end: np.ndarray
):
    """(interval_source, n_untraced_items, member arrays, (time_source, exact, pure_io_time_min_s))
    of one log from its rows, or None when it has no interval. Rows: traced read/write ops
    (`OP_DXT`, `OP_RECORDER`), counter spans per (record, rank) (`COUNTER_SPAN`), the records of
    standard streams (`STREAM`, times unused), non-empty HEATMAP bins (`HEATMAP_BIN`) and counter
    records' read+write seconds (`IO_TIME`, the seconds in start_s), all already valid. The rules
    are `intervals` and `untraced_items`: streams go; a log with ops takes its ops (exact) and counts
    the counter items of records without an op; any other log takes its counter spans, cut to the
    union of its non-empty HEATMAP bins when it has one (`heatmap`: an upper bound), else whole
    (`counters`: an upper bound). See the module docstring, "Bounds without DXT"."""
    keep = kind != STREAM
    if not keep.all():
        keep &= ~np.isin(rec, rec[~keep])
    traced = keep & (kind <= OP_RECORDER)
    if traced.any():
        source = "recorder" if (kind[traced] == OP_RECORDER).any() else "dxt"
        untraced = int(np.count_nonzero(keep & (kind == COUNTER_SPAN) & ~np.isin(rec, rec[traced])))
        m = member_arrays(rec[traced], rk[traced], start[traced], end[traced])
        return source, untraced, m, (source, True, float(m["pure_io_time_s"][0]))
    sel = keep & (kind == COUNTER_SPAN)
    if not sel.any():
        return None
    r, k, s, e = rec[sel], rk[sel], start[sel], end[sel]
    bins = keep & (kind == HEATMAP_BIN)
    time_source = "counters"
    if bins.any():
        cs, ce = bin_union(start[bins], end[bins])
        at, s, e = clip_to(np.arange(len(r)), s, e, cs, ce)
        r, k = r[at], k[at]
        time_source = "heatmap"
        if not len(r):
            return None
    m = member_arrays(r, k, s, e)
    lower = slowest_process_s(kind[keep], rk[keep], start[keep])
    return "counters", 0, m, (time_source, False, min(lower, float(m["pure_io_time_s"][0])))


def cover_batches(batches):
    """`mapInArrow` body: Arrow batches of ROW_COLS rows, each log's rows together in one partition
    and consecutive -> batches of covering-set rows (log_id, job_month, interval_source,
    MEMBER_COLS, n_untraced_items).

    Many logs per call, sliced with numpy: `applyInPandas` builds a pandas frame per log, and that
    per-log overhead, not the cover, would be most of the stage's time. A log cut by batch
    boundaries is kept in pieces, joined once."""
    import pyarrow.compute as pc

    nums = ROW_COLS[2:]
    key, pieces = None, []  # the log whose rows are pending (it may go on in the next batch)
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        lid, month = batch.column(0), batch.column(1)
        new = np.zeros(n, dtype=bool)
        if n > 1:
            new[1:] = pc.or_(
                pc.not_equal(lid.slice(1), lid.slice(0, n - 1)),
                pc.not_equal(month.slice(1), month.slice(0, n - 1)),
            ).to_numpy(zero_copy_only=False)
        new[0] = (lid[0].as_py(), month[0].as_py()) != key
        starts = np.flatnonzero(new)
        cols = [
            batch.column(batch.schema.get_field_index(c)).to_numpy(zero_copy_only=False)
            for c in nums
        ]
        keys = list(zip(pc.take(lid, starts).to_pylist(), pc.take(month, starts).to_pylist()))
        done, bounds = [], np.r_[0, starts, n]
        for k in range(
            len(bounds) - 1
        ):  # piece k-1 of this batch's logs; piece -1 continues the pending one
            a, b = bounds[k], bounds[k + 1]
            if k > 0:  # a log starts at a: the pending one is complete
                if pieces:
                    done.append((key, [np.concatenate(c) for c in zip(*pieces)]))
                key, pieces = keys[k - 1], []
            if b > a:
                pieces.append([c[a:b] for c in cols])
        if done:
            yield _covers_of(done)
    if pieces:
        yield _covers_of([(key, [np.concatenate(c) for c in zip(*pieces)])])


BOUND_COLS = ["time_source", "exact", "pure_io_time_min_s"]  # the log's, on each of its rows
OUT_COLS = ["log_id", "job_month", "interval_source", *MEMBER_COLS, "n_untraced_items", *BOUND_COLS]


def _cover_parts(logs) -> tuple[list[dict], list[tuple]]:
    """The member arrays and (log_id, job_month, source, untraced, members) of each log of `logs`
    ((log_id, job_month), numeric columns) that has an interval."""
    parts, meta = [], []
    for (log_id, month), cols in logs:
        got = log_members(*cols)
        if got is not None:
            source, untraced, m, bound = got
            parts.append(m)
            meta.append((log_id, month, source, untraced, *bound, len(m["rank"])))
    return parts, meta


def _covers_of(logs) -> pa.RecordBatch:
    """Covering-set rows (OUT_COLS) of complete logs given as ((log_id, job_month), numeric columns)."""
    import pyarrow as pa

    parts, meta = _cover_parts(logs)
    if not parts:
        return pa.RecordBatch.from_pydict({c: pa.array([], type=_arrow_type(c)) for c in OUT_COLS})
    out = _cover_columns(parts, meta)
    return pa.RecordBatch.from_pydict({c: pa.array(out[c], type=_arrow_type(c)) for c in OUT_COLS})


def _cover_columns(parts: list[dict], meta: list[tuple]) -> dict:
    """`_cover_parts`' answer as one numpy array per OUT_COLS column, a row per member."""
    count = [x[-1] for x in meta]
    out = {
        c: np.repeat(np.array([x[i] for x in meta], dtype=object), count)
        for i, c in enumerate(("log_id", "job_month", "interval_source"))
    }
    out.update({c: np.concatenate([p[c] for p in parts]) for c in MEMBER_COLS})
    out["n_untraced_items"] = np.repeat(np.array([x[3] for x in meta], dtype=np.int64), count)
    out["time_source"] = np.repeat(np.array([x[4] for x in meta], dtype=object), count)
    out["exact"] = np.repeat(np.array([x[5] for x in meta], dtype=bool), count)
    out["pure_io_time_min_s"] = np.repeat(np.array([x[6] for x in meta], dtype=np.float64), count)
    return out


def _arrow_type(col: str):
    """The Arrow type of a silver/covering_sets column, from its schema."""
    from pyspark.sql.pandas.types import to_arrow_type

    from schemas.covering_sets import SPEC

    return to_arrow_type(SPEC.struct[col].dataType)


def _heatmap_bins(heatmap):
    """HEATMAP_BIN rows: one per non-empty bin (read + write bytes > 0) of each bronze/heatmap row,
    [i * bin_width_s, (i + 1) * bin_width_s]; a missing byte count is 0."""
    import pyspark.sql.functions as F

    both = F.zip_with(
        "read_bytes", "write_bytes", lambda r, w: F.coalesce(r, F.lit(0)) + F.coalesce(w, F.lit(0))
    )
    return (
        heatmap.select(
            "log_id",
            "job_month",
            "record_id",
            "rank",
            "bin_width_s",
            F.posexplode(both).alias("i", "b"),
        )
        .where(F.col("b") > 0)
        .select(
            "log_id",
            "job_month",
            F.lit(HEATMAP_BIN).cast("byte").alias("kind"),
            "record_id",
            "rank",
            (F.col("i").cast("double") * F.col("bin_width_s")).alias("start_s"),
            ((F.col("i") + 1).cast("double") * F.col("bin_width_s")).alias("end_s"),
        )
    )


def _io_time(df, module: str):
    """IO_TIME rows of one module's counter records (`slowest_process_s`): a rank's own record gives
    READ_TIME + WRITE_TIME to its rank; a shared record (rank -1) gives F_SLOWEST_RANK_TIME -
    META_TIME to its SLOWEST_RANK (-1 when absent). The seconds go in start_s and end_s."""
    import pyspark.sql.functions as F

    p = COUNTER_MODULES[module]
    own = F.col("rank") >= 0
    secs = F.when(own, F.col(f"{p}_F_READ_TIME") + F.col(f"{p}_F_WRITE_TIME")).otherwise(
        F.col(f"{p}_F_SLOWEST_RANK_TIME") - F.col(f"{p}_F_META_TIME")
    )
    return df.select(
        "log_id",
        "job_month",
        F.lit(IO_TIME[module]).cast("byte").alias("kind"),
        "record_id",
        F.when(own, F.col("rank"))
        .otherwise(F.coalesce(F.col(f"{p}_SLOWEST_RANK"), F.lit(-1)))
        .cast("long")
        .alias("rank"),
        secs.alias("start_s"),
        secs.alias("end_s"),
    )


def _rows(io_ops, posix, mpiio, stdio, files=None, heatmap=None):
    """ROW_COLS rows: valid read/write ops, counter spans per (record, rank), stream records,
    non-empty HEATMAP bins and the counter records' read and write seconds."""
    import pyspark.sql.functions as F

    ops = _valid_ops(io_ops).select(
        "log_id",
        "job_month",
        F.when(F.col("source") == "RECORDER", OP_RECORDER)
        .otherwise(OP_DXT)
        .cast("byte")
        .alias("kind"),
        "record_id",
        "rank",
        "start_s",
        "end_s",
    )
    spans = _counter_spans(posix, mpiio, stdio).select(
        "log_id",
        "job_month",
        F.lit(COUNTER_SPAN).cast("byte").alias("kind"),
        "record_id",
        "rank",
        "start_s",
        "end_s",
    )
    rows = ops.unionByName(spans)
    if files is not None:
        streams = _streams(files).select(
            "log_id",
            "job_month",
            F.lit(STREAM).cast("byte").alias("kind"),
            "record_id",
            F.lit(0).cast("long").alias("rank"),
            F.lit(0.0).alias("start_s"),
            F.lit(0.0).alias("end_s"),
        )
        rows = rows.unionByName(streams)
    for m, df in (("posix", posix), ("mpiio", mpiio), ("stdio", stdio)):
        rows = rows.unionByName(_io_time(df, m))
    if heatmap is not None:
        rows = rows.unionByName(_heatmap_bins(heatmap))
    return rows


def covering_sets(io_ops, posix, mpiio, stdio, files=None, heatmap=None):
    """silver/covering_sets rows (one per member of each log's minimum covering set).

    One scan of each input and one shuffle: every row a log needs goes to one partition, sorted
    by (hash, log_id, job_month) so each log's rows are consecutive (the hash sorts as a number, and
    the ids make the order total even when two logs' hashes collide), and `cover_batches` does the rest."""
    import pyspark.sql.functions as F
    from pyspark.sql import types as T

    from schemas.covering_sets import SPEC

    rows = _rows(io_ops, posix, mpiio, stdio, files, heatmap).withColumn(
        "_h", F.xxhash64("log_id", "job_month")
    )
    fields = {f.name: f for f in SPEC.struct.fields}
    struct = T.StructType([fields[c] for c in OUT_COLS])
    covers = (
        rows.repartition("_h")
        .sortWithinPartitions("_h", "log_id", "job_month")
        .select(*ROW_COLS)
        .mapInArrow(cover_batches, struct)
    )
    return covers.select(*[F.col(f.name).cast(f.dataType) for f in SPEC.struct.fields])


# -- the same cover from one decoded log: ingest computes it where the log is decoded ------------
# The covering stage's Spark pass (scan io_ops, shuffle and sort every segment by log, then
# `cover_batches`) is a large share of what a log may cost the whole pipeline. The decode task
# already holds each log's tables, so ingest builds the log's rows here and stores its cover in
# bronze/covers; the covering stage copies those rows and runs the Spark pass only for logs
# ingest did not cover (a streamed huge DXT log, a lake ingested before bronze/covers,
# `ingest.covers: false`).


def _floats(col) -> np.ndarray:
    """A float Arrow column as float64 numpy, null as NaN (Arrow's own conversion)."""
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)


def _mask(a) -> np.ndarray:
    """A boolean Arrow array as numpy, null as False."""
    import pyarrow.compute as pc

    return pc.fill_null(a, False).to_numpy(zero_copy_only=False)


def _op_rows(ops, log: np.ndarray):
    """`_valid_ops` and the `kind` of `_rows`, on io_ops rows (`log`: whose each row is)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    s, e = _floats(ops.column("start_s")), _floats(ops.column("end_s"))
    rec = ops.column("record_id")
    keep = _mask(pc.is_in(ops.column("op"), value_set=pa.array(["read", "write"]))) & _mask(
        pc.is_valid(rec)
    )
    with np.errstate(invalid="ignore"):
        keep &= ~np.isnan(s) & ~np.isnan(e) & (s >= 0) & (e >= s)
    kind = np.where(_mask(pc.equal(ops.column("source"), "RECORDER")), OP_RECORDER, OP_DXT).astype(
        np.int8
    )
    rec = pc.fill_null(rec, 0).to_numpy(zero_copy_only=False)
    return (
        log[keep],
        kind[keep],
        rec[keep],
        ops.column("rank").to_numpy(zero_copy_only=False)[keep],
        s[keep],
        e[keep],
    )


def _span_rows(tables, log_of):
    """`_counter_spans` on posix, mpiio and stdio rows (`log_of(table)`: whose each row is), per (log,
    record, rank), with Spark's float order (NaN above every number): a timestamp `> 0` is kept (NaN
    too), `least` and `min` pass over NaN, `greatest` and `max` return it; then the spans `_valid`
    keeps. Null starts are NaN here (they lose every `least` too) and null ends -inf (they lose every
    `greatest`)."""
    keys, starts, ends = [], [], []
    for module, p in COUNTER_MODULES.items():
        t = tables.get(module)
        if t is None or not t.num_rows:
            continue
        with np.errstate(invalid="ignore"):
            s = [_floats(t.column(f"{p}_F_{x}_START_TIMESTAMP")) for x in ("READ", "WRITE")]
            s = [np.where((v > 0) | np.isnan(v), v, np.nan) for v in s]
            e = []
            for x in ("READ", "WRITE"):
                col = t.column(f"{p}_F_{x}_END_TIMESTAMP")
                v = _floats(col)
                lost = ~((v > 0) | np.isnan(v))
                if col.null_count:
                    lost |= _mask(col.is_null())
                e.append(np.where(lost, -np.inf, v))
        keys.append(
            np.stack(
                [
                    log_of(module),
                    t.column("record_id").to_numpy(zero_copy_only=False),
                    t.column("rank").to_numpy(zero_copy_only=False),
                ],
                axis=1,
            )
        )
        starts.append(np.fmin(*s))
        ends.append(np.maximum(*e))
    if not keys:
        return None
    item, at = np.unique(np.concatenate(keys), axis=0, return_inverse=True)
    at = at.reshape(-1)
    s, e = np.full(len(item), np.nan), np.full(len(item), -np.inf)
    with np.errstate(invalid="ignore"):
        np.fmin.at(s, at, np.concatenate(starts))
        np.maximum.at(e, at, np.concatenate(ends))
        ok = ~np.isnan(s) & ~np.isnan(e) & (s >= 0) & (e >= s)
    n = int(ok.sum())
    return (
        item[ok, 0],
        np.full(n, COUNTER_SPAN, dtype=np.int8),
        item[ok, 1],
        item[ok, 2],
        s[ok],
        e[ok],
    )


def _stream_rows(files, log: np.ndarray):
    """The STREAM rows of `_rows`: the records of the standard streams in files rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    is_stream = _mask(pc.is_in(files.column("name"), value_set=pa.array(list(NOT_DATA))))
    rec = files.column("record_id").to_numpy(zero_copy_only=False)[is_stream]
    n = len(rec)
    return (
        log[is_stream],
        np.full(n, STREAM, dtype=np.int8),
        rec,
        np.zeros(n, np.int64),
        np.zeros(n),
        np.zeros(n),
    )


def _io_time_rows(tables, log_of):
    """`_io_time` on posix, mpiio and stdio rows, as Spark computes it (null -> NaN)."""
    import pyarrow.compute as pc

    parts = []
    for module, p in COUNTER_MODULES.items():
        t = tables.get(module)
        if t is None or not t.num_rows:
            continue
        rank = t.column("rank").to_numpy(zero_copy_only=False)
        own = rank >= 0
        secs = np.where(
            own,
            _floats(t.column(f"{p}_F_READ_TIME")) + _floats(t.column(f"{p}_F_WRITE_TIME")),
            _floats(t.column(f"{p}_F_SLOWEST_RANK_TIME")) - _floats(t.column(f"{p}_F_META_TIME")),
        )
        slowest = pc.fill_null(t.column(f"{p}_SLOWEST_RANK"), -1).to_numpy(zero_copy_only=False)
        parts.append(
            (
                log_of(module),
                np.full(t.num_rows, IO_TIME[module], dtype=np.int8),
                t.column("record_id").to_numpy(zero_copy_only=False),
                np.where(own, rank, slowest).astype(np.int64),
                secs,
                secs,
            )
        )
    return parts


def _heatmap_rows(heat, log: np.ndarray):
    """`_heatmap_bins` on bronze/heatmap rows: one row per non-empty bin, [i * w, (i + 1) * w]."""
    import pyarrow.compute as pc

    def values(col):
        c = heat.column(col).combine_chunks()
        return (
            pc.fill_null(c.flatten(), 0).to_numpy(zero_copy_only=False).astype(np.int64),
            np.asarray(pc.fill_null(pc.list_value_length(c), 0).to_numpy(zero_copy_only=False)),
        )

    rv, rn = values("read_bytes")
    wv, wn = values("write_bytes")
    n = np.maximum(rn, wn)  # zip_with pads the shorter array with null (0 here)
    row = np.repeat(np.arange(heat.num_rows), n)
    i = np.arange(int(n.sum())) - np.repeat(np.r_[0, np.cumsum(n)[:-1]], n)
    b = np.zeros(len(row), dtype=np.int64)
    for v, ln in ((rv, rn), (wv, wn)):
        src = np.repeat(np.r_[0, np.cumsum(ln)[:-1]], n) + i
        ok = i < np.repeat(ln, n)
        b[ok] += v[src[ok]]
    nz = b > 0
    row, i = row[nz], i[nz].astype(np.float64)
    w = _floats(heat.column("bin_width_s"))[row]
    return (
        log[row],
        np.full(len(row), HEATMAP_BIN, dtype=np.int8),
        heat.column("record_id").to_numpy(zero_copy_only=False)[row],
        heat.column("rank").to_numpy(zero_copy_only=False)[row],
        i * w,
        (i + 1) * w,
    )


INPUTS = ("io_ops", "posix", "mpiio", "stdio", "files", "heatmap")


def stacked_rows(tables: dict, logs: dict | None = None) -> list[np.ndarray] | None:
    """The rows `_rows` builds in Spark, from decoded Arrow tables (`io_ops`, `posix`, `mpiio`, `stdio`,
    `files`, `heatmap`; any may be absent) of one log or, with `logs` ({table: whose each row is}), of many
    stacked: [log, kind, record_id, rank, start_s, end_s] arrays, or None when there are none. Order
    does not matter: `log_members` orders a log's rows itself."""

    def log_of(name):
        return (
            np.zeros(tables[name].num_rows, np.int64)
            if logs is None
            else np.asarray(logs[name], np.int64)
        )

    def has(name):
        return tables.get(name) is not None and tables[name].num_rows > 0

    parts = []
    if has("io_ops"):
        parts.append(_op_rows(tables["io_ops"], log_of("io_ops")))
    spans = _span_rows(tables, log_of)
    if spans is not None:
        parts.append(spans)
    if has("files"):
        parts.append(_stream_rows(tables["files"], log_of("files")))
    parts.extend(_io_time_rows(tables, log_of))
    if has("heatmap"):
        parts.append(_heatmap_rows(tables["heatmap"], log_of("heatmap")))
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return None
    return [np.concatenate([p[i] for p in parts]) for i in range(6)]


def log_rows(tables) -> list[np.ndarray] | None:
    """One decoded log's rows as `_rows` builds them in Spark: [kind, record_id, rank, start_s, end_s]
    arrays from its Arrow tables, or None when it has none (`stacked_rows` of one log)."""
    rows = stacked_rows(tables)
    return None if rows is None else rows[1:]


def covers_of(tables: dict, logs: dict | None = None):
    """The covering-set rows (bronze/covers' decoded columns: silver/covering_sets' without log_id and
    job_month) of one decoded log or, with `logs` (`stacked_rows`), of many stacked, computed as the
    covering stage computes them: (the rows, the log of each row). The logs' rows are built in one
    pass over the stack and each log's cover solved on its own (`log_members`); a log without an
    interval has no row. Ingest covers a staged file's logs in one call: building each log's rows
    and table one by one would be mostly per-call overhead."""
    import pyarrow as pa

    from schemas import BRONZE

    schema = BRONZE["covers"].decoded_arrow_schema
    rows = stacked_rows(tables, logs)
    if rows is None:
        return schema.empty_table(), np.zeros(0, np.int64)
    order = np.argsort(rows[0], kind="stable")
    rows = [c[order] for c in rows]
    cut = np.flatnonzero(np.r_[True, rows[0][1:] != rows[0][:-1]])
    bounds = np.r_[cut, len(order)]
    parts, meta = _cover_parts(
        [
            ((int(rows[0][a]), None), [c[a:b] for c in rows[1:]])
            for a, b in zip(bounds[:-1], bounds[1:])
        ]
    )
    if not parts:
        return schema.empty_table(), np.zeros(0, np.int64)
    out = _cover_columns(parts, meta)  # its log_id: the log's number here
    table = pa.table(
        {c: pa.array(out[c], f.type) for c, f in zip(schema.names, schema)}, schema=schema
    )
    return table, out["log_id"].astype(np.int64)


def log_covers(tables) -> pa.Table:
    """The covering-set rows of one decoded log (bronze/covers' decoded columns: silver/covering_sets'
    without log_id and job_month), computed as the covering stage computes them; no row when the log
    has no interval."""
    return covers_of(tables)[0]
