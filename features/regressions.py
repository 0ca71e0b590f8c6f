"""Regression watch: each application's I/O performance against its own history.

Byna's SNTA 2022 keynote (`../shared/seeds/001_6ca4f8188916750c.txt`) asks two things of a
centre's job history. UMAMI ("meaningful metrics for understanding I/O load", after Lockwood,
Snyder et al., PDSW-DISCS'17): place each run against "historical measurements of the same
application" with "plots to show variance of current values". And "Quantitatively bound
long-term problems": "numerically distinguish time-dependent variation" with "simple moving
averages (SMAs) from financial market technical analysis", flagging "where short-term average
performance diverges from overall average" (the example: a bug in one file-system client
version). pytokio's UMAMI (`tokio/analysis/umami.py`) draws the history and colours today's value
by its quartile but raises no alarm; the rules here do.

Two halves:

* **pandas / numpy** (no Spark): the detectors on one application's series of one metric
  (`score_series`), the whole history table -> flagged rows with the "weather" flag
  (`find_regressions`), and the UMAMI panel's data (`umami_panel`). `iolake watch --history FILE`
  uses them on a centre's own table; the `watch` stage uses the very same functions on
  `gold/app_runs`, so both give the same alarms.
* **Spark column expressions** (`app_runs`): silver/job_features + the job's file system ->
  gold/app_runs rows (the application key and the metrics).

Every detector works on y = log(value), negated for metrics where higher is worse, so "worse" is
always "y went down" and a relative change is a difference of logs. A run's value that is not
positive (no I/O) is not part of the series. Each rule compares a *short* window (the last
`short_window` runs, the run at hand included) with a *baseline*: the up to `long_window` runs
before the short window, counted from the rule's *origin* (the first run, or the start of the
last change it flagged). No rule alarms before the baseline holds `min_history` runs. After an
alarm a rule re-arms from the changed level (its origin moves to the change), so one change is
one alarm — "since when" — not an alarm on every later run of a regressed application. Meanwhile
(`watch.further_drop`) it watches the regressed level itself: a second drop while the first is
still unresolved is a second alarm, its baseline the regressed runs (without it, a drop that lands while an
earlier one is unresolved goes unseen).

Rules (thresholds are named settings, conf `watch:`; `threshold_name` in gold/regressions):

* `sma` (UMAMI / keynote, SMA cross): mean of y over the short window against the mean of y
  over the baseline (geometric means of the values); alarm when
  exp(short - long) - 1 <= -`watch.sma.drop`.
* `robust_z` (median / MAD z-score over a trailing window): z = (median of the short window -
  median of the baseline) / max(1.4826 * MAD of the baseline, `watch.robust_z.scale_floor`);
  alarm when z <= -`watch.robust_z.z` and the medians' relative change <= -`watch.robust_z.min_drop`.
* `cusum` (one-sided CUSUM on robust z-scores): z_t = clip((y_t - baseline median) / scale,
  ±`watch.cusum.clip`), C_t = min(0, C_{t-1} + z_t + `watch.cusum.k`); alarm when
  C_t <= -`watch.cusum.h`. The run where C left 0 is the change's start.
* `glr` (window-limited generalized likelihood ratio for a step of unknown size; Willsky & Jones,
  IEEE TAC 1976; Lai, JRSS-B 1995): with the same clipped z-scores (±`watch.glr.clip`), the
  statistic G_t = min over w = 1..`short_window` of (z_{t-w+1} + ... + z_t) / sqrt(w) — for
  Gaussian z, minus the square root of twice the log-likelihood ratio of "the level moved w runs
  ago" against "no change", maximised over where the change began; alarm when
  G_t <= -`watch.glr.h`. The minimising window's first run is the change's start. Unlike CUSUM it
  needs no assumed shift size (CUSUM's k tunes it to one), which is why it catches more drops
  within the short window than CUSUM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

MAD_TO_SD = 1.4826
RULES = ("sma", "robust_z", "cusum", "glr")
THRESHOLD_NAME = {
    "sma": "watch.sma.drop",
    "robust_z": "watch.robust_z.z",
    "cusum": "watch.cusum.h",
    "glr": "watch.glr.h",
}
# gold/regressions columns (schemas/regressions.py) in order; `iolake watch --out` writes these
REGRESSION_COLUMNS = (
    "app",
    "start",
    "log_id",
    "metric",
    "value",
    "baseline",
    "change",
    "rule",
    "threshold_name",
    "threshold",
    "score",
    "since",
    "baseline_runs",
    "baseline_first",
    "baseline_last",
    "fs",
    "weather",
    "weather_peers",
    "weather_dropped",
)


@dataclass(frozen=True)
class Params:
    """The detector settings, flat (conf `watch:` -> `Params.from_conf`); usable without a Config."""

    short_window: int = 5
    long_window: int = 30
    min_history: int = 10
    sma_drop: float = 0.25
    robust_z: float = 2.0
    robust_min_drop: float = 0.25
    robust_scale_floor: float = 0.05
    cusum_k: float = 0.75
    cusum_h: float = 6.0
    cusum_clip: float = 3.0
    cusum_scale_floor: float = 0.05
    glr_h: float = 3.3
    glr_clip: float = 2.0
    glr_scale_floor: float = 0.05
    recover: float = 0.1
    rebase_rise: float = 0.5
    further_drop: bool = True

    @classmethod
    def from_conf(cls, w) -> Params:
        return cls(
            short_window=w.short_window,
            long_window=w.long_window,
            min_history=w.min_history,
            sma_drop=w.sma.drop,
            robust_z=w.robust_z.z,
            robust_min_drop=w.robust_z.min_drop,
            robust_scale_floor=w.robust_z.scale_floor,
            cusum_k=w.cusum.k,
            cusum_h=w.cusum.h,
            cusum_clip=w.cusum.clip,
            cusum_scale_floor=w.cusum.scale_floor,
            glr_h=w.glr.h,
            glr_clip=w.glr.clip,
            glr_scale_floor=w.glr.scale_floor,
            recover=w.recover,
            rebase_rise=w.rebase_rise,
            further_drop=w.further_drop,
        )

    def threshold(self, rule: str) -> float:
        return {
            "sma": self.sma_drop,
            "robust_z": self.robust_z,
            "cusum": self.cusum_h,
            "glr": self.glr_h,
        }[rule]


def orient(values, worse: str = "lower") -> np.ndarray:
    """y = log(value) (negated when higher is worse); NaN where the value is not positive."""
    v = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(v > 0, np.log(np.where(v > 0, v, 1.0)), np.nan)
    if worse == "higher":
        y = -y
    elif worse != "lower":
        raise ValueError(f"worse must be 'lower' or 'higher', got {worse!r}")
    return y


def _median(a: np.ndarray | list) -> float:
    """`np.median` of a short 1-D window without NaN (the rules' windows): the middle value, or the
    mean of the two middle ones, as `np.median` computes it. The detectors take a few medians per
    run of every application's history: `np.median`'s per-call overhead was most of the watch
    stage's time on a large lake (docs/benchmarks.md, night_ab)."""
    s = sorted(a if isinstance(a, list) else a.tolist())
    n = len(s)
    if not n:
        return math.nan
    h = n >> 1
    return s[h] if n & 1 else (s[h - 1] + s[h]) / 2.0


def _mad_scale(base: np.ndarray, med: float, floor: float) -> float:
    return max(MAD_TO_SD * _median([abs(v - med) for v in base.tolist()]), floor)


def _scale_floor(rule: str, p: Params) -> float:
    return {"cusum": p.cusum_scale_floor, "glr": p.glr_scale_floor}.get(rule, p.robust_scale_floor)


def _step(
    rule: str,
    y: np.ndarray,
    t: int,
    lo_short: int,
    base: np.ndarray,
    p: Params,
    cusum: list,
    scale: float | None = None,
) -> tuple[float, float, bool, int]:
    """One rule on run t against `base` (the baseline runs): (level, score, hit, since).
    `cusum` holds [C, start] across runs. `scale`: the baseline spread to use instead of base's own
    (a regressed level's few runs do not measure the noise; the held baseline's spread does)."""
    if rule == "sma":
        level = float(base.mean())
        score = math.exp(float(y[lo_short : t + 1].mean()) - level) - 1.0
        return level, score, score <= -p.sma_drop, lo_short
    level = _median(base)
    sd = scale if scale is not None else _mad_scale(base, level, _scale_floor(rule, p))
    if rule == "robust_z":
        short = _median(y[lo_short : t + 1])
        score = (short - level) / sd
        return (
            level,
            score,
            score <= -p.robust_z and math.exp(short - level) - 1.0 <= -p.robust_min_drop,
            lo_short,
        )
    if rule == "cusum":
        z = min(max((y[t] - level) / sd, -p.cusum_clip), p.cusum_clip)
        c = min(0.0, cusum[0] + z + p.cusum_k)
        if c < 0 and cusum[0] == 0:
            cusum[1] = t
        cusum[0] = c
        if c == 0:
            cusum[1] = None
        return level, c, c <= -p.cusum_h, cusum[1]
    if rule == "glr":
        # newest first: z clipped, g[w] = (z[0] + .. + z[w]) / sqrt(w + 1) for a change that began
        # w runs ago; the smallest g, the first of equal ones. A loop over the short window: numpy's
        # per-call cost was most of the watch stage on a large lake (the same sums, in the same order)
        best, w, c = math.inf, 0, 0.0
        for i, v in enumerate(reversed(y[lo_short : t + 1].tolist())):
            z = min(max((v - level) / sd, -p.glr_clip), p.glr_clip)
            c = z if i == 0 else c + z
            g = c / math.sqrt(i + 1)
            if g < best:
                best, w = g, i
        return level, best, best <= -p.glr_h, t - w
    raise ValueError(f"unknown rule {rule!r} (rules: {', '.join(RULES)})")


def _spread(rule: str, base: np.ndarray, p: Params) -> float:
    return _mad_scale(base, _median(base), _scale_floor(rule, p))


def _regressed_from(rule: str, since: int, t: int, short_window: int) -> int:
    """First run of the regressed level an alarm at t found: for cusum where C left 0, for glr its
    window's first run; for the window rules the later half of the short window (a window's
    median or mean drops once about half of it has), so runs from before the change do not set
    the regressed level."""
    return since if rule in ("cusum", "glr") else max(since, t - short_window // 2)


def detect(y: np.ndarray, rule: str, p: Params, stop: int | None = None) -> list[dict]:
    """Alarms of one rule on one oriented series y (no NaN), runs 0..stop-1.

    Each alarm: `t` (index of the run), `score` (the rule's statistic), `base` (baseline level in
    y), `base_from`, `base_to` (first and last index of the baseline runs), `since` (index where
    the change starts: the short window's first run; for cusum where C left 0, for glr the
    first run of its window), `further` (whether the run was already regressed and got worse
    again).

    After an alarm the rule holds its baseline and raises nothing more for the same change while
    the application is regressed. It re-arms when the short window's median is back within
    `recover` of the held baseline (a transient drop: the baseline goes on trailing), or once the
    changed level has `min_history` runs of its own (a lasting change: the baseline restarts at the
    change). With `further_drop` on, a regressed application that drops again — the same rule
    against the regressed runs so far, with the held baseline's spread — alarms again ("got worse
    again"), so an application that was slow for a while is not blind to a new drop meanwhile.
    A short window whose median is more than `rebase_rise` above the baseline's (1.0: twice as
    good) restarts the baseline there too, so a baseline never mixes two levels far apart (a long
    outage followed by the recovery) — its MAD would then hide any later drop.
    """
    n = len(y) if stop is None else min(stop, len(y))
    s, big, mh = p.short_window, p.long_window, p.min_history
    out: list[dict] = []
    origin = 0
    cusum: list = [0.0, None]
    held = None  # (level, since, spread, t of the last alarm, first regressed run) while regressed
    for t in range(n):
        lo_short = t - s + 1
        if held is not None:
            level, since, spread, t_alarm, ref_from = held
            if lo_short - since >= mh:  # a lasting change: learn the new level
                origin, held, cusum = since, None, [0.0, None]
            elif math.exp(_median(y[max(lo_short, since) : t + 1]) - level) - 1.0 > -p.recover:
                held, cusum = None, [0.0, None]  # back to normal: the baseline goes on trailing
            elif not p.further_drop or t <= t_alarm:
                continue
            else:  # still regressed: watch for a further drop below the regressed level
                reg_to = max(lo_short, t_alarm + 1)
                lvl, score, hit, start = _step(
                    rule,
                    y,
                    t,
                    reg_to if rule != "cusum" else lo_short,
                    y[ref_from:reg_to],
                    p,
                    cusum,
                    spread,
                )
                if hit:
                    start = start if rule in ("cusum", "glr") and start is not None else reg_to
                    out.append(
                        {
                            "t": t,
                            "score": score,
                            "base": lvl,
                            "base_from": ref_from,
                            "base_to": reg_to - 1,
                            "since": start,
                            "further": True,
                        }
                    )
                    held, cusum = (
                        (level, start, spread, t, _regressed_from(rule, start, t, s)),
                        [0.0, None],
                    )
                continue
        hi = lo_short  # baseline: [max(origin, hi - big), hi)
        lo = max(origin, hi - big)
        if hi - lo < mh or lo_short < origin:
            continue
        base = y[lo:hi]
        if (
            p.rebase_rise > 0
            and math.exp(_median(y[lo_short : t + 1]) - _median(base)) - 1.0 >= p.rebase_rise
        ):
            origin, cusum = (
                lo_short,
                [0.0, None],
            )  # a much better level (e.g. the end of a long outage):
            continue  # learn it rather than mix two levels in one baseline
        level, score, hit, since = _step(rule, y, t, lo_short, base, p, cusum)
        if hit:
            out.append(
                {
                    "t": t,
                    "score": score,
                    "base": level,
                    "base_from": lo,
                    "base_to": hi - 1,
                    "since": since,
                    "further": False,
                }
            )
            held = (
                _median(base),
                since,
                _spread(rule, base, p),
                t,
                _regressed_from(rule, since, t, s),
            )
            cusum = [0.0, None]
    return out


def trailing_change(y: np.ndarray, p: Params) -> np.ndarray:
    """Each run's change against the median of the up to `long_window` runs before it
    (exp(y_t - median) - 1; NaN before run `min_history`): whether a run "dropped", for the
    weather flag. No re-arming: it describes runs, it raises nothing. The medians are one rolling
    median over the series (pandas', the middle value or the mean of the two middle ones, as
    `_median`), not one per run."""
    out = np.full(len(y), np.nan)
    first = max(p.min_history, 1)  # run 0 has no run before it
    if len(y) > first:
        med = pd.Series(y).rolling(p.long_window, min_periods=1).median().to_numpy()
        out[first:] = np.expm1(y[first:] - med[first - 1 : -1])
    return out


def _series_alarms(g: pd.DataFrame, metric: str, worse: str, rules, p: Params) -> list[dict]:
    y = orient(g[metric].to_numpy(), worse)
    ok = ~np.isnan(y)
    g, y = g[ok], y[ok]
    if len(g) == 0:
        return []
    starts = g["start"].array  # Timestamps where an alarm needs one, not an object array of all
    vals = g[metric].to_numpy(dtype=float)
    sign = -1.0 if worse == "higher" else 1.0
    found: dict[int, dict] = {}
    for rule in rules:
        for a in detect(y, rule, p):
            if (
                a["t"] in found
            ):  # one row per (job, metric): the first rule in `rules` order names it
                continue
            t = a["t"]
            baseline = math.exp(sign * a["base"])
            found[t] = {
                "row": t,
                "metric": metric,
                "value": float(vals[t]),
                "baseline": baseline,
                "change": float(vals[t]) / baseline - 1.0,
                "rule": rule,
                "threshold_name": THRESHOLD_NAME[rule],
                "threshold": p.threshold(rule),
                "score": float(a["score"]),
                "since": starts[a["since"]],
                "baseline_runs": a["base_to"] - a["base_from"] + 1,
                "baseline_first": starts[a["base_from"]],
                "baseline_last": starts[a["base_to"]],
            }
    rows = []
    idx = g.index.to_numpy()
    for t, r in sorted(found.items()):
        r["_index"] = idx[t]
        rows.append(r)
    return rows


def normalize_history(df: pd.DataFrame, metrics) -> pd.DataFrame:
    """`app`, `start` (UTC timestamps; from epoch seconds or ISO 8601), the metrics, and `fs`,
    `log_id` when present; sorted by app, start (then log_id) — the order every rule reads. The
    sort is Arrow's stable one, nulls first: the order of pandas' mergesort on the same keys, at a
    fraction of its time on string keys."""
    missing = [c for c in ("app", "start", *metrics) if c not in df.columns]
    if missing:
        raise ValueError(
            f"history: missing column(s) {', '.join(missing)} (have: {', '.join(map(str, df.columns))})"
        )
    out = pd.DataFrame({"app": df["app"].astype(str)})
    start = df["start"]
    if pd.api.types.is_numeric_dtype(start):
        out["start"] = pd.to_datetime(start.astype(float), unit="s", utc=True)
    else:
        out["start"] = pd.to_datetime(
            start, utc=True, format="mixed" if start.dtype == object else None
        )
    for m in metrics:
        out[m] = pd.to_numeric(df[m], errors="coerce").astype(float)
    out["fs"] = (
        df["fs"].astype(object).where(df["fs"].notna(), None) if "fs" in df.columns else None
    )
    out["log_id"] = (
        df["log_id"].astype(object).where(df["log_id"].notna(), None)
        if "log_id" in df.columns
        else None
    )
    keys = ["app", "start"] + (["log_id"] if "log_id" in df.columns else [])
    order = pc.sort_indices(
        pa.Table.from_pandas(out[keys], preserve_index=False),
        sort_keys=[(k, "ascending", "at_start") for k in keys],
    )
    return out.take(order.to_numpy()).reset_index(drop=True)


def find_regressions(
    history: pd.DataFrame,
    metrics: list[tuple[str, str]],
    rules,
    p: Params,
    weather_window_s: float,
    weather_drop: float,
    weather_share: float,
    weather_min_peers: int,
) -> pd.DataFrame:
    """Flagged (job, metric) rows, `REGRESSION_COLUMNS`, from a history table.

    `metrics`: (column, worse) pairs, worse = "lower" | "higher". Weather: the other applications
    on the same `fs` with a run of the metric within ±`weather_window_s` of the flagged run; a peer
    run "dropped" when its change against its own trailing median is at least `weather_drop` the
    worse way. `weather` is true when at least `weather_min_peers` peers ran then and at least
    `weather_share` of them dropped: the file system's weather rather than the application.
    No `fs` column (an external history without it): `weather` is null.
    """
    h = normalize_history(history, [m for m, _ in metrics])
    rows = []
    weather_runs = []
    for metric, worse in metrics:
        for app, g in h.groupby("app", sort=True):
            rows += _series_alarms(g, metric, worse, rules, p)
            y = orient(g[metric].to_numpy(), worse)
            ok = ~np.isnan(y)
            ch = trailing_change(y[ok], p)
            sub = g[ok]
            weather_runs.append(
                pd.DataFrame(
                    {
                        "metric": metric,
                        "app": app,
                        "fs": sub["fs"].to_numpy(),
                        "t": sub["start"].to_numpy("datetime64[ns]").view("int64"),  # UTC
                        "dropped": ch <= -weather_drop,
                        "known": ~np.isnan(ch),
                    }
                )
            )
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in REGRESSION_COLUMNS})
    r = pd.DataFrame(rows)
    base = h.loc[r["_index"], ["app", "start", "log_id", "fs"]].reset_index(drop=True)
    out = pd.concat([base, r.drop(columns=["_index", "row"]).reset_index(drop=True)], axis=1)
    wr = pd.concat(weather_runs, ignore_index=True)
    wr = wr[wr["known"] & wr["fs"].notna()]
    peers, dropped, weather = [], [], []
    win = pd.Timedelta(seconds=weather_window_s).value
    # The peer runs of each (metric, fs) sorted by start: a flagged run's window is two binary
    # searches, not a scan of every run of the lake (watch runs this on whole histories).
    near = {}
    code = {a: i for i, a in enumerate(pd.unique(wr["app"]))}  # peers counted as integer codes
    for key, g in wr.groupby(["metric", "fs"], sort=False):
        g = g.sort_values("t", kind="mergesort")
        near[key] = (
            g["t"].to_numpy(),
            g["app"].map(code).to_numpy(dtype=np.int64),
            g["dropped"].to_numpy(dtype=bool),
        )
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    for row in out.itertuples(index=False):
        if row.fs is None or (isinstance(row.fs, float) and math.isnan(row.fs)):
            peers.append(None), dropped.append(None), weather.append(None)
            continue
        t, apps, drop = near.get((row.metric, row.fs), empty)
        at = row.start.value
        lo, hi = np.searchsorted(t, at - win, "left"), np.searchsorted(t, at + win, "right")
        # a peer dropped when any of its runs then did
        own = code.get(row.app, -1)
        seen = np.unique(apps[lo:hi])
        fell = np.unique(apps[lo:hi][drop[lo:hi]])
        n = len(seen) - int(own in seen)
        k = len(fell) - int(own in fell)
        peers.append(n), dropped.append(k)
        weather.append(bool(n >= max(weather_min_peers, 1) and k >= weather_share * n and k > 0))
    out["weather_peers"], out["weather_dropped"], out["weather"] = peers, dropped, weather
    return (
        out[list(REGRESSION_COLUMNS)]
        .sort_values(["app", "start", "metric"], kind="mergesort")
        .reset_index(drop=True)
    )


def umami_panel(
    history: pd.DataFrame,
    metrics: list[tuple[str, str]],
    p: Params,
    app: str | None = None,
    at=None,
) -> dict:
    """The data an UMAMI panel draws for one application (keynote "Umami": historical
    measurements of the same application, plots showing the variance of current values).

    Per metric: `series` (start, value) of the application's runs up to `at` (default: its last
    run), `sma_short` / `sma_long` (trailing means over `short_window` / `long_window` runs), the
    quartiles of the runs before today (`q1`, `median`, `q3`, `min`, `max`), `today` (the last
    run's value) and `today_quartile` (1..4 against those quartiles, as pytokio colours it; 4 =
    above q3) and `worse` ("lower"/"higher", which quartile is bad).
    """
    h = normalize_history(history, [m for m, _ in metrics])
    if app is None:
        app = h["app"].iloc[-1]
    g = h[h["app"] == app]
    if at is not None:
        g = g[
            g["start"] <= pd.Timestamp(at, tz="UTC")
            if pd.Timestamp(at).tzinfo is None
            else pd.Timestamp(at)
        ]
    panel = {"app": app, "metrics": {}}
    for metric, worse in metrics:
        s = g[["start", metric]].dropna()
        s = s[s[metric] > 0].rename(columns={metric: "value"}).reset_index(drop=True)
        past = s["value"].iloc[:-1]
        today = float(s["value"].iloc[-1]) if len(s) else None
        q = past.quantile([0.0, 0.25, 0.5, 0.75, 1.0]).to_list() if len(past) else [None] * 5
        quart = None
        if today is not None and len(past):
            quart = 1 + int(today > q[1]) + int(today > q[2]) + int(today > q[3])
        panel["metrics"][metric] = {
            "series": s,
            "worse": worse,
            "sma_short": s["value"].rolling(p.short_window, min_periods=1).mean().to_numpy(),
            "sma_long": s["value"].rolling(p.long_window, min_periods=1).mean().to_numpy(),
            "min": q[0],
            "q1": q[1],
            "median": q[2],
            "q3": q[3],
            "max": q[4],
            "today": today,
            "today_quartile": quart,
        }
    return panel


# ---- Spark: silver/job_features (+ the job's file system) -> gold/app_runs -------------------------

KEY_COLUMNS = ("exe", "uid", "nprocs_bucket", "fs", "direction", "layout")
APP_METRICS = ("bandwidth_mib_s", "io_time_s", "meta_time_share", "bytes")


def nprocs_bucket_col(nprocs, edges):
    """Process-count bucket label of a Spark column: "lo-hi" for the bucket whose lower edge is
    the largest of `edges` <= nprocs (hi = next edge - 1), "lo+" past the last edge."""
    import pyspark.sql.functions as F

    edges = sorted(edges)
    expr = F.lit(None).cast("string")
    for lo, hi in zip(edges, [*edges[1:], None]):
        label = f"{lo}+" if hi is None else f"{lo}-{hi - 1}"
        cond = nprocs >= lo if hi is None else (nprocs >= lo) & (nprocs < hi)
        expr = F.when(cond, F.lit(label)).otherwise(expr)
    return expr


def job_file_system(file_features):
    """log_id -> `fs`: the mount point of the job's file with the most bytes read + written (files
    with no mount point, e.g. standard streams, and files moving no bytes do not count; ties go
    to the smaller mount point, so the choice is deterministic)."""
    import pyspark.sql.functions as F

    moved = F.coalesce(F.col("bytes_read"), F.lit(0)) + F.coalesce(F.col("bytes_written"), F.lit(0))
    per = (
        file_features.where(F.col("mount_point").isNotNull())
        .groupBy("log_id", "mount_point")
        .agg(F.sum(moved).alias("b"))
        .where(F.col("b") > 0)
    )
    return per.groupBy("log_id").agg(
        F.min_by("mount_point", F.struct((-F.col("b")).alias("nb"), F.col("mount_point"))).alias(
            "fs"
        )
    )


def app_runs(job_features, file_features, watch) -> DataFrame:  # noqa: F821
    """gold/app_runs rows (schemas/app_runs.py) for the jobs of `job_features`; pure Spark.

    `watch`: conf `watch:` (key_parts, nprocs_buckets). Jobs without a start time are left out
    (they cannot be placed in a history).
    """
    import pyspark.sql.functions as F

    from schemas import GOLD

    jf = job_features.where(F.col("start_time").isNotNull())
    moved = F.col("bytes_read") + F.col("bytes_written")
    df = jf.join(job_file_system(file_features), "log_id", "left").select(
        "log_id",
        "job_month",
        F.col("program").alias("exe"),
        "uid",
        "nprocs",
        nprocs_bucket_col(F.col("nprocs"), watch.nprocs_buckets).alias("nprocs_bucket"),
        "fs",
        F.when(F.col("bytes_read") > F.col("bytes_written"), F.lit("read"))
        .otherwise(F.lit("write"))
        .alias("direction"),
        F.when(F.col("shared_file_count") > 0, F.lit("shared"))
        .otherwise(F.lit("fpp"))
        .alias("layout"),
        F.col("start_time").alias("start"),
        F.col("throughput_mib_s").alias("bandwidth_mib_s"),
        "io_time_s",
        "meta_time_share",
        moved.cast("long").alias("bytes"),
    )
    parts = [F.coalesce(F.col(p).cast("string"), F.lit("-")) for p in watch.key_parts]
    df = df.withColumn("app", F.concat_ws("|", *parts))
    return df.select(*GOLD["app_runs"].columns)


def history_columns(watch) -> list[str]:
    """The gold/app_runs columns the detectors read."""
    return ["app", "start", "log_id", "fs", *[m.name for m in watch.metrics]]


def find_regressions_conf(history: pd.DataFrame, watch) -> pd.DataFrame:
    """`find_regressions` with conf `watch:`'s settings: the one call of the stage and of `iolake watch`."""
    return find_regressions(
        history,
        [(m.name, m.worse) for m in watch.metrics],
        watch.rules,
        Params.from_conf(watch),
        watch.weather_window_h * 3600.0,
        watch.weather_drop,
        watch.weather_share,
        watch.weather_min_peers,
    )


def regressions_frame(spark, flagged: pd.DataFrame):
    """`find_regressions` rows as a Spark DataFrame of gold/regressions' schema."""
    from schemas import GOLD

    spec = GOLD["regressions"]
    rows = []
    ints = {"baseline_runs", "weather_peers", "weather_dropped"}
    stamps = {"start", "since", "baseline_first", "baseline_last"}
    for rec in flagged[spec.columns].to_dict("records"):
        out = {}
        for k, v in rec.items():
            if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT:
                out[k] = None
            elif k in stamps:
                out[k] = (
                    pd.Timestamp(v).tz_convert("UTC").to_pydatetime()
                    if pd.Timestamp(v).tzinfo
                    else pd.Timestamp(v, tz="UTC").to_pydatetime()
                )
            elif k in ints:
                out[k] = int(v)
            elif k == "weather":
                out[k] = bool(v)
            elif isinstance(v, (np.floating, float)):
                out[k] = float(v)
            else:
                out[k] = v
        rows.append(out)
    return spark.createDataFrame(rows, spec.struct)
