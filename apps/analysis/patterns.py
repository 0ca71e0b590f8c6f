"""Access and read/write patterns of data operations: pure pandas, one file at a time.

Inputs are op frames with at least `rank, op, offset, length, start_s, seq` (op `read`|`write`).
Three access-pattern definitions, each counting consecutive / sequential / random / total:

- `prismio_access_counts` (PrismIO §IV-C, `access_pattern`, as its reference code
  `IOFrame.accessPattern` computes it): the file's reads and writes together, in trace order —
  rank by rank, as PrismIO's reader lays out a trace, each rank's ops in the order it issued
  them (start time, then `seq`) — each op compared with the op before it in that order, of
  whatever rank or direction: previous offset + size == offset is consecutive, < offset is
  sequential, > offset random. The file's first op follows nothing and counts in none:
  total = consecutive + sequential + random = ops - 1.
- `darshan_access_counts` (Darshan's POSIX counters, per rank and direction, summed over the
  file's records): consecutive = CONSEC_READS + CONSEC_WRITES; sequential = SEQ - CONSEC
  (Darshan's SEQ counts an op starting after the previous one's last byte, so it includes the
  consecutive ones); random = READS + WRITES - SEQ; total = READS + WRITES (Darshan classifies
  every op: a rank's first read or write compares with byte 0, so one at offset 0 is random).
- `access_counts` (iolake's rule, `definition="per_rank"`; features/file_features.py's): per
  rank and direction, ops in time order; consecutive when an op starts where the previous
  ended, sequential when it starts after the previous start, random otherwise; the first op of
  a rank and direction counts in none.

- `readwrite_bytes`: the file's ops across all ranks in time order, each byte classified by the
  last earlier op that touched it: read after read (RAR), read after write (RAW), WAR, WAW;
  a byte nobody touched before counts as `first read` / `first write`, so RAR + RAW +
  first read = read and WAR + WAW + first write = write, where `read` / `write` are the bytes
  of all the file's reads / writes (PrismIO §IV-C's `readwrite_pattern` columns, which its
  reference code sums over every op). `ByteOwners` keeps the file's
  bytes as disjoint intervals tagged with their last toucher; an op looks up the intervals it
  overlaps by bisection and replaces them, so each op adds at most 3 intervals and an interval
  is removed at most once: O(n log n) comparisons per file of n ops (the list splices are
  memmoves of the interval arrays, negligible below millions of ops per file).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np
import pandas as pd

ACCESS_COLUMNS = ["consecutive", "sequential", "random", "total"]
ACCESS_DEFINITIONS = ("prismio", "darshan", "per_rank")
RW_COLUMNS = ["RAR", "RAW", "WAR", "WAW", "read", "write", "first read", "first write"]
_AFTER = {
    ("read", "read"): "RAR",
    ("read", "write"): "RAW",
    ("write", "read"): "WAR",
    ("write", "write"): "WAW",
}


def prismio_access_counts(ops: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """PrismIO's consecutive / sequential / random / total per `keys` group (e.g. file_name)."""
    o = ops.sort_values([*keys, "rank", "start_s", "seq"], kind="stable")
    by = [o[k] for k in keys]
    end = (o["offset"] + o["length"]).astype("float64")
    prev_end = end.groupby(by, sort=False, dropna=False).shift()
    offset = o["offset"].astype("float64")
    has_prev = prev_end.notna()
    flags = pd.DataFrame(
        {
            "consecutive": has_prev & (prev_end == offset),
            "sequential": has_prev & (prev_end < offset),
            "random": has_prev & (prev_end > offset),
            "total": has_prev,
        }
    ).astype("int64")
    return flags.groupby(by, sort=True).sum()[ACCESS_COLUMNS]


def darshan_access_counts(counters: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Darshan's SEQ / CONSEC counters as consecutive / sequential / random / total per `keys`
    group; `counters` are POSIX read and write rows with `count`, `seq_count`, `consec_count`."""
    c = counters.astype({"count": "int64", "seq_count": "int64", "consec_count": "int64"})
    g = c.groupby(keys, sort=True)[["count", "seq_count", "consec_count"]].sum()
    out = pd.DataFrame(
        {
            "consecutive": g["consec_count"],
            "sequential": g["seq_count"] - g["consec_count"],
            "random": g["count"] - g["seq_count"],
            "total": g["count"],
        }
    )
    return out[ACCESS_COLUMNS].astype("int64")


def access_counts(ops: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """iolake's per-rank, per-direction consecutive / sequential / random / total per `keys` group."""
    o = ops.sort_values([*keys, "rank", "op", "start_s", "seq"], kind="stable")
    g = o.groupby([*keys, "rank", "op"], sort=False, dropna=False)
    offset = o["offset"].astype("float64")
    prev_off = g["offset"].shift().astype("float64")
    prev_end = (
        (o["offset"] + o["length"])
        .groupby([o[k] for k in [*keys, "rank", "op"]], sort=False, dropna=False)
        .shift()
        .astype("float64")
    )
    has_prev = prev_off.notna()
    consec = has_prev & (offset == prev_end)
    seq = has_prev & ~consec & (offset > prev_off)
    flags = pd.DataFrame(
        {
            "consecutive": consec,
            "sequential": seq,
            "random": has_prev & ~consec & ~seq,
            "total": has_prev,
        }
    ).astype("int64")
    out = flags.groupby([o[k] for k in keys], sort=True).sum()
    return out[ACCESS_COLUMNS]


class ByteOwners:
    """Disjoint byte intervals [start, end) of one file, each tagged with the op kind that touched it last."""

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.kinds: list[str] = []

    def touch(self, start: int, end: int, kind: str) -> dict[str, int]:
        """Bytes of [start, end) last touched by each kind (`None`: never), then claim them for `kind`."""
        seen = {None: end - start}
        i = bisect_right(self.starts, start) - 1
        if i < 0 or self.ends[i] <= start:
            i += 1
        j = bisect_left(self.starts, end)
        for k in range(i, j):
            overlap = min(self.ends[k], end) - max(self.starts[k], start)
            seen[self.kinds[k]] = seen.get(self.kinds[k], 0) + overlap
            seen[None] -= overlap
        new_s, new_e, new_k = [], [], []
        if i < j and self.starts[i] < start:  # the left part of a partly covered interval stays
            new_s.append(self.starts[i]), new_e.append(start), new_k.append(self.kinds[i])
        new_s.append(start), new_e.append(end), new_k.append(kind)
        if i < j and self.ends[j - 1] > end:
            new_s.append(end), new_e.append(self.ends[j - 1]), new_k.append(self.kinds[j - 1])
        self.starts[i:j], self.ends[i:j], self.kinds[i:j] = new_s, new_e, new_k
        return seen


def readwrite_bytes(ops: pd.DataFrame) -> dict[str, int]:
    """RAR/RAW/WAR/WAW, read/write totals and first read/write bytes of one file's read and write ops."""
    o = ops.sort_values(["start_s", "end_s", "rank", "seq"], kind="stable")
    out = dict.fromkeys(RW_COLUMNS, 0)
    owners = ByteOwners()
    for op, off, length in zip(
        o["op"].to_numpy(), o["offset"].to_numpy(np.int64), o["length"].to_numpy(np.int64)
    ):
        out[op] += int(length)
        for prev, n in owners.touch(int(off), int(off + length), op).items():
            if n:
                out[f"first {op}" if prev is None else _AFTER[(op, prev)]] += n
    return out


def readwrite_table(ops: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    rows = {key: readwrite_bytes(g) for key, g in ops.groupby(keys, sort=True)}
    index = (
        pd.MultiIndex.from_tuples(rows, names=keys)
        if len(keys) > 1
        else pd.Index([k[0] if isinstance(k, tuple) else k for k in rows], name=keys[0])
    )
    return pd.DataFrame(list(rows.values()), index=index, columns=RW_COLUMNS).astype("int64")
