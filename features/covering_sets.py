"""Minimum sweep-line I/O covering set per job (Wang et al., IOMiner, CCGrid'19): pure logic.

Items. One job's items are its (rank, file) I/O intervals, one per (log, record_id, rank):
- `dxt` / `recorder`: when the log has traced operations for the file (bronze/io_ops, any
  source), the item of (file, rank) is [min start_s, max end_s] over its read and write ops.
  One interval per (rank, file) rather than per op: the covering set names ranks and files,
  and a rank's gaps between ops on one file are not I/O of another item either. DXT_POSIX and
  DXT_MPIIO rows of one file share its record id and fold into one item. A file with ops takes
  all its items from ops, so a shared file's rank -1 counter record does not add a second,
  coarser item on top of the per-rank DXT ones.
- `counters`: every other file takes its items from Darshan's file-level timestamps in
  bronze/posix, mpiio and stdio: start = min of the READ/WRITE_START timestamps > 0, end = max
  of the READ/WRITE_END timestamps, folded over the modules of the same (record, rank) — MPI-IO
  wraps the POSIX calls beneath it, STDIO files have no POSIX record. A record Darshan reduced
  over ranks (rank -1) is one item with rank -1. A record that never read or wrote has no item.
- Invalid intervals (null, negative start, end < start) are dropped; so are the standard
  streams (<STDIN>, <STDOUT>, <STDERR>) when the `files` table is given: terminal output is
  not storage I/O (IOMiner drops them too).

Cover. Items are closed intervals; the union is the set union, so touching intervals join
and a zero-length item outside every other item is a (zero-time) component of its own. The
minimum covering set is the fewest items whose union equals the union of all items. Within
each connected component of the union the classic interval-cover greedy is optimal: start
with the item that starts first (reaching furthest among ties); then, among items starting at
or before the covered end, take the one reaching furthest; stop when none reaches beyond.
Ties go to the earlier start, then to the item's position in (start, end, rank, record_id)
order, so a job's cover is deterministic. O(n log n).

IOMiner's `GenSweepLine` (hpc-io/IOMiner, iominer/iominer_sweepline_analysis.py) instead
replaces the current item, when it ends, by the *longest* active item that reaches beyond it:
A=[0,10], B=[0.5,11.5], C=[9,19] gives A, B, C where A, C suffice. `iominer_greedy` re-states
that rule (selection only, not IOMiner's per-rank re-timing of overlapping files) to measure
the difference.

Shares. `share_s` of a member is the pure I/O time it adds when the cover is swept in time
order: end - max(start, previous member's end). Members of the greedy cover overlap only
their neighbours, so shares are non-negative and sum to the job's pure I/O time (the measure
of the union), which makes them a partition of it by member.
"""
from __future__ import annotations

from functools import reduce
from typing import Sequence

import numpy as np
import pandas as pd

ITEM_KEY = ["log_id", "job_month", "record_id", "rank"]
NOT_DATA = ("<STDIN>", "<STDOUT>", "<STDERR>")
COUNTER_MODULES = {"posix": "POSIX", "mpiio": "MPIIO", "stdio": "STDIO"}


# -- pure interval logic ---------------------------------------------------------------------


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
    """(member indices in time order, pure I/O time) of a minimum covering set.

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


# -- Spark: items per (log, record, rank), then one cover per log ------------------------------


def _counter_items(df, module: str):
    import pyspark.sql.functions as F

    p = COUNTER_MODULES[module]

    def stamps(edge: str):  # Darshan leaves a timestamp it never took at 0
        cols = [F.col(f"{p}_F_{x}_{edge}_TIMESTAMP") for x in ("READ", "WRITE")]
        return [F.when(c > 0, c) for c in cols]

    starts, ends = stamps("START"), stamps("END")
    return df.select(*ITEM_KEY, F.least(*starts).alias("start_s"), F.greatest(*ends).alias("end_s"))


def intervals(io_ops, posix, mpiio, stdio, files=None):
    """One row per item: log_id, job_month, record_id, rank, start_s, end_s, interval_source."""
    import pyspark.sql.functions as F

    valid = (
        F.col("start_s").isNotNull() & F.col("end_s").isNotNull()
        & (F.col("start_s") >= 0) & (F.col("end_s") >= F.col("start_s"))
        & ~F.isnan("start_s") & ~F.isnan("end_s")
    )
    ops = (
        io_ops.where(F.col("op").isin("read", "write") & F.col("record_id").isNotNull())
        .where(valid)
        .groupBy(*ITEM_KEY)
        .agg(
            F.min("start_s").alias("start_s"),
            F.max("end_s").alias("end_s"),
            F.when(F.max((F.col("source") == "RECORDER").cast("int")) == 1, F.lit("recorder"))
            .otherwise(F.lit("dxt")).alias("interval_source"),
        )
    )
    counted = reduce(
        lambda a, b: a.unionByName(b),
        [_counter_items(df, m) for m, df in (("posix", posix), ("mpiio", mpiio), ("stdio", stdio))],
    )
    counters = (
        counted.groupBy(*ITEM_KEY)
        .agg(F.min("start_s").alias("start_s"), F.max("end_s").alias("end_s"))
        .where(valid)
        .join(ops.select("log_id", "record_id").distinct(), ["log_id", "record_id"], "left_anti")
        .withColumn("interval_source", F.lit("counters"))
    )
    items = ops.unionByName(counters)
    if files is not None:
        streams = files.where(F.col("name").isin(*NOT_DATA)).select("log_id", "record_id").distinct()
        items = items.join(streams, ["log_id", "record_id"], "left_anti")
    return items.select(*ITEM_KEY, "start_s", "end_s", "interval_source")


def cover_frame(items: pd.DataFrame) -> pd.DataFrame:
    """The covering-set rows of one log's items (a pandas frame of `intervals` rows)."""
    from schemas.covering_sets import SPEC

    if items.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in SPEC.columns})
    items = items.sort_values(["start_s", "end_s", "rank", "record_id", "interval_source"]).reset_index(drop=True)
    iv = items[["start_s", "end_s"]].to_numpy(dtype=float)
    members, pure = minimum_cover(iv)
    out = items.iloc[members].reset_index(drop=True)
    out["share_s"] = member_shares(iv, members)
    out["n_intervals"] = len(items)
    out["pure_io_time_s"] = pure
    out["cover_size"] = len(members)
    return out[SPEC.columns]


def covering_sets(io_ops, posix, mpiio, stdio, files=None):
    """silver/covering_sets rows (one per member of each log's minimum covering set)."""
    import pyspark.sql.functions as F

    from schemas.covering_sets import SPEC

    items = intervals(io_ops, posix, mpiio, stdio, files)
    covers = items.groupBy("job_month", "log_id").applyInPandas(cover_frame, SPEC.struct)
    return covers.select(*[F.col(f.name).cast(f.dataType) for f in SPEC.struct.fields])
