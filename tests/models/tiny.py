"""Tiny literal training data: fsync_per_write files go to bb, large reads of shared files to pfs."""

from __future__ import annotations

import pandas as pd


def row(i: int, **kw) -> dict:
    base = {
        "interface": "POSIX",
        "collective": False,
        "fsync": False,
        "fsync_per_write": False,
        "preallocate": False,
        "file_view": False,
        "transfer_size": 4096 * (1 + i % 4),
        "rw_per_open": 16.0 * (1 + i % 3),
        "io_type": "WO",
        "random_access": bool(i % 2),
        "file_per_process": True,
        "unique_dir": False,
        "n_ranks": 1,
        "nprocs": 2 + 2 * (i % 2),
    }
    return {**base, **kw}


def placement_frame(n: int = 24) -> tuple[pd.DataFrame, pd.Series]:
    rows, y = [], []
    for i in range(n):
        if i % 2:
            rows.append(row(i, fsync_per_write=True, fsync=True))
            y.append("bb")
        else:
            rows.append(
                row(
                    i,
                    interface="MPI-IO",
                    io_type="RAW",
                    file_per_process=False,
                    n_ranks=4,
                    nprocs=4,
                    transfer_size=1048576 * (1 + i % 3),
                )
            )
            y.append("pfs")
    return pd.DataFrame(rows), pd.Series(y, name="best_tier")


def bandwidth_frame(n: int = 30) -> tuple[pd.DataFrame, pd.Series]:
    X, _ = placement_frame(n)
    X = X.assign(tier=["bb" if i % 3 else "pfs" for i in range(n)])
    bw = pd.Series(
        [
            (2000.0 if t == "bb" else 300.0) * (ts / 4096) ** 0.3
            for t, ts in zip(X.tier, X.transfer_size)
        ]
    )
    return X, bw
