"""`iolake fleet`: a self-contained static HTML dashboard of the whole lake, read from the fleet marts.

The page answers the fleet's questions (issue 40) from the five gold marts the `fleet` stage writes
(their columns and definitions: docs/fleet.md, "The marts"):

- the top applications by I/O core-hours, with a trend line per application over months, and the
  same for users (the `uid` of the application key; none when conf `watch.key_parts` has no uid);
- the tag cost ledger: per tag its jobs, the I/O core-hours and core-hours of the jobs it fired
  on, and the recoverable I/O core-hours, an *estimate* from the what-if advice
  (`recoverable_source`). A job counts in every tag that fired on it, so the rows overlap: the
  page never adds them up; it shows the distinct-job total of the period (every job once, from
  gold/fleet_app_month) separately;
- the file systems over time: bytes read and written and metadata time per mount and day;
- regressions per application (gold/regressions rows counted into gold/fleet_app_month);
- lake health per night: logs ok, partial, quarantined with their reasons, the runs of that
  night, and the logs each downstream table still lacks (lag);
- model drift per model version and month: median predicted / measured, within-2x share.

Each application gets a page of its own, `OUT/apps/<slug>.html` (its months: runs, core-hours,
I/O core-hours, bytes, throughput percentiles, regressions, tags; a plot of its I/O core-hours
and throughput over months), linked from the main page `OUT/index.html`. `slug` is the name's
safe characters plus a hash, so two names never share a page and no name escapes the folder.

Readable at scale: each ranking shows the first `top` rows (`--top`, default TOP_N) and one
"and N more" row with the rest's totals; the plots draw at most PLOTTED lines. The main page
reads the marts only, the application pages also their runs and tags (below), all through
delta-rs (`iolake.lake.arrow`): no Spark, no JVM.
`--since` / `--until` (YYYY-MM, inclusive) keep the months (days, nights) of that range.

gold/fleet_app_month is required: a lake without it (the fleet stage has not run) stops the
command with `MartMissing` (a FileNotFoundError: exit 2, `iolake.exits`) naming the table and the
command that builds it. The other marts may be absent (a lake with no tags or no predictions
yet): their section says which table is missing and how to build it.

Every string from the lake (application names come from trace exe names) is user-controlled: the
pages are rendered by `apps/templates/fleet.html.j2` and `fleet_app.html.j2` with autoescape on
and no `|safe`. Nothing is loaded from elsewhere: the plots are base64 PNG `data:` URIs, the
style and the few lines of table-sorting script are inline; the only links leaving the page go to
the project's docs/fleet.md (a `file:` URI of this installation).

Reads: gold/fleet_app_month, fleet_tag_cost, fleet_fs_day, fleet_health, fleet_drift; for the
listed applications' pages gold/regressions, gold/app_runs (their runs) and
silver/bottleneck_tags (those runs' tags, for the strip under the runs plot).
Writes: OUT/index.html and OUT/apps/<slug>.html (and OUT/jobs/ with `--reports`).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from apps.drawing import Drawings, preload
from apps.report import LakeReader
from apps.summary_sections import figure, png_bytes
from iolake.lake import arrow
from schemas import TABLES
from schemas.bottleneck_tags import NO_ISSUE

IO_CH = "I/O core-hours per month"
TOP_N = 15  # rows of each ranking before "and N more"
PLOTTED = 10  # lines a trend plot draws (the top ones); the rest is one "all others" line
FS_WEEKLY_AFTER = 62  # days: a longer span plots file-system sums per week, not per day
HEALTH_NIGHTS = 31  # nights the health table lists (newest first), then "and N more"
BUILD = "iolake stage fleet"
MARTS = ("fleet_app_month", "fleet_tag_cost", "fleet_fs_day", "fleet_health", "fleet_drift")
REQUIRED = "fleet_app_month"
MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
DOCS = (Path(__file__).resolve().parent.parent / "docs" / "fleet.md").as_uri()
TEMPLATE_DIR = Path(__file__).parent / "templates"
NO_USER = "(no user in the key)"
REGRESSIONS_SHOWN = 100  # regression rows the main page lists (newest first), then "and N more"
RUNS_LISTED = 10  # runs an application page lists as recent and as slowest
RUNS_WINDOW = 5_000  # runs an application page reads at least: its newest months holding them
RUN_TAGS_SHOWN = 5  # tags marked under an application's runs plot: its most frequent
EFFICIENCY_SHOWN = 15  # application-months the efficiency table lists (least efficient first)
EFFICIENCY_MIN_RUNS = 3  # runs with an efficiency an application-month needs to be listed
RUN_COLUMNS = ["log_id", "app", "start", "nprocs", "bandwidth_mib_s", "io_time_s", "bytes"]


class MartMissing(FileNotFoundError):
    """The lake has no gold/fleet_app_month: the fleet stage has not run on it."""


@dataclass(frozen=True)
class _MartSpec:
    """Where a mart lives when `schemas` does not declare it (yet): LAKE/gold/<name>."""

    name: str
    layer: str = "gold"

    def path(self, lake: str) -> str:
        return f"{lake.rstrip('/')}/{self.layer}/{self.name}"


class FleetReader(LakeReader):
    """`LakeReader` over the fleet marts: a mart is found by its `schemas` spec when declared,
    else at LAKE/gold/<name>, the place every gold table has."""

    def spec(self, name: str):
        return TABLES.get(name) or _MartSpec(name)

    def exists(self, name: str) -> bool:
        if name not in self._exists:
            self._exists[name] = arrow.exists(self.lake, self.spec(name), self.storage_options)
        return self._exists[name]

    def read(self, name: str, columns=None, log_id=None, filter=None) -> pa.Table | None:
        if not self.exists(name):
            return None
        table = arrow.open_table(self.lake, self.spec(name), self.storage_options)
        return arrow.read_table(table, columns, filter, f"gold/{name}")


# ---- reading the marts ---------------------------------------------------------------------
def check_month(value: str | None, flag: str) -> str | None:
    if value is not None and not MONTH.match(value):
        raise ValueError(f"{flag} {value!r}: give a month as YYYY-MM")
    return value


def month_range(months: list[str]) -> list[str]:
    """Every month from the first to the last of `months` (YYYY-MM, sorted), so that a trend's
    x axis is even and a month without runs shows as one."""
    if not months:
        return []
    y, m = map(int, months[0].split("-"))
    out = []
    while (f"{y:04d}-{m:02d}") <= months[-1]:
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def _month_filter(since: str | None, until: str | None, column: str = "month"):
    expr = None
    for op, v in ((pc.greater_equal, since), (pc.less_equal, until)):
        if v is not None:
            e = op(pc.field(column), pa.scalar(v))
            expr = e if expr is None else expr & e
    return expr


def _month_of(dates: pd.Series) -> pd.Series:
    return pd.to_datetime(dates).dt.strftime("%Y-%m")


def _in_range(months: pd.Series, since: str | None, until: str | None) -> pd.Series:
    keep = pd.Series(True, index=months.index)
    if since is not None:
        keep &= months >= since
    if until is not None:
        keep &= months <= until
    return keep


def _as_dict(v) -> dict:
    """A map<string,long> cell as pandas gives it (a list of pairs, a dict or None) as a dict."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return {}
    return dict(v)


def load(reader: FleetReader, since: str | None = None, until: str | None = None) -> dict:
    """The marts' rows within [since, until] as pandas frames; None for a mart the lake lacks.
    Raises MartMissing when gold/fleet_app_month is absent."""
    if not reader.exists(REQUIRED):
        raise MartMissing(
            f"the lake {reader.lake} has no gold/{REQUIRED} table: the fleet stage has not run on "
            f"it; build the marts with `{BUILD} --lake {reader.lake}` (after the other stages)"
        )
    by_month = _month_filter(since, until)
    out: dict[str, pd.DataFrame | None] = {}
    for name in MARTS:
        monthly = name in ("fleet_app_month", "fleet_tag_cost", "fleet_drift")
        t = reader.read(name, filter=by_month if monthly else None)
        if t is None:
            out[name] = None
            continue
        df = t.to_pandas()
        if name == "fleet_fs_day" and len(df):
            df = df[_in_range(_month_of(df["day"]), since, until)]
        if name == "fleet_health" and len(df):
            df = df[_in_range(_month_of(df["night"]), since, until)]
        out[name] = df.reset_index(drop=True)
    out["regressions"] = load_regressions(reader, since, until)
    return out


def _month_start(month: str) -> dt.datetime:
    y, m = map(int, month.split("-"))
    return dt.datetime(y, m, 1, tzinfo=dt.UTC)


def _next_month(month: str) -> str:
    y, m = map(int, month.split("-"))
    return f"{y + (m == 12):04d}-{1 if m == 12 else m + 1:02d}"


def _start_filter(since: str | None, until: str | None):
    """An Arrow filter on gold/regressions' `start` (UTC) keeping [since, until]: its file
    statistics let delta-rs skip files of other months."""
    ts = pa.timestamp("us", tz="UTC")
    expr = None
    if since is not None:
        expr = pc.field("start") >= pa.scalar(_month_start(since), ts)
    if until is not None:
        e = pc.field("start") < pa.scalar(_month_start(_next_month(until)), ts)
        expr = e if expr is None else expr & e
    return expr


def load_regressions(
    reader: FleetReader, since: str | None, until: str | None
) -> pd.DataFrame | None:
    """gold/regressions rows whose run `start` (UTC) falls in [since, until], newest first; None
    when the lake has no such table (the watch stage has not run)."""
    if not reader.exists("regressions"):
        return None
    df = reader.read("regressions", filter=_start_filter(since, until)).to_pandas()
    if len(df):
        df = df[_in_range(_month_of(df["start"]), since, until)]
    return df.sort_values(["start", "app", "metric"], ascending=[False, True, True]).reset_index(
        drop=True
    )


def run_window(am: pd.DataFrame, apps, window: int | None = None) -> dict[str, list[str]]:
    """The months of each application of `apps` whose runs its page reads: its newest months in
    `am` (gold/fleet_app_month rows of the period) until their runs (less the suspect ones, which
    gold/app_runs leaves out) reach `window`, whole months, every month when they never do. So a
    page reads about `window` runs of an application however long the lake's history, and every
    run of an application with fewer; the months table and plot show every month."""
    window = RUNS_WINDOW if window is None else window
    rows = am[am["app"].isin(list(apps))]
    out = {}
    for app, g in rows.groupby("app", sort=True):
        g = g.sort_values("month", ascending=False)
        have = np.cumsum((g["runs"].fillna(0) - g["suspect_runs"].fillna(0)).to_numpy())
        out[app] = sorted(g["month"].iloc[: int(np.searchsorted(have, window)) + 1])
    return out


def _window_filter(window: dict[str, list[str]]):
    """`job_month = M AND app IN (the applications whose window holds M)`, OR-ed over the
    months: the partition values prune the other months' files."""
    by_month: dict[str, list[str]] = {}
    for app, months in window.items():
        for m in months:
            by_month.setdefault(m, []).append(app)
    expr = None
    for m, apps in sorted(by_month.items()):
        e = (pc.field("job_month") == pa.scalar(m)) & pc.field("app").isin(
            pa.array(sorted(apps), pa.string())
        )
        expr = e if expr is None else expr | e
    return expr


def load_runs(reader: FleetReader, window: dict[str, list[str]]) -> dict[str, pd.DataFrame]:
    """Each application's runs from gold/app_runs (RUN_COLUMNS) in the months of its `window`
    (`run_window`), newest first (ties by log_id): one read of those months' files (the table is
    partitioned by job_month) filtered to the applications, split per application. Empty when
    the lake has no gold/app_runs."""
    window = {app: months for app, months in window.items() if months}
    if not window or not reader.exists("app_runs"):
        return {}
    runs = reader.read("app_runs", RUN_COLUMNS, filter=_window_filter(window))
    # sorted in Arrow (pandas' sort factorizes every log_id): the same order every read, so the
    # same pixels where runs overlap
    runs = runs.sort_by(
        [("app", "ascending"), ("start", "descending"), ("log_id", "ascending")]
    ).to_pandas()
    return {app: g.reset_index(drop=True) for app, g in runs.groupby("app", sort=True)}


def load_run_tags(
    reader: FleetReader, runs: dict[str, pd.DataFrame], months: list[str] | None = None
) -> dict[str, pd.DataFrame]:
    """The tags that fired (silver/bottleneck_tags: distinct log_id, tag pairs, `no_issue` left
    out as the fleet marts leave it out) on the runs `load_runs` read, per application: one read
    of the tags table's `months` (those of the runs' windows; every month when None; a log's
    tags are in its run's job_month), joined in Arrow to those runs' log_ids. Empty when the
    lake has no silver/bottleneck_tags or there is no run."""
    runs = {app: df for app, df in runs.items() if len(df)}
    if not runs or not reader.exists("bottleneck_tags"):
        return {}
    apps = list(runs)
    log_ids = np.concatenate([df["log_id"].to_numpy() for df in runs.values()])
    app_of = np.repeat(np.arange(len(apps), dtype=np.int64), [len(df) for df in runs.values()])
    codes, uniques = pd.factorize(log_ids)  # a log listed twice for an application counts once
    first = _first_of_each(app_of * len(uniques) + codes)
    log_ids, app_of = log_ids[first], app_of[first]
    keys = pa.table({"log_id": pa.array(log_ids), "run": np.arange(len(log_ids))})
    expr = pc.field("tag") != pa.scalar(NO_ISSUE)
    if months is not None:
        expr = expr & pc.field("job_month").isin(pa.array(sorted(set(months)), pa.string()))
    tags = reader.read("bottleneck_tags", ["log_id", "tag"], filter=expr)
    # one hash join, not a read per application nor an is_in over every run's log_id; then the
    # distinct (run, tag) pairs as integers (a tag row written twice counts once), and only
    # those pairs become strings
    joined = tags.join(keys, "log_id", join_type="inner")
    if not joined.num_rows:
        return {}
    coded = pc.dictionary_encode(joined.column("tag")).combine_chunks()
    names = np.asarray(coded.dictionary.to_pylist(), dtype=object)
    pairs = np.sort(
        joined.column("run").to_numpy() * len(names) + coded.indices.to_numpy().astype(np.int64)
    )
    pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    run, tag = pairs // len(names), pairs % len(names)
    order = np.argsort(app_of[run], kind="stable")
    run, tag = run[order], tag[order]
    cuts = np.searchsorted(app_of[run], np.arange(len(apps) + 1))
    return {
        apps[i]: pd.DataFrame({"log_id": log_ids[run[lo:hi]], "tag": names[tag[lo:hi]]})
        for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:]))
        if hi > lo
    }


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """The positions of each value's first occurrence in `keys`, in order (a sort, not a hash)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    return np.sort(order[np.concatenate([[True], ordered[1:] != ordered[:-1]])])


# ---- what the page shows: pure functions of the marts' frames -------------------------------
SUMS = ("runs", "suspect_runs", "core_hours", "io_core_hours", "bytes_read", "bytes_written")


def _totals(df: pd.DataFrame, cols=SUMS + ("regressions",)) -> dict:
    t = {c: (df[c].sum() if len(df) else 0) for c in cols}
    t = {c: (float(v) if isinstance(v, float) else int(v)) for c, v in t.items()}
    t["io_share"] = t["io_core_hours"] / t["core_hours"] if t.get("core_hours") else None
    return t


def slug(app: str) -> str:
    """A file name for an application's page: its safe characters (at most 40) and 10 hex digits
    of its SHA-1, so distinct names never share a page and none leaves the folder."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", app).strip("-.")[:40] or "app"
    return f"{safe}-{hashlib.sha1(app.encode('utf-8')).hexdigest()[:10]}"


def ranking(am: pd.DataFrame, by: str, n: int) -> dict:
    """Applications (by="app") or users (by="uid") ranked by I/O core-hours over the period:
    {"rows": the first n, "rest": totals of the others with their count, "total": all of them}.
    A row's io_share is its I/O core-hours over its core-hours (sums first, then the ratio)."""
    df = am.copy()
    if by == "uid":
        df["uid"] = df["uid"].map(lambda u: NO_USER if pd.isna(u) else f"uid {int(u)}")
    agg = {c: "sum" for c in SUMS + ("regressions",)}
    agg["month"] = "nunique"
    if by == "app":
        agg["exe_name"] = "first"
        agg["uid"] = "first"
    else:
        agg["app"] = "nunique"
    g = df.groupby(by, dropna=False).agg(agg).reset_index()
    g["io_share"] = [i / c if c else None for i, c in zip(g["io_core_hours"], g["core_hours"])]
    g = g.sort_values(["io_core_hours", by], ascending=[False, True], kind="mergesort")
    rows = g.to_dict("records")
    for r in rows:
        if by == "app":
            r["slug"] = slug(r["app"])
            r["uid"] = None if pd.isna(r["uid"]) else int(r["uid"])
    top, rest = rows[:n], g.iloc[n:]
    rest_totals = _totals(rest) | {"count": len(rest)}
    return {"rows": top, "rest": rest_totals, "total": _totals(g) | {"count": len(g)}}


def trend(am: pd.DataFrame, by: str, keys: list, months: list[str]) -> pd.DataFrame:
    """I/O core-hours per month (rows) of each key in `keys` (columns), and of all the other
    keys together ("all others"); months without runs are 0."""
    df = am.copy()
    if by == "uid":
        df["uid"] = df["uid"].map(lambda u: NO_USER if pd.isna(u) else f"uid {int(u)}")
    p = df.pivot_table(index="month", columns=by, values="io_core_hours", aggfunc="sum")
    p = p.reindex(index=months).fillna(0.0)
    shown = p.reindex(columns=keys).fillna(0.0)
    others = p.drop(columns=[k for k in keys if k in p.columns]).sum(axis=1)
    if len(p.columns) > len(keys):
        shown["all others"] = others
    return shown


def _ledger(tc: pd.DataFrame, keys: list[str]) -> list[dict]:
    """gold/fleet_tag_cost summed per `keys` (["tag"], or ["app", "tag"] for the application
    pages): jobs, I/O core-hours, core-hours, the recoverable I/O core-hours (sum of the non-null
    estimates; None when there is none) and their sources, and the number of applications. In one
    grouping, so that thousands of applications cost one pass."""
    g = tc.groupby(keys, sort=False).agg(
        code=("code", "first"),
        jobs=("jobs", "sum"),
        io_core_hours=("io_core_hours", "sum"),
        core_hours=("core_hours", "sum"),
        recoverable=("recoverable_io_core_hours", "sum"),
        estimated=("recoverable_io_core_hours", "count"),
        apps=("app", "nunique"),
    )
    sources: dict[tuple, set] = {}
    for row in tc[[*keys, "recoverable_source"]].dropna().drop_duplicates().itertuples(index=False):
        sources.setdefault(tuple(row[:-1]), set()).add(row[-1])
    out = []
    for key, r in zip(g.index, g.to_dict("records")):
        key = key if isinstance(key, tuple) else (key,)
        out.append(
            dict(zip(keys, key))
            | r
            | {
                "jobs": int(r["jobs"]),
                "apps": int(r["apps"]),
                "code": None if pd.isna(r["code"]) else r["code"],
                "recoverable": float(r["recoverable"]) if r["estimated"] else None,
                "sources": sorted(sources.get(key, ())),
            }
        )
    return out


def tag_ledger(tc: pd.DataFrame, total_io: float) -> list[dict]:
    """One row per tag over the period: jobs, I/O core-hours and core-hours of the jobs it fired
    on, the recoverable I/O core-hours (sum of the non-null estimates; None when there is none)
    and their sources, the share of the period's I/O core-hours, and the application with most
    of the tag's I/O core-hours. Rows overlap (a job counts in every tag that fired on it): never
    add them up."""
    if not len(tc):
        return []
    rows = _ledger(tc, ["tag"])
    per_app = tc.groupby(["tag", "app"], sort=False)["io_core_hours"].sum().reset_index()
    per_app = per_app.sort_values(["tag", "io_core_hours", "app"], ascending=[True, False, True])
    top = {t: (a, io) for t, a, io in per_app.drop_duplicates("tag").itertuples(index=False)}
    for r in rows:
        app, io = top[r["tag"]]
        r["share"] = r["io_core_hours"] / total_io if total_io else None
        r["top_app"], r["top_app_slug"] = app, slug(app)
        r["top_app_share"] = io / r["io_core_hours"] if r["io_core_hours"] else None
    return sorted(rows, key=lambda r: (-r["io_core_hours"], r["tag"]))


def app_ledgers(tc: pd.DataFrame | None, io_by_app: dict[str, float]) -> dict[str, list[dict]]:
    """Each application's tag rows (`_ledger` per application and tag), its share being of the
    application's own I/O core-hours (`io_by_app`), largest first."""
    out: dict[str, list[dict]] = {}
    if tc is None or not len(tc):
        return out
    for r in _ledger(tc, ["app", "tag"]):
        total = io_by_app.get(r["app"]) or 0.0
        r["share"] = r["io_core_hours"] / total if total else None
        out.setdefault(r["app"], []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: (-r["io_core_hours"], r["tag"]))
    return out


FS_SUMS = (
    "jobs",
    "bytes_read",
    "bytes_written",
    "reads",
    "writes",
    "opens",
    "meta_time_s",
    "io_time_s",
)


def fs_mounts(fs: pd.DataFrame, n: int) -> dict:
    """Per mount over the period: its fs_type(s), days active and FS_SUMS; ranked by bytes moved."""
    g = fs.groupby("mount_point").agg(
        {
            **{c: "sum" for c in FS_SUMS},
            "day": "nunique",
            "fs_type": lambda s: ", ".join(sorted(set(s.dropna()))),
        }
    )
    g = g.reset_index()
    g["bytes"] = g["bytes_read"] + g["bytes_written"]
    g["meta_share"] = [m / t if t else None for m, t in zip(g["meta_time_s"], g["io_time_s"])]
    g = g.sort_values(["bytes", "mount_point"], ascending=[False, True], kind="mergesort")
    rows = g.to_dict("records")
    return {"rows": rows[:n], "more": max(0, len(rows) - n)}


def health_rows(h: pd.DataFrame) -> list[dict]:
    """One row per night, newest first: counts, the quarantine reasons by count, and the
    downstream tables with logs still missing (lag > 0)."""
    rows = []
    for r in h.sort_values("night", ascending=False).to_dict("records"):
        reasons = sorted(
            _as_dict(r.get("quarantine_reasons")).items(), key=lambda kv: (-kv[1], kv[0])
        )
        lag = sorted((k, v) for k, v in _as_dict(r.get("lag")).items() if v)
        rows.append(
            r | {"reasons": reasons, "lagging": lag, "night": pd.Timestamp(r["night"]).date()}
        )
    return rows


def drift_rows(d: pd.DataFrame) -> list[dict]:
    return d.sort_values(["model_name", "model_version", "month"], kind="mergesort").to_dict(
        "records"
    )


def app_months(am: pd.DataFrame) -> dict[str, list[dict]]:
    """Each application's rows of gold/fleet_app_month, one per month in month order, with its
    tags as (tag, runs) by runs (one pass over the mart, not one per application)."""
    out: dict[str, list[dict]] = {}
    for r in am.sort_values(["app", "month"], kind="mergesort").to_dict("records"):
        r["tags"] = sorted(_as_dict(r.get("tag_runs")).items(), key=lambda kv: (-kv[1], kv[0]))
        out.setdefault(r["app"], []).append(r)
    return out


def _row_totals(rows: list[dict]) -> dict:
    """`_totals` of a few rows as dicts (an application's months)."""
    t = {c: sum(0 if pd.isna(r[c]) else r[c] for r in rows) for c in SUMS + ("regressions",)}
    t["io_share"] = t["io_core_hours"] / t["core_hours"] if t["core_hours"] else None
    return t


def efficiency_rows(
    am: pd.DataFrame, n: int = EFFICIENCY_SHOWN, min_runs: int = EFFICIENCY_MIN_RUNS
) -> dict:
    """The application-months whose runs got the least of what similar jobs get: the rows of
    gold/fleet_app_month with `efficiency_p50` (the median over the month's non-suspect runs of
    measured / expected throughput, docs/fleet.md "Efficiency") over at least `min_runs` runs,
    lowest first (ties: more runs first, then the name). {"rows": the first n, "more": the
    others listed, "months": app-months with an efficiency at all, "few": those under min_runs}.
    Medians of different months are not combined: each row is one month."""
    if "efficiency_p50" not in am.columns:
        return {"rows": [], "more": 0, "months": 0, "few": 0}
    has = am[am["efficiency_p50"].notna() & (am["efficiency_runs"].fillna(0) > 0)]
    ok = has[has["efficiency_runs"] >= min_runs]
    ok = ok.sort_values(
        ["efficiency_p50", "efficiency_runs", "app", "month"],
        ascending=[True, False, True, True],
        kind="mergesort",
    )
    rows = []
    for r in ok.head(n).to_dict("records"):
        rows.append(
            {
                "app": r["app"],
                "slug": slug(r["app"]),
                "month": r["month"],
                "efficiency": float(r["efficiency_p50"]),
                "runs": int(r["efficiency_runs"]),
                "all_runs": int(r["runs"]),
                "throughput_p50": _nan(r.get("throughput_p50_mib_s")),
            }
        )
    return {
        "rows": rows,
        "more": max(0, len(ok) - n),
        "months": len(has),
        "few": len(has) - len(ok),
    }


def weather_verdict(r: dict) -> tuple[str, str]:
    """ "Application or file system?" for one gold/regressions row, from the watch's weather
    columns (`features/regressions.py`: peers are other applications with a run on the same file
    system within conf `watch.weather_window_h`; `weather` is true when at least
    `watch.weather_min_peers` of them ran and at least `watch.weather_share` of them dropped):
    (verdict, why)."""
    peers, dropped, fs = r.get("weather_peers"), r.get("weather_dropped"), r.get("fs")
    where = f"on {fs}" if fs else "on its file system"
    if r.get("weather") is True or r.get("weather") == 1:
        return (
            "file system",
            f"{int(dropped)} of {int(peers)} other applications {where} dropped too",
        )
    if r.get("weather") is None or pd.isna(r.get("weather")):
        return "unknown", "no file system known for the run: peers cannot be compared"
    if not peers or pd.isna(peers):
        return "application?", f"no other application ran {where} in the window"
    return (
        "application",
        f"{int(dropped)} of {int(peers)} other applications {where} dropped: not enough for "
        "the file system's weather",
    )


def metric_value(metric: str, v) -> str:
    """A gold/regressions value or baseline in its metric's unit (conf `watch.metrics`)."""
    if v is None or pd.isna(v):
        return "—"
    v = float(v)
    if metric == "bandwidth_mib_s":
        return f"{v:,.1f} MiB/s" if abs(v) >= 1 else f"{v:.3g} MiB/s"
    if metric == "io_time_s":
        return f"{v:,.1f} s" if abs(v) >= 1 else f"{v:.3g} s"
    if metric == "meta_time_share":
        return f"{100 * v:.1f}%"
    if metric == "bytes":
        from apps.summary_sections import human_bytes

        return human_bytes(v)
    return f"{v:.4g}"


def _stamp(t) -> str | None:
    if t is None or pd.isna(t):
        return None
    return pd.Timestamp(t).strftime("%Y-%m-%d %H:%M")


def regression_rows(reg: pd.DataFrame | None) -> list[dict]:
    """gold/regressions rows as the tables show them: the row's own columns, its value and
    baseline in the metric's unit, the page of its application and the weather verdict."""
    if reg is None or not len(reg):
        return []
    out = []
    for r in reg.to_dict("records"):
        verdict, why = weather_verdict(r)
        out.append(
            r
            | {
                "slug": slug(r["app"]),
                "start_s": _stamp(r["start"]),
                "since_s": _stamp(r.get("since")),
                "start_v": pd.Timestamp(r["start"]).timestamp(),
                "value_s": metric_value(r["metric"], r["value"]),
                "baseline_s": metric_value(r["metric"], r["baseline"]),
                "verdict": verdict,
                "why": why,
            }
        )
    return out


def run_lists(runs: pd.DataFrame | None, flagged: set[str], n: int = RUNS_LISTED) -> dict:
    """An application's runs to list: the `n` most recent, and the `n` slowest (lowest
    bandwidth_mib_s, runs without one left out); `flagged`: log_ids with a regression."""
    if runs is None or not len(runs):
        return {"recent": [], "slowest": [], "count": 0}

    def rows(df):
        return [
            r | {"start_s": _stamp(r["start"]), "flagged": r["log_id"] in flagged}
            for r in df.to_dict("records")
        ]

    recent = runs[runs["start"] >= runs["start"].nlargest(n).min()]  # n and their ties
    recent = recent.sort_values(["start", "log_id"], ascending=[False, True]).head(n)
    bw = runs["bandwidth_mib_s"]
    slow = runs[bw.notna() & (bw <= bw.nsmallest(n).max())]
    slow = slow.sort_values(["bandwidth_mib_s", "log_id"], kind="mergesort").head(n)
    return {"recent": rows(recent), "slowest": rows(slow), "count": len(runs)}


def run_tags(tags: pd.DataFrame | None, n: int = RUN_TAGS_SHOWN) -> list[dict]:
    """An application's tags to mark under its runs plot: its `n` tags that fired on most of its
    runs (ties by name), each {"tag", "runs": how many runs, "log_ids": those runs}. `tags`:
    distinct (log_id, tag) rows, as `load_run_tags` gives them."""
    if tags is None or not len(tags):
        return []
    counts = tags["tag"].value_counts()
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    chosen = tags[tags["tag"].isin([t for t, _ in order])]
    ids = {t: sorted(g) for t, g in chosen.groupby("tag")["log_id"]}
    return [{"tag": t, "runs": int(k), "log_ids": ids[t]} for t, k in order]


def linked_jobs(page: dict, apps: list[dict]) -> list[str]:
    """The log_ids the pages link to, in the order `--reports N` renders them: the main page's
    regression rows (newest first), then per application page (in the order given) its
    regressions, its slowest and its most recent runs. Each once."""
    seen: dict[str, None] = {}
    for r in page.get("regression_rows") or []:
        if r.get("log_id"):
            seen.setdefault(r["log_id"], None)
    for a in apps:
        for r in a.get("regs") or []:
            if r.get("log_id"):
                seen.setdefault(r["log_id"], None)
        for key in ("slowest", "recent"):
            for r in (a.get("runs") or {}).get(key, []):
                seen.setdefault(r["log_id"], None)
    return list(seen)


def render_reports(conf, log_ids: list[str], folder: Path, limit: int) -> set[str]:
    """Write `iolake report`'s page of the first `limit` logs of `log_ids` it can build into
    folder/<log_id>.html (apps/report.py's `build` and `render`); returns the log_ids written. A
    job the report cannot build (no bronze/jobs row: its log left the lake) is skipped with a
    warning and the next one taken: its links show the command instead."""
    from apps.report import JobNotFound
    from apps.report import LakeReader as ReportReader
    from apps.report import build as build_report
    from apps.report import render as render_report

    if not log_ids or limit < 1:
        return set()
    folder.mkdir(parents=True, exist_ok=True)
    reader = ReportReader(conf)
    done: set[str] = set()
    for log_id in log_ids:
        if len(done) >= limit:
            break
        try:
            html = render_report(build_report(reader, log_id))
        except (JobNotFound, LookupError, ValueError, OSError) as e:
            print(f"iolake fleet: no report page for {log_id}: {e}", file=sys.stderr)
            continue
        (folder / f"{log_id}.html").write_text(html, encoding="utf-8")
        done.add(log_id)
    return done


# ---- the figures ---------------------------------------------------------------------------
COLOURS = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79",
]  # fmt: skip


def _png(fig) -> str:
    """The figure as base64 PNG text for a `data:` URL."""
    return base64.b64encode(png_bytes(fig)).decode("ascii")


FIGURES = {
    "apps_png": "The applications' trend plot",
    "users_png": "The users' trend plot",
    "ledger_png": "The tag cost ledger's plot",
    "fs_png": "The file systems' plot",
    "health_png": "The lake health plot",
    "drift_png": "The model drift plot",
    "png": "The months plot",
    "runs_png": "The runs plot",
}  # what the page calls each figure when it could not be drawn


def _later(drawings: Drawings, into: dict, key: str, fn, *args) -> None:
    """`into[key]` = `fn(*args)` (base64 PNG text, or None: nothing to draw) once `drawings` is
    rendered. A figure whose drawing fails leaves `into[key]` None and says so in
    `into["figure_notes"]`: a page without one plot beats no page."""
    into[key] = None

    def done(png: str | None, error: str | None) -> None:
        if error is None:
            into[key] = png
        else:
            into["figure_notes"].append(f"{FIGURES[key]} could not be drawn: {error}")

    drawings.add(fn, *args, done=done)


def _thousands():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 10 else f"{v:g}")


def _month_labels(months: list[str]) -> list[str]:
    """Tick labels for a month axis: every month up to 12, else every k-th (at most 12 labels)."""
    step = max(1, math.ceil(len(months) / 12))
    return [m if i % step == 0 else "" for i, m in enumerate(months)]


def _month_ticks(ax, months: list[str]) -> None:
    """Ticks (and grid lines) only at the labelled months of `_month_labels`: a decade of months
    would otherwise draw 120 grid lines."""
    labels = _month_labels(months)
    shown = [(i, m) for i, m in enumerate(labels) if m]
    ax.set_xticks([i for i, _ in shown], [m for _, m in shown], fontsize=8)


def _short(label: str, width: int = 38) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def draw_trend(series: pd.DataFrame, ylabel: str) -> str:
    """One line per column over the months (rows); "all others" dashed grey; the legend outside."""
    fig = figure(10.5, 4.2)
    ax = fig.add_axes((0.07, 0.12, 0.6, 0.8))
    x = list(range(len(series.index)))
    for i, col in enumerate(series.columns):
        others = col == "all others"
        ax.plot(
            x,
            series[col].to_numpy(dtype=float),
            marker="o",
            ms=3.5,
            lw=1.1 if others else 1.8,
            ls="--" if others else "-",
            color="#888888" if others else COLOURS[i % len(COLOURS)],
            label=_short(str(col)),
        )
    _month_ticks(ax, list(series.index))
    ax.set_ylabel(ylabel, fontsize=9)
    ax.tick_params(axis="y", labelsize=8)
    ax.yaxis.set_major_formatter(_thousands())
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _png(fig)


def draw_ledger(ledger: list[dict]) -> str:
    """Horizontal bars: each tag's I/O core-hours, its recoverable estimate overlaid darker."""
    rows = ledger[: PLOTTED * 2]
    fig = figure(10.5, 0.9 + 0.32 * len(rows))
    ax = fig.add_axes((0.27, 0.9 / fig.get_figheight(), 0.68, 1 - 1.2 / fig.get_figheight()))
    y = list(range(len(rows)))[::-1]
    ax.barh(
        y,
        [r["io_core_hours"] for r in rows],
        color="#9ecae1",
        label="I/O core-hours of the jobs it fired on",
    )
    ax.barh(
        y,
        [r["recoverable"] or 0 for r in rows],
        color="#08519c",
        height=0.45,
        label="recoverable (estimate, from what-if advice)",
    )
    ax.set_yticks(
        y, [f"{r['tag']} ({r['code']})" if r["code"] else r["tag"] for r in rows], fontsize=8
    )
    ax.set_xlabel("I/O core-hours (tags overlap: bars are not additive)", fontsize=9)
    ax.xaxis.set_major_formatter(_thousands())
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def draw_fs(fs: pd.DataFrame, mounts: list[str]) -> str:
    """Per mount and day (per week, Monday to Sunday, when the days span more than FS_WEEKLY_AFTER):
    bytes read and written (GiB, top panel), metadata time (hours, bottom)."""
    fig = figure(10.5, 6.0)
    top = fig.add_axes((0.08, 0.56, 0.62, 0.38))
    bottom = fig.add_axes((0.08, 0.09, 0.62, 0.38), sharex=top)
    df = fs.copy()
    df["day"] = pd.to_datetime(df["day"])
    weekly = df["day"].max() - df["day"].min() > pd.Timedelta(days=FS_WEEKLY_AFTER)
    per = "week" if weekly else "day"
    if weekly:  # the Monday of each day's week
        df["day"] = df["day"] - pd.to_timedelta(df["day"].dt.weekday, unit="D")
    sums = df.groupby(["mount_point", "day"])[["bytes_read", "bytes_written"]].sum()
    biggest = float(sums.max().max()) if len(sums) else 0.0
    unit, size = next(
        (u, s)
        for u, s in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 1))
        if biggest >= 10 * s or s == 1
    )
    for i, m in enumerate(mounts[:PLOTTED]):
        d = (
            df[df["mount_point"] == m]
            .groupby("day")[["bytes_read", "bytes_written", "meta_time_s"]]
            .sum()
        )
        c = COLOURS[i % len(COLOURS)]
        top.plot(d.index, d["bytes_read"] / size, color=c, lw=1.4, label=f"{_short(m, 30)} read")
        top.plot(
            d.index,
            d["bytes_written"] / size,
            color=c,
            lw=1.1,
            ls="--",
            label=f"{_short(m, 30)} written",
        )
        bottom.plot(d.index, d["meta_time_s"] / 3600, color=c, lw=1.4, label=_short(m, 30))
    top.set_ylabel(f"{unit} per {per}", fontsize=9)
    bottom.set_ylabel(f"metadata hours per {per}", fontsize=9)
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(_thousands())
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    top.set_title("bytes read (solid) and written (dashed)", fontsize=9, loc="left")
    bottom.set_title(
        "metadata time (open, stat, seek, ... summed over processes)", fontsize=9, loc="left"
    )
    return _png(fig)


def draw_health(h: pd.DataFrame) -> str:
    """Per night: logs ok (top panel); partial and quarantined logs stacked (bottom panel, its
    own scale, so a few bad logs among thousands stay visible). Steps, not bars: a year of
    nights draws as fast as a week."""
    df = h.sort_values("night")
    x = pd.to_datetime(df["night"]).to_numpy()
    fig = figure(10.5, 3.6)
    top = fig.add_axes((0.07, 0.45, 0.7, 0.48))
    bottom = fig.add_axes((0.07, 0.1, 0.7, 0.27), sharex=top)
    ok = df["ok"].to_numpy(dtype=float)
    partial = df["partial"].to_numpy(dtype=float)
    bad = partial + df["quarantined"].to_numpy(dtype=float)
    step = dict(step="mid", lw=0)
    top.fill_between(x, 0, ok, color="#41ab5d", label="ok", **step)
    bottom.fill_between(x, 0, partial, color="#fd8d3c", label="partial", **step)
    bottom.fill_between(x, partial, bad, color="#cb181d", label="quarantined", **step)
    if len(x) == 1:  # one night: a step has no width; show points
        top.scatter(x, ok, color="#41ab5d")
        bottom.scatter(x, bad, color="#cb181d")
    top.set_ylabel("logs ok", fontsize=9)
    bottom.set_ylabel("partial,\nquarantined", fontsize=9)
    for ax in (top, bottom):
        ax.tick_params(labelsize=8)
        ax.yaxis.set_major_formatter(_thousands())
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    top.tick_params(axis="x", labelbottom=False)
    return _png(fig)


def draw_drift(d: pd.DataFrame, months: list[str]) -> str:
    """Median predicted / measured per month of each model version (log scale), the 0.5-2 band shaded."""
    fig = figure(10.5, 3.4)
    ax = fig.add_axes((0.09, 0.14, 0.58, 0.78))
    pos = {m: i for i, m in enumerate(months)}
    ax.axhspan(0.5, 2.0, color="#e5f5e0", label="within 2x")
    ax.axhline(1.0, color="#555555", lw=0.8)
    keys = d[["model_name", "model_version"]].drop_duplicates().to_records(index=False)
    for i, (name, version) in enumerate(keys[:PLOTTED]):
        g = d[(d["model_name"] == name) & (d["model_version"] == version)].sort_values("month")
        g = g[g["month"].isin(pos) & (g["median_ratio"] > 0)]
        ax.plot(
            [pos[m] for m in g["month"]],
            g["median_ratio"],
            marker="o",
            ms=4,
            color=COLOURS[i % len(COLOURS)],
            label=f"{_short(str(name), 28)} v{version}",
        )
    ax.set_yscale("log")
    from matplotlib.ticker import FixedLocator, NullFormatter

    lo, hi = ax.get_ylim()
    ticks = [t for t in (0.01, 0.03, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 100) if lo <= t <= hi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(_thousands())
    ax.yaxis.set_minor_formatter(NullFormatter())
    _month_ticks(ax, months)
    ax.set_ylabel("median predicted / measured", fontsize=9)
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _png(fig)


def draw_app(rows: list[dict]) -> str:
    """An application's months: I/O core-hours as bars (left axis), throughput p50 with the
    p10-p90 band (right axis, MiB/s); the legend above the axes."""
    fig = figure(10.5, 3.6)
    ax = fig.add_axes((0.08, 0.12, 0.82, 0.72))
    x = list(range(len(rows)))
    ax.bar(
        x,
        [r["io_core_hours"] or 0 for r in rows],
        width=0.5,
        color="#c6dbef",
        label="I/O core-hours (left)",
    )
    ax.set_ylabel("I/O core-hours", fontsize=9)
    ax.yaxis.set_major_formatter(_thousands())
    _month_ticks(ax, [r["month"] for r in rows])  # at most 12 labels: 24 months overlapped
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    tp = ax.twinx()
    p10 = [_nan(r.get("throughput_p10_mib_s")) for r in rows]
    p50 = [_nan(r.get("throughput_p50_mib_s")) for r in rows]
    p90 = [_nan(r.get("throughput_p90_mib_s")) for r in rows]
    tp.fill_between(x, p10, p90, color="#fd8d3c", alpha=0.18, label="throughput p10-p90 (right)")
    tp.plot(x, p10, color="#fd8d3c", lw=0.8)
    tp.plot(x, p90, color="#fd8d3c", lw=0.8)
    tp.plot(x, p50, color="#d94801", marker="o", ms=5, lw=2, label="throughput p50 (right)")
    tp.set_ylabel("MiB/s", fontsize=9)
    tp.tick_params(axis="y", labelsize=8)
    tp.yaxis.set_major_formatter(_thousands())
    tp.set_ylim(bottom=0)
    bars, labels = ax.get_legend_handles_labels()
    lines, more = tp.get_legend_handles_labels()
    ax.legend(
        bars + lines,
        labels + more,
        loc="lower left",
        bbox_to_anchor=(0, 1.01),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def draw_runs(runs: pd.DataFrame, regs: list[dict], tags: list[dict] | None = None) -> str | None:
    """An application's runs over time (UMAMI-style, pytokio's run-over-time view): each run's
    bandwidth (gold/app_runs.bandwidth_mib_s, log scale) at its start; the runs gold/regressions
    flagged marked red (the application) or orange (the file system's weather), with the
    baseline they were compared against when the metric is the bandwidth; under it, one strip
    per tag of `tags` (`run_tags`) with a tick at the start of each run it fired on. None
    without a bandwidth to draw."""
    df = runs[runs["bandwidth_mib_s"].notna() & (runs["bandwidth_mib_s"] > 0)]
    if not len(df):
        return None
    tags = tags or []
    rows = 0.24 * len(tags)  # inches of the tag strip
    strip = rows + (0.1 if tags else 0.0)  # and its gap to the plot
    height = 3.4 + strip
    fig = figure(10.5, height)
    bottom = 0.476 + strip  # the date labels' 0.476 in (0.14 of 3.4 in) under the lowest axes
    ax = fig.add_axes((0.08, bottom / height, 0.7, 2.448 / height))
    # datetime64 arrays, not Timestamps: matplotlib converts an array at once, a list one by one
    x = _naive_times(df["start"])
    ax.scatter(x, df["bandwidth_mib_s"], s=14, color="#6baed6", label="run", zorder=2)
    by_log = dict(zip(df["log_id"], df["bandwidth_mib_s"]))
    flagged: dict[bool, tuple[list, list]] = {False: ([], []), True: ([], [])}
    base_t, base_y = [], []
    for r in regs:  # collected first, drawn in one call per kind (an app may have hundreds)
        y = by_log.get(r.get("log_id"))
        if r["metric"] == "bandwidth_mib_s":
            y = r["value"]
        if y is None or not y > 0:
            continue
        t = pd.Timestamp(r["start"]).tz_localize(None)
        ts, vs = flagged[r["verdict"] == "file system"]
        ts.append(t)
        vs.append(y)
        if r["metric"] == "bandwidth_mib_s" and r.get("baseline") and r["baseline"] > 0:
            base_t.append(t)
            base_y.append(r["baseline"])
    for weather, (ts, vs) in flagged.items():
        if ts:
            ax.scatter(
                ts,
                vs,
                s=70,
                marker="v",
                color="#fd8d3c" if weather else "#cb181d",
                edgecolor="black",
                linewidth=0.5,
                zorder=3,
                label="flagged: file system" if weather else "flagged: application",
            )
    if base_t:
        ax.plot(
            base_t,
            base_y,
            linestyle="none",
            marker="_",
            ms=14,
            mew=2,
            color="#444444",
            zorder=3,
            label="its baseline",
        )
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.ticker import LogLocator

    ax.set_yscale("log")
    ys = [float(df["bandwidth_mib_s"].min()), float(df["bandwidth_mib_s"].max())] + [
        float(r[k]) for r in regs if r["metric"] == "bandwidth_mib_s" for k in ("value", "baseline")
        if r.get(k) and r[k] > 0
    ]  # fmt: skip
    ax.set_ylim(min(ys) / 1.6, max(ys) * 1.6)  # the runs in the middle, one run too
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(_thousands())
    ax.yaxis.set_minor_formatter(_thousands() if _decades(ax) < 1 else "")
    # a twentieth of the span each side (at least a minute): the first and last runs off the frame
    pad = max((x.max() - x.min()) / 20, pd.Timedelta(minutes=1))
    ax.set_xlim(x.min() - pad, x.max() + pad)
    locator = AutoDateLocator(minticks=3, maxticks=9)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    ax.set_ylabel("bandwidth, MiB/s", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if tags:
        _tag_strip(fig, ax, runs, tags, 0.476 / height, rows / height)
    return _png(fig)


def _tag_strip(fig, ax, runs: pd.DataFrame, tags: list[dict], y0: float, h: float) -> None:
    """The tags under the runs plot `ax`: a row per tag (its name and run count on the right), a
    tick at the start of each run it fired on, sharing the plot's time axis (which moves its date
    labels down to the strip)."""
    starts = pd.Series(_naive_times(runs["start"]), index=runs["log_id"].to_numpy())
    starts = starts[~starts.index.duplicated(keep="last")]  # a log_id's last row, as dict() did
    st = fig.add_axes((0.08, y0, 0.7, h), sharex=ax)
    colors = ["#6a51a3", "#238b45", "#d94801", "#2171b5", "#737373"]
    for i, t in enumerate(tags):
        ts = starts.reindex(t["log_ids"]).dropna().to_numpy()
        y = len(tags) - 1 - i
        st.plot(ts, [y] * len(ts), linestyle="none", marker="|", ms=9, mew=1.2,
                color=colors[i % len(colors)])  # fmt: skip
    st.set_ylim(-0.6, len(tags) - 0.4)
    st.set_yticks(range(len(tags)))
    st.set_yticklabels([f"{t['tag']} ({t['runs']:,})" for t in reversed(tags)], fontsize=7.5)
    st.yaxis.tick_right()
    st.tick_params(axis="y", length=0)
    st.tick_params(axis="x", labelsize=8)
    st.grid(axis="x", alpha=0.3)
    for side in ("top", "right", "left"):
        st.spines[side].set_visible(False)
    ax.tick_params(axis="x", labelbottom=False)


def _naive_times(starts: pd.Series) -> np.ndarray:
    """Run starts as a datetime64 array in UTC without its zone (the axes' dates)."""
    return pd.to_datetime(starts).dt.tz_localize(None).to_numpy()


def _decades(ax) -> float:
    lo, hi = ax.get_ylim()
    return math.log10(hi / lo) if lo > 0 and hi > lo else 0.0


def _nan(v) -> float:
    return float("nan") if v is None or pd.isna(v) else float(v)


# ---- the pages ------------------------------------------------------------------------------
def core_hours(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}" if abs(x) >= 1 else f"{x:.3g}"


def share(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{100 * float(x):.1f}%"


def mib_s(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{float(x):,.1f}"


def count(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{int(x):,}"


def si(x) -> str:
    """A large count in SI units (12.3 M, 4.56 G); the exact value is the cell's title."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    x = float(x)
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if abs(x) >= size:
            return f"{x / size:,.3g} {unit}"
    return f"{int(x):,}"


def _env():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from apps.summary_sections import human_bytes

    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # every value reaches the page HTML-escaped
        undefined=StrictUndefined,
    )
    env.filters.update(
        ch=core_hours, share=share, mib=mib_s, count=count, si=si, hbytes=human_bytes
    )
    return env


def build(
    data: dict,
    top: int = TOP_N,
    since: str | None = None,
    until: str | None = None,
    drawings: Drawings | None = None,
) -> dict:
    """Everything the main page shows, from `load`'s frames. Its figures are added to `drawings`
    and in the page once it is rendered; without `drawings`, drawn here before returning."""
    own = drawings is None
    drawings = Drawings(workers=1) if own else drawings
    am = data[REQUIRED]
    months = month_range(sorted(am["month"].unique())) if len(am) else []
    apps = ranking(am, "app", top) if len(am) else None
    users = ranking(am, "uid", top) if len(am) else None
    total_io = apps["total"]["io_core_hours"] if apps else 0.0
    page: dict = {
        "since": since,
        "until": until,
        "months": months,
        "top": top,
        "docs": DOCS,
        "build": BUILD,
        "apps": apps,
        "users": users,
        "missing": {n: data[n] is None for n in MARTS},
        "figure_notes": [],
        **dict.fromkeys(("regressions", "ledger", "fs", "health", "drift"), None),
    }
    if apps:
        keys = [r["app"] for r in apps["rows"][:PLOTTED]]
        _later(drawings, page, "apps_png", draw_trend, trend(am, "app", keys, months), IO_CH)
        ukeys = [r["uid"] for r in users["rows"][:PLOTTED]]
        _later(drawings, page, "users_png", draw_trend, trend(am, "uid", ukeys, months), IO_CH)
        reg = am.groupby("app").agg(
            regressions=("regressions", "sum"), runs=("runs", "sum"), months=("month", "nunique")
        )
        reg = reg[reg["regressions"] > 0].reset_index()
        reg = reg.sort_values(["regressions", "app"], ascending=[False, True], kind="mergesort")
        rows = reg.to_dict("records")
        for r in rows[:top]:
            r["slug"] = slug(r["app"])
            hit = am[(am["app"] == r["app"]) & (am["regressions"] > 0)]
            r["in_months"] = ", ".join(
                f"{m} ({int(n)})" for m, n in sorted(zip(hit["month"], hit["regressions"]))
            )
        page["regressions"] = {
            "rows": rows[:top],
            "more": max(0, len(rows) - top),
            "total": int(reg["regressions"].sum()),
        }
    page["efficiency"] = efficiency_rows(am) if len(am) else None
    page["efficiency_min_runs"] = EFFICIENCY_MIN_RUNS
    regs = regression_rows(data.get("regressions"))
    page["missing_regressions"] = data.get("regressions") is None
    page["regression_rows"] = regs[:REGRESSIONS_SHOWN]
    page["regression_rows_more"] = max(0, len(regs) - REGRESSIONS_SHOWN)
    page["regression_rows_total"] = len(regs)
    page["weather_counts"] = {
        v: sum(r["verdict"] == v for r in regs)
        for v in ("application", "application?", "file system", "unknown")
    }
    tc = data["fleet_tag_cost"]
    if tc is not None:
        ledger = tag_ledger(tc, total_io)
        page["ledger"] = ledger
        page["ledger_png"] = None
        if ledger:
            _later(drawings, page, "ledger_png", draw_ledger, ledger)
    fs = data["fleet_fs_day"]
    if fs is not None:
        mounts = fs_mounts(fs, top) if len(fs) else {"rows": [], "more": 0}
        page["fs"] = mounts
        page["fs_png"] = None
        if len(fs):
            _later(
                drawings, page, "fs_png", draw_fs, fs, [m["mount_point"] for m in mounts["rows"]]
            )
    h = data["fleet_health"]
    if h is not None:
        rows = health_rows(h)
        page["health"] = {
            "rows": rows[:HEALTH_NIGHTS],
            "more": max(0, len(rows) - HEALTH_NIGHTS),
            "total": {
                c: int(h[c].sum())
                for c in ("logs", "ok", "partial", "quarantined", "suspect", "runs", "failed_runs")
            },
        }
        page["health_png"] = None
        if len(h):
            _later(drawings, page, "health_png", draw_health, h)
    d = data["fleet_drift"]
    if d is not None:
        page["drift"] = drift_rows(d)
        dmonths = month_range(sorted(d["month"].unique())) if len(d) else []
        page["drift_png"] = None
        if len(d):
            _later(drawings, page, "drift_png", draw_drift, d, dmonths)
    updated = [
        data[n]["updated_at"].max()
        for n in MARTS
        if data[n] is not None and len(data[n]) and "updated_at" in data[n]
    ]
    page["updated"] = max(updated).strftime("%Y-%m-%d %H:%M UTC") if updated else None
    page["generated"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if own:
        drawings.render()
    return page


def app_page(
    app: str,
    rows: list[dict],
    tags: list[dict],
    plot: bool = True,
    regs: list[dict] | None = None,
    runs: pd.DataFrame | None = None,
    tagged: pd.DataFrame | None = None,
    drawings: Drawings | None = None,
    window: list[str] | None = None,
) -> dict:
    """What an application's page shows: its months (its `app_months` rows), its totals, its
    tags' cost (its `app_ledgers` rows), its regressions (`regression_rows` of the app); the
    plots only when `plot`; its runs over time and the lists of its recent and slowest runs when
    `runs` (its gold/app_runs rows, `load_runs`) is given, with its most frequent tags marked
    under the plot from `tagged` (its runs' tags, `load_run_tags`); `window`: the months those
    runs were read from (`run_window`; None: every month of `rows`). The plots are added to
    `drawings` (in the page once it is rendered); without it, drawn here."""
    own = drawings is None
    drawings = Drawings(workers=1) if own else drawings
    first = rows[0]
    regs = regs or []
    marked = run_tags(tagged) if runs is not None and len(runs) else []
    listed = (
        run_lists(runs, {r["log_id"] for r in regs if r.get("log_id")})
        if runs is not None
        else None
    )
    months = sorted(r["month"] for r in rows)
    window = sorted(window) if window else months
    shown = set(window)
    every_month = shown >= set(months)
    total = _row_totals(rows)
    page = {
        "regs": regs,
        "runs": listed,
        "runs_window": {
            "first": window[0] if window else None,
            "last": window[-1] if window else None,
            "every_month": every_month,
            "in_period": int(total["runs"] - total["suspect_runs"]),
            "at_least": RUNS_WINDOW,
        },
        "runs_png": None,
        "run_tags": [{k: t[k] for k in ("tag", "runs")} for t in marked],
        "app": app,
        "exe_name": first.get("exe_name"),
        "uid": None if pd.isna(first.get("uid")) else int(first["uid"]),
        "rows": rows,
        "total": total,
        "tags": tags,
        "png": None,
        "plotted": plot,
        "figure_notes": [],
        "docs": DOCS,
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
    if plot and runs is not None and len(runs):
        # the flagged runs of the months drawn: the x axis is the window's
        drawn = (
            regs
            if every_month
            else [r for r in regs if pd.Timestamp(r["start"]).strftime("%Y-%m") in shown]
        )
        _later(drawings, page, "runs_png", draw_runs, runs, drawn, marked)
    if plot:
        _later(drawings, page, "png", draw_app, rows)
    if own:
        drawings.render()
    return page


def write(
    conf, out: str | None = None, since=None, until=None, top: int = TOP_N, reports: int = 0
) -> Path:
    """Write OUT/index.html and one OUT/apps/<slug>.html per application; with `reports` > 0,
    also the `iolake report` pages of the first `reports` jobs the pages link to (`linked_jobs`)
    into OUT/jobs/<log_id>.html. Returns the index."""
    check_month(since, "--since")
    check_month(until, "--until")
    if since and until and since > until:
        raise ValueError(f"--since {since} is after --until {until}")
    if top < 1:
        raise ValueError(f"--top {top}: give at least 1")
    if reports < 0:
        raise ValueError(f"--reports {reports}: give 0 or more")
    preload()  # matplotlib loads while the marts are read
    reader = FleetReader(conf)
    data = load(reader, since, until)
    drawings = Drawings()  # every figure of every page, drawn at once (apps/drawing.py)
    page = build(data, top, since, until, drawings)
    page["lake"] = reader.lake
    env = _env()
    root = Path(out or "fleet")
    (root / "apps").mkdir(parents=True, exist_ok=True)
    am, tc = data[REQUIRED], data["fleet_tag_cost"]
    costs = app_ledgers(tc, am.groupby("app")["io_core_hours"].sum().to_dict())
    plotted = linked(page)
    window = run_window(am, plotted)
    runs = load_runs(reader, window)
    tagged = load_run_tags(reader, runs, sorted({m for ms in window.values() for m in ms}))
    regs_by_app: dict[str, list[dict]] = {}
    for r in regression_rows(data.get("regressions")):
        regs_by_app.setdefault(r["app"], []).append(r)
    pages = [
        app_page(
            app,
            rows,
            costs.get(app, []),
            plot=app in plotted,
            regs=regs_by_app.get(app),
            runs=runs.get(app),
            tagged=tagged.get(app),
            drawings=drawings,
            window=window.get(app),
        )
        for app, rows in app_months(am).items()
    ]
    drawings.render()
    order = {r["app"]: i for i, r in enumerate((page.get("apps") or {}).get("rows", []))}
    ranked = sorted(pages, key=lambda a: (order.get(a["app"], len(order)), a["app"]))
    jobs = render_reports(conf, linked_jobs(page, ranked), root / "jobs", reports)
    page["reports"] = len(jobs)
    index = root / "index.html"
    index.write_text(env.get_template("fleet.html.j2").render(p=page, jobs=jobs), encoding="utf-8")
    tmpl = env.get_template("fleet_app.html.j2")
    for a in pages:
        (root / "apps" / f"{slug(a['app'])}.html").write_text(
            tmpl.render(a=a, lake=reader.lake, top=top, jobs=jobs), encoding="utf-8"
        )
    return index


def linked(page: dict) -> set[str]:
    """The applications the main page links to (its rankings, regressions and ledger): the pages
    that get a plot. Drawing one per application would cost a second for every few applications
    of a large lake; the others' figures are in their table."""
    apps = {r["app"] for r in (page.get("apps") or {}).get("rows", [])}
    apps |= {r["app"] for r in (page.get("regressions") or {}).get("rows", [])}
    apps |= {r["top_app"] for r in page.get("ledger") or [] if r["top_app"] is not None}
    return apps


def main(conf, out=None, since=None, until=None, top: int = TOP_N, reports: int = 0) -> int:
    """`iolake fleet [--out DIR] [--since YYYY-MM] [--until YYYY-MM] [--top N] [--reports N]`."""
    try:
        index = write(conf, out, since, until, top, reports)
    except ValueError as e:
        print(f"iolake fleet: {e}", file=sys.stderr)
        return 2
    print(f"iolake fleet: wrote {index} and its application pages in {index.parent / 'apps'}")
    if reports:
        print(f"iolake fleet: job report pages in {index.parent / 'jobs'}")
    return 0


__all__ = [
    "FleetReader",
    "MartMissing",
    "app_page",
    "build",
    "fs_mounts",
    "linked_jobs",
    "load",
    "load_regressions",
    "load_runs",
    "load_run_tags",
    "run_window",
    "run_tags",
    "main",
    "regression_rows",
    "render_reports",
    "ranking",
    "slug",
    "tag_ledger",
    "trend",
    "weather_verdict",
    "write",
]
