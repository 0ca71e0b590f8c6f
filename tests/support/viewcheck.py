"""The PrismIO views (apps/views.py) against IOFrame, log by log: which logs differ, per view."""

from __future__ import annotations

import numpy as np
import pandas as pd

from apps.analysis import IOFrame

KINDS = ("read", "write", "meta")


def _by_log(df: pd.DataFrame, log_id: str | None) -> pd.DataFrame:
    """An IOFrame result with `log_id` as its first index level (a one-log frame leaves it out)."""
    if "log_id" in df.index.names:
        return df
    return pd.concat({log_id: df}, names=["log_id"])


def _close(a: pd.Series, b: pd.Series) -> pd.Series:
    a, b = a.astype("float64"), b.astype("float64")
    return pd.Series(np.isclose(a, b, rtol=1e-9, atol=1e-12) | (a.isna() & b.isna()), index=a.index)


def _diff_logs(
    want: pd.DataFrame, got: pd.DataFrame, cols: dict[str, str], exact: bool = False
) -> set[str]:
    """Logs whose rows differ: missing or extra keys, or a column (IOFrame name -> view name) unequal."""
    bad = set(want.index.symmetric_difference(got.index).get_level_values("log_id"))
    both = want.index.intersection(got.index)
    for mine, theirs in cols.items():
        a, b = want.loc[both, mine], got.loc[both, theirs]
        ok = (a.astype("int64") == b.astype("int64")) if exact else _close(a, b)
        bad |= set(ok.index[~ok.to_numpy()].get_level_values("log_id"))
    return bad


def compare(spark, frame: IOFrame) -> dict[str, set[str]]:
    """{view: log_ids where the view and IOFrame differ} over the frame's logs (views registered)."""
    logs = frame.log_ids
    one = logs[0] if len(logs) == 1 else None
    where = "log_id IN ({})".format(", ".join(f"'{x}'" for x in logs))

    def sql(view, keys):
        return (
            spark.sql(f"SELECT * FROM {view} WHERE {where}").toPandas().set_index(keys).sort_index()
        )

    out = {}
    bw = sql("v_io_bandwidth", ["log_id", "rank", "file_name"])
    out["v_io_bandwidth"] = _diff_logs(
        _by_log(frame.io_bandwidth(), one), bw, {"io_bandwidth": "io_bandwidth"}
    )

    t = sql("v_io_time", ["log_id", "file_name", "rank"])
    io = _by_log(frame.io_time(), one)
    bad = _diff_logs(
        io,
        t,
        {
            "io time": "io_time_s",
            "rank time": "rank_time_s",
            "percentage": "percentage",
            "rank io time": "rank_io_time_s",
            "io share": "io_share",
        },
    )
    for kind in KINDS:
        k = _by_log(frame.io_time(kind=kind), one)
        col = f"{kind}_time_s"
        bad |= _diff_logs(k, t.loc[t.index.intersection(k.index)], {f"{kind} time": col})
        rest = t.loc[t.index.difference(k.index), col]
        bad |= set(rest.index[rest.fillna(0).to_numpy() != 0].get_level_values("log_id"))
    out["v_io_time"] = bad

    a = sql("v_access_pattern", ["definition", "log_id", "file_name"])
    bad = set()
    for d in ("prismio", "darshan", "per_rank"):
        got = (
            a.xs(d, level="definition")
            if d in a.index.get_level_values("definition")
            else a.iloc[:0].droplevel(0)
        )
        want = _by_log(frame.access_pattern(definition=d), one)
        bad |= _diff_logs(
            want, got, {c: c for c in ("consecutive", "sequential", "random", "total")}, exact=True
        )
    out["v_access_pattern"] = bad

    rw = sql("v_readwrite_pattern", ["log_id", "file_name"])
    cols = {
        "RAR": "RAR",
        "RAW": "RAW",
        "WAR": "WAR",
        "WAW": "WAW",
        "read": "read",
        "write": "write",
        "first read": "first_read",
        "first write": "first_write",
    }
    out["v_readwrite_pattern"] = _diff_logs(
        _by_log(frame.readwrite_pattern(), one), rw, cols, exact=True
    )
    out["v_job_activity"] = _activity_diff(frame, sql("v_job_activity", ["log_id"]))
    return out


def _activity_diff(frame: IOFrame, got: pd.DataFrame) -> set[str]:
    """Logs whose v_job_activity row differs from IOFrame.activity(): the same source and bin
    width, and per bin the bytes of POSIX, STDIO and DFS summed (a dense series from bin 0)."""
    act = frame.activity()
    bad = set()
    for log_id in frame.log_ids:
        mine = act[act["log_id"] == log_id]
        row = got.loc[log_id] if log_id in got.index else None
        if mine.empty:
            if row is not None and row["activity_source"] is not None:
                bad.add(log_id)
            continue
        if (
            row is None
            or row["activity_source"] != mine["source"].iloc[0]
            or not np.isclose(
                row["activity_bin_s"], mine["end_s"].iloc[0] - mine["start_s"].iloc[0], rtol=1e-12
            )
        ):
            bad.add(log_id)
            continue
        want = (
            mine[mine["module"].isin(["POSIX", "STDIO", "DFS"])]
            .groupby("bin")[["read_bytes", "write_bytes"]]
            .sum()
        )
        for col in ("read_bytes", "write_bytes"):
            dense = np.zeros(int(want.index.max()) + 1 if len(want) else 0, dtype="int64")
            dense[want.index.to_numpy(dtype="int64")] = want[col].to_numpy(dtype="int64")
            series = row[f"activity_{col}"]
            series = np.asarray([] if series is None else series, dtype="int64")
            if len(series) != len(dense) or (series != dense).any():
                bad.add(log_id)
    return bad
