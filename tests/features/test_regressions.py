"""Regression-watch detectors on literal series (pandas only, no Spark): a clean step is caught
within a few runs by every rule, a flat noisy series raises nothing, no alarm before the minimum
history, one alarm per change, the weather flag, and the UMAMI panel's quartiles."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from features.regressions import RULES, Params, detect, find_regressions, orient, umami_panel
from iolake.config import load_config

WATCH = load_config().watch
P = Params.from_conf(WATCH)  # the shipped defaults
# a bounded, repeating ±12% wobble: real-looking noise no rule should call a regression
WOBBLE = [1.0, 1.12, 0.9, 1.05, 0.93, 1.08, 0.88, 1.02, 0.97, 1.1]


def wobbly(n: int, level: float = 1000.0) -> np.ndarray:
    return level * np.array([WOBBLE[i % len(WOBBLE)] for i in range(n)])


def step(n: int, at: int, factor: float, level: float = 1000.0) -> np.ndarray:
    v = wobbly(n, level)
    v[at:] *= factor
    return v


def history(
    apps: dict, fs: dict | None = None, t0: int = 1_700_000_000, every_s: int = 86400
) -> pd.DataFrame:
    rows = []
    for j, (app, values) in enumerate(apps.items()):
        for i, v in enumerate(values):
            rows.append(
                {
                    "app": app,
                    "start": t0 + i * every_s + 60 * j,
                    "bandwidth_mib_s": v,
                    "fs": (fs or {}).get(app),
                }
            )
    return pd.DataFrame(rows)


BW = [("bandwidth_mib_s", "lower")]


def flagged(h: pd.DataFrame, rules=RULES, p: Params = P, metrics=BW) -> pd.DataFrame:
    return find_regressions(
        h,
        metrics,
        rules,
        p,
        weather_window_s=6 * 3600,
        weather_drop=0.3,
        weather_share=0.5,
        weather_min_peers=2,
    )


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("factor", [0.5, 0.6])
def test_a_clean_step_is_caught_within_five_runs_and_not_before(rule, factor):
    y = orient(step(80, 40, factor))
    alarms = [a["t"] for a in detect(y, rule, P)]
    assert alarms, f"{rule} missed a {1 - factor:.0%} step"
    assert 40 <= alarms[0] <= 44, f"{rule}: first alarm at run {alarms[0]}, the step is at run 40"


@pytest.mark.parametrize("rule", RULES)
def test_a_flat_noisy_series_raises_no_alarm(rule):
    assert detect(orient(wobbly(300)), rule, P) == []
    # random log-normal noise (sd 8%): a CUSUM on a MAD-scaled baseline can still cross by chance
    # (seed 7 does, twice), so the bound is a rate: far below the 3 per 100 runs budget
    alarms = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        alarms += len(detect(orient(1000 * np.exp(rng.normal(0, 0.08, 300))), rule, P))
    assert 100 * alarms / (20 * 300) <= 0.25


@pytest.mark.parametrize("rule", RULES)
def test_no_alarm_before_the_minimum_history(rule):
    values = step(40, 4, 0.2)  # a five-fold drop after 4 runs
    first_possible = P.min_history + P.short_window - 1
    alarms = [a["t"] for a in detect(orient(values), rule, P)]
    assert all(t >= first_possible for t in alarms)
    # with a short minimum history the same drop is flagged early, so the limit is what held it back
    short = Params(**{**P.__dict__, "min_history": 3})
    assert any(t < first_possible for t in (a["t"] for a in detect(orient(values), rule, short)))


@pytest.mark.parametrize("rule", RULES)
def test_a_lasting_change_is_one_alarm_and_its_new_level_is_learnt(rule):
    y = orient(step(150, 40, 0.5))
    assert len(detect(y, rule, P)) == 1
    # a second drop after the new level was learnt is a second alarm
    v = step(150, 40, 0.5)
    v[100:] *= 0.5
    ts = [a["t"] for a in detect(orient(v), rule, P)]
    assert len(ts) == 2 and 100 <= ts[1] <= 104


@pytest.mark.parametrize("rule", RULES)
def test_a_regressed_application_that_drops_again_is_flagged_again(rule):
    v = step(120, 40, 0.5)
    v[47:] *= 0.5  # a second halving while the first drop is still held (its level not yet learnt)
    alarms = detect(orient(v), rule, P)
    assert [a["further"] for a in alarms[:2]] == [False, True], alarms
    assert 40 <= alarms[0]["t"] <= 44 and 47 <= alarms[1]["t"] <= 51, [a["t"] for a in alarms]
    # the second alarm's baseline is the regressed level (half the first), not the original one
    assert abs(np.exp(alarms[1]["base"]) / 500.0 - 1.0) < 0.15
    # without further_drop the rule stays quiet until the first change's level is learnt
    quiet = Params(**{**P.__dict__, "further_drop": False})
    assert not any(47 <= a["t"] <= 51 for a in detect(orient(v), rule, quiet))


def test_glr_statistic_and_start_by_hand():
    """30 runs at 1000 (MAD 0: the scale is the floor, 0.1 in log units), then a drop to
    1000 * e^-0.3: z = -0.3 / 0.1 = -3, clipped to -2. The newest-first window sums over sqrt of
    their length are -2/1, -4/sqrt(2), -6/sqrt(3) = -3.46 <= -3.3 at the third dropped run (32):
    one alarm, its window begun at run 30. Clip 3: -3, -6/sqrt(2) = -4.24 at run 31. A smaller
    drop, e^-0.16: z = -1.6, -1.6 * sqrt(w) reaches -3.3 only with w = 5 (-3.58), at run 34."""
    p = Params(
        short_window=5, long_window=30, min_history=10, glr_h=3.3, glr_clip=2.0, glr_scale_floor=0.1
    )
    series = lambda drop: orient([1000.0] * 30 + [1000 * np.exp(-drop)] * 10)  # noqa: E731
    alarms = detect(series(0.3), "glr", p)
    assert [(a["t"], a["since"]) for a in alarms] == [(32, 30)]
    assert alarms[0]["score"] == pytest.approx(-6 / np.sqrt(3)) and alarms[0][
        "base"
    ] == pytest.approx(np.log(1000))
    wide = detect(series(0.3), "glr", Params(**{**p.__dict__, "glr_clip": 3.0}))
    assert [(a["t"], a["since"], round(a["score"], 6)) for a in wide] == [
        (31, 30, round(-6 / np.sqrt(2), 6))
    ]
    small = detect(series(0.16), "glr", p)
    assert [(a["t"], a["since"]) for a in small] == [(34, 30)]
    assert small[0]["score"] == pytest.approx(-1.6 * np.sqrt(5))


def test_glr_statistic_equals_the_vectorised_form_on_random_windows():
    """`_step`'s GLR loop against the statistic written the vectorised way (newest first, clipped
    z, cumulative sums over sqrt(w), the first smallest): the same score, alarm and start, exactly,
    on random windows and levels, ties included (a clipped window repeats its values)."""
    from features.regressions import _step

    rng = np.random.default_rng(11)
    p = Params(short_window=7, glr_clip=1.5, glr_h=2.0)
    for _ in range(2000):
        y = rng.normal(0, 1, 40) * rng.choice([0.1, 1, 5])
        t = int(rng.integers(10, 40))
        lo = max(0, t - int(rng.integers(1, 8)) + 1)
        level, sd = float(rng.normal(0, 1)), float(rng.uniform(0.05, 2))
        z = np.clip((y[lo : t + 1] - level) / sd, -p.glr_clip, p.glr_clip)[::-1]
        g = np.cumsum(z) / np.sqrt(np.arange(1, len(z) + 1))
        w = int(np.argmin(g))
        got = _step(
            "glr", y, t, lo, np.array([level]), p, [0.0, None], scale=sd
        )  # level: its median
        assert got[1:] == (float(g[w]), bool(g[w] <= -p.glr_h), t - w)


def test_trailing_change_is_the_change_against_the_median_of_the_runs_before():
    """Each run against `np.median` of the up to `long_window` runs before it, NaN before
    `min_history` runs; a long window shorter than the minimum history still has its medians."""
    from features.regressions import trailing_change

    rng = np.random.default_rng(5)
    for n, long_window, min_history in ((60, 30, 10), (9, 30, 10), (40, 4, 6), (25, 6, 0)):
        y = np.round(rng.normal(0, 1, n), 1)  # rounded: equal values, medians of ties
        p = Params(long_window=long_window, min_history=min_history)
        want = [
            np.expm1(y[t] - np.median(y[max(0, t - long_window) : t]))
            if t >= max(min_history, 1)
            else np.nan
            for t in range(n)
        ]
        np.testing.assert_array_equal(trailing_change(y, p), np.array(want))


def test_a_transient_dip_re_arms_the_rule():
    v = wobbly(120)
    v[40:43] *= 0.4  # three bad runs, then back to normal
    v[60:] *= 0.5
    ts = [a["t"] for a in detect(orient(v), "cusum", P)]
    assert len(ts) == 2 and 40 <= ts[0] <= 42 and 60 <= ts[1] <= 64


def test_higher_is_worse_metrics_flag_rises_not_falls():
    up = history({"a": step(60, 30, 2.0)}).rename(columns={"bandwidth_mib_s": "io_time_s"})
    down = history({"a": step(60, 30, 0.5)}).rename(columns={"bandwidth_mib_s": "io_time_s"})
    assert len(flagged(up, ["robust_z"], metrics=[("io_time_s", "higher")])) == 1
    assert flagged(down, ["robust_z"], metrics=[("io_time_s", "higher")]).empty


def test_row_values_of_an_exact_step():
    values = np.r_[np.full(40, 1000.0), np.full(10, 500.0)]
    out = flagged(history({"a": values}), ["sma"])
    assert len(out) == 1
    r = out.iloc[0]
    assert (
        r.value == 500.0 and r.baseline == pytest.approx(1000.0) and r.change == pytest.approx(-0.5)
    )
    assert (
        r.rule == "sma" and r.threshold_name == "watch.sma.drop" and r.threshold == WATCH.sma.drop
    )
    assert P.min_history <= r.baseline_runs <= P.long_window
    assert r.baseline_last < r.since <= r.start
    run = {pd.Timestamp(1_700_000_000 + i * 86400, unit="s", tz="UTC"): i for i in range(50)}
    assert 40 <= run[r.start] <= 44


def test_iso_and_epoch_starts_give_the_same_alarms():
    h = history({"a": step(80, 50, 0.5), "b": wobbly(80)})
    iso = h.assign(
        start=pd.to_datetime(h["start"], unit="s", utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    a, b = flagged(h), flagged(iso)
    assert len(a) == 1
    pd.testing.assert_frame_equal(a, b)


def test_weather_when_peers_on_the_same_file_system_dropped_together():
    fs = {
        "a": "/scratch1",
        "b": "/scratch1",
        "c": "/scratch1",
        "d": "/scratch2",
        "e": "/scratch2",
        "f": "/scratch2",
    }
    apps = {k: wobbly(60) for k in fs}
    for k in ("a", "b", "c"):  # the whole of /scratch1 gets slower at day 40
        apps[k][40:] *= 0.4
    apps["d"][40:] *= 0.4  # only d on /scratch2
    out = flagged(history(apps, fs), ["cusum"]).set_index("app")
    assert set(out.index) == {"a", "b", "c", "d"}
    assert out.loc[["a", "b", "c"], "weather"].tolist() == [True, True, True]
    assert out.loc[["a", "b", "c"], "weather_dropped"].tolist() == [2, 2, 2]
    assert out.loc["d", "weather"] == False  # noqa: E712 - two peers ran, none dropped
    assert out.loc["d", "weather_peers"] == 2 and out.loc["d", "weather_dropped"] == 0


def test_weather_window_look_up_equals_a_scan_of_every_peer_run():
    """The weather counts come from each (metric, fs)'s runs sorted by start and a window found
    by binary search; here they are counted again the plain way, peer run by peer run (every run
    of another application on the flagged run's file system within the window, a peer dropped
    when one of its runs there fell by weather_drop against its own trailing median), on 12
    applications over 3 file systems with irregular start times and a shared slowdown."""
    from features.regressions import normalize_history, trailing_change

    rng = np.random.default_rng(7)
    rows = []
    for j in range(12):
        t = 1_700_000_000 + np.cumsum(rng.integers(3600, 3 * 86400, 70))
        v = wobbly(70) * rng.uniform(0.8, 1.2)
        v[(t > t[0] + 60 * 86400) & (t < t[0] + 75 * 86400)] *= 0.45 if j % 3 else 1.0
        v[rng.integers(0, 70, 4)] *= 0.3
        fs = f"/scratch{j % 3}"
        rows += [
            {"app": f"a{j}", "start": int(s), "bandwidth_mib_s": x, "fs": fs} for s, x in zip(t, v)
        ]
    h = pd.DataFrame(rows)
    out = flagged(h, ["cusum", "sma"])
    assert len(out) > 10 and out["weather_dropped"].max() > 0 and out["weather"].any(), out
    n = normalize_history(h, ["bandwidth_mib_s"])
    runs = []
    for app, g in n.groupby("app"):
        ch = trailing_change(orient(g["bandwidth_mib_s"].to_numpy(), "lower"), P)
        runs += [(app, f, s, c) for f, s, c in zip(g["fs"], g["start"], ch) if not np.isnan(c)]
    win = pd.Timedelta(hours=6)
    for r in out.itertuples():
        near = [
            (a, c) for a, f, s, c in runs if f == r.fs and a != r.app and abs(s - r.start) <= win
        ]
        assert r.weather_peers == len({a for a, _ in near}), r
        assert r.weather_dropped == len({a for a, c in near if c <= -0.3}), r


def test_no_file_system_no_weather():
    out = flagged(history({"a": step(60, 40, 0.4)}), ["cusum"])
    assert len(out) == 1 and out.iloc[0].weather is None


def test_umami_panel_quartiles_of_today():
    h = history({"a": [1, 2, 3, 4, 5, 6, 7, 8, 100]})
    m = umami_panel(h, BW, P, app="a")["metrics"]["bandwidth_mib_s"]
    # linear quantiles of 1..8, by hand: q1 = 1 + 0.25 * 7 = 2.75, median 4.5, q3 = 6.25
    assert (m["q1"], m["median"], m["q3"], m["min"], m["max"]) == (2.75, 4.5, 6.25, 1, 8)
    assert m["today"] == 100 and m["today_quartile"] == 4
    assert len(m["series"]) == 9 and m["sma_long"][-1] == pytest.approx(
        sum([1, 2, 3, 4, 5, 6, 7, 8, 100]) / 9
    )
    values = [1, 2, 3, 4, 5, 6, 7, 8, 100]
    assert m["sma_short"][-1] == pytest.approx(sum(values[-P.short_window :]) / P.short_window)
    low = umami_panel(history({"a": [1, 2, 3, 4, 5, 6, 7, 8, 0.5]}), BW, P, app="a")["metrics"][
        "bandwidth_mib_s"
    ]
    assert low["today_quartile"] == 1
