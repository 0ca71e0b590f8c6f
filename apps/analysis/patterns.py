"""Access and read/write patterns of data operations: pure pandas, one file at a time.

Inputs are op frames with at least `rank, op, offset, length, start_s, seq` (op `read`|`write`).

- `access_counts`: per rank and direction, ops in time order; an op is consecutive when it
  starts where the previous ended, sequential when it starts after the previous start, random
  otherwise (features/file_features.py's rule; the first op of a rank and direction has
  nothing to follow, so it counts in none: total = consecutive + sequential + random).
- `readwrite_bytes`: the file's ops across all ranks in time order, each byte classified by the
  last earlier op that touched it: read after read (RAR), read after write (RAW), WAR, WAW;
  a byte nobody touched before counts as plain `read` / `write`. `ByteOwners` keeps the file's
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
RW_COLUMNS = ["RAR", "RAW", "WAR", "WAW", "read", "write"]
_AFTER = {("read", "read"): "RAR", ("read", "write"): "RAW", ("write", "read"): "WAR", ("write", "write"): "WAW"}


def access_counts(ops: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """consecutive / sequential / random / total op counts per `keys` group (e.g. file_name)."""
    o = ops.sort_values([*keys, "rank", "op", "start_s", "seq"], kind="stable")
    g = o.groupby([*keys, "rank", "op"], sort=False, dropna=False)
    offset = o["offset"].astype("float64")
    prev_off = g["offset"].shift().astype("float64")
    prev_end = (o["offset"] + o["length"]).groupby([o[k] for k in [*keys, "rank", "op"]], sort=False,
                                                     dropna=False).shift().astype("float64")
    has_prev = prev_off.notna()
    consec = has_prev & (offset == prev_end)
    seq = has_prev & ~consec & (offset > prev_off)
    flags = pd.DataFrame({
        "consecutive": consec, "sequential": seq, "random": has_prev & ~consec & ~seq, "total": has_prev,
    }).astype("int64")
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
    """RAR/RAW/WAR/WAW/read/write bytes of one file's read and write ops."""
    o = ops.sort_values(["start_s", "end_s", "rank", "seq"], kind="stable")
    out = dict.fromkeys(RW_COLUMNS, 0)
    owners = ByteOwners()
    for op, off, length in zip(o["op"].to_numpy(), o["offset"].to_numpy(np.int64), o["length"].to_numpy(np.int64)):
        for prev, n in owners.touch(int(off), int(off + length), op).items():
            if n:
                out[op if prev is None else _AFTER[(op, prev)]] += n
    return out


def readwrite_table(ops: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    rows = {key: readwrite_bytes(g) for key, g in ops.groupby(keys, sort=True)}
    index = pd.MultiIndex.from_tuples(rows, names=keys) if len(keys) > 1 else pd.Index(
        [k[0] if isinstance(k, tuple) else k for k in rows], name=keys[0])
    return pd.DataFrame(list(rows.values()), index=index, columns=RW_COLUMNS).astype("int64")
