"""Precedents (features/precedents.py) on literal runs: which runs count, the ratio to the job's
comparable runs, the spread and the setting reported. Every expected figure is worked out by hand
in the comments from the literal throughputs."""

from __future__ import annotations

import pandas as pd
import pytest

from features import precedents as P
from features.advice import TAG_DIMENSION

KEY = ["exe", "uid", "nprocs_bucket", "fs", "direction", "layout"]
KIB, MIB = 1 << 10, 1 << 20
BASE = {
    "exe": "sim",
    "uid": 7,
    "nprocs_bucket": "8-31",
    "fs": "/scratch",
    "direction": "write",
    "layout": "shared",  # the watch key's part
    "tier": "pfs",
    "transfer_class": 64 * KIB,
    "api": "MPI-IO",
    "file_layout": "shared file",  # the setting
    "stripe_count": None,
}
SETTING_NOW = "MPI-IO, shared file, 64 KiB transfers, on pfs"


def run(log_id, throughput, **kw):
    return {"log_id": log_id, **BASE, **kw, "throughput": throughput}


def table(*more):
    """J and two runs like it (100, 120, 80 MiB/s: baseline median 100); three runs of the same
    application with 4 MiB transfers (180, 150, 210); one with 1 MiB (250); two on the burst
    buffer, another mount (300, 260); and runs that must not count."""
    rows = [
        run("J", 100.0),
        run("C1", 120.0),
        run("C2", 80.0),
        run("P1", 180.0, transfer_class=4 * MIB),
        run("P2", 150.0, transfer_class=4 * MIB),
        run("P3", 210.0, transfer_class=4 * MIB),
        run("Q1", 250.0, transfer_class=MIB),
        run("T1", 300.0, tier="bb", fs="/bb"),
        run("T2", 260.0, tier="bb", fs="/bb"),
        run("X1", 500.0, transfer_class=4 * MIB, api="POSIX"),  # differs in the API too
        run("Y1", 900.0, transfer_class=4 * MIB, exe="post"),  # another application
        run("Z1", 900.0, transfer_class=4 * MIB, nprocs_bucket="32-127"),  # another bucket
        run("S1", None, transfer_class=4 * MIB),  # suspect: no measured throughput
        run("F1", 700.0, transfer_class=4 * MIB, fs="/other"),  # another mount, same tier label
        *more,
    ]
    return pd.DataFrame(rows)


def asks(*rows):
    return pd.DataFrame(
        [dict(zip(("log_id", "kind", "item", "current", "advised"), r)) for r in rows]
    )


def test_transfer_class_rounds_down_to_a_power_of_four():
    assert P.transfer_class(64 * KIB) == 64 * KIB
    assert P.transfer_class(100_000) == 64 * KIB  # 65,536 <= 100,000 < 262,144
    assert P.transfer_class(4 * MIB) == 4 * MIB
    assert P.transfer_class(1000) == 256  # 256 <= 1000 < 1024
    assert P.transfer_class(1) == 1
    assert P.transfer_class(0) is None and P.transfer_class(None) is None


def test_what_if_precedent_uses_the_advised_size_median_and_min_max_of_ratios():
    got = P.precedents(
        table(),
        asks(("J", "what_if", "3", SETTING_NOW, "MPI-IO, shared file, 4 MiB transfers, on pfs")),
        KEY,
        TAG_DIMENSION,
    )
    assert len(got) == 1
    r = got.iloc[0]
    # baseline: median(100, 120, 80) = 100; ratios 1.8, 1.5, 2.1 (X1 is POSIX, Y1 another exe, Z1 another
    # process bucket, S1 unmeasured, F1 another mount: none counts)
    assert r.precedent_speedup == pytest.approx(1.8)
    assert r.precedent_runs == 3
    assert (r.precedent_low, r.precedent_high) == (pytest.approx(1.5), pytest.approx(2.1))
    assert r.precedent_setting == "4 MiB transfers"
    assert r.baseline_runs == 3 and r.baseline == pytest.approx(100.0)
    assert r.message_text == ("measured 1.80x over 3 runs of this application with 4 MiB transfers")


def test_tag_precedent_takes_the_setting_with_the_best_median():
    got = P.precedents(table(), asks(("J", "tag", "small_writes", None, None)), KEY, TAG_DIMENSION)
    r = got.iloc[0]
    # groups: 4 MiB median 1.8 (3 runs), 1 MiB 2.5 (one run): the best median wins, and says n = 1
    assert (r.precedent_speedup, r.precedent_runs) == (pytest.approx(2.5), 1)
    assert (r.precedent_low, r.precedent_high) == (pytest.approx(2.5), pytest.approx(2.5))
    assert r.message_text == "measured 2.50x over 1 run of this application with 1 MiB transfers"


def test_tier_move_drops_the_file_system_from_the_application_key():
    got = P.precedents(
        table(),
        asks(("J", "what_if", "3", SETTING_NOW, "MPI-IO, shared file, 64 KiB transfers, on bb")),
        KEY,
        TAG_DIMENSION,
    )
    r = got.iloc[0]
    # T1, T2 on /bb: 300/100, 260/100 -> median 2.8; F1 (pfs on another mount) is no tier move
    assert (r.precedent_speedup, r.precedent_runs) == (pytest.approx(2.8), 2)
    assert r.precedent_setting == "tier bb"


def test_no_precedent_without_a_differing_run_or_a_baseline():
    t = table()
    # an API move: no run of the application differs in the API alone
    api = asks(
        (
            "J",
            "what_if",
            "3",
            SETTING_NOW,
            "MPI-IO collective, shared file, 64 KiB transfers, on pfs",
        )
    )
    assert P.precedents(t, api, KEY, TAG_DIMENSION).empty
    # a tag no what-if addresses, and `none` rows: nothing to look for
    other = asks(("J", "tag", "random_access", None, None), ("J", "none", "job", None, None))
    assert P.precedents(t, other, KEY, TAG_DIMENSION).empty
    # the job alone in its setting, its own throughput unmeasured (suspect): no baseline
    lone = table(run("K", None, exe="lone"), run("K2", 400.0, exe="lone", transfer_class=4 * MIB))
    ask = asks(("K", "tag", "small_writes", None, None))
    assert P.precedents(lone, ask, KEY, TAG_DIMENSION).empty
    # a job the history lacks
    assert P.precedents(
        t, asks(("nope", "tag", "small_writes", None, None)), KEY, TAG_DIMENSION
    ).empty


def test_stripe_precedent_and_two_dimensions_at_once():
    t = table(
        run("L1", 40.0, exe="lus", stripe_count=1),
        run("L2", 60.0, exe="lus", stripe_count=1),
        run("L4", 150.0, exe="lus", stripe_count=4),
        run("L8", 90.0, exe="lus", stripe_count=8),
        # both tier and size moved, as the what-if below advises
        run("B4", 450.0, tier="bb", fs="/bb", transfer_class=4 * MIB),
    )
    got = P.precedents(
        t,
        asks(
            (
                "L1",
                "stripe",
                "job",
                "stripe count 1, stripe size 1M",
                "stripe count 4, stripe size 1M",
            ),
            ("J", "what_if", "3", SETTING_NOW, "MPI-IO, shared file, 4 MiB transfers, on bb"),
        ),
        KEY,
        TAG_DIMENSION,
    ).set_index("kind")
    s = got.loc["stripe"]
    # baseline median(40, 60) = 50; the advised count 4: 150 / 50 = 3.0 (8 stripes, 1.8x, not reported)
    assert (s.precedent_speedup, s.precedent_runs, s.precedent_setting) == (
        pytest.approx(3.0),
        1,
        "stripe count 4",
    )
    w = got.loc["what_if"]
    # only B4 differs in both tier and size (T1/T2 keep 64 KiB, P1-P3 keep pfs): 450 / 100
    assert (w.precedent_speedup, w.precedent_runs) == (pytest.approx(4.5), 1)
    assert w.precedent_setting == "tier bb, 4 MiB transfers"


def test_layout_move_drops_the_layout_key_part():
    t = table(
        run("A", 50.0, exe="io"),
        run("B", 200.0, exe="io", layout="fpp", file_layout="file per process"),
    )
    got = P.precedents(t, asks(("A", "tag", "metadata_heavy", None, None)), KEY, TAG_DIMENSION)
    r = got.iloc[0]
    # B is another application under the watch's key (layout fpp), the same one for a layout move
    assert (r.precedent_speedup, r.precedent_setting) == (pytest.approx(4.0), "a file per process")


def test_parse_setting_reads_the_what_if_words():
    from features.what_if import describe

    text = describe(
        {
            "api": "MPI-IO collective",
            "layout": "file per process",
            "transfer_size": 3 * MIB,
            "tier": "bb",
        }
    )
    assert P.parse_setting(text) == {
        "tier": "bb",
        "transfer_class": MIB,  # 3 MiB rounds down to 1 MiB
        "api": "MPI-IO collective",
        "file_layout": "file per process",
    }
    assert P.parse_setting("stripe count 4") is None


def test_bucketed_lookup_equals_a_scan_of_every_run():
    """`precedents` looks a job's candidate runs up by key instead of scanning its application's
    runs (a night's asks must not cost the lake), reads each bucket once per dimensions (its runs'
    throughputs grouped by their values there, `_Groups`) and answers runs sharing a bucket and
    setting once: on 600 random runs of 3 applications with nulls in every setting, each run's asks get
    what `one` gives when handed every run."""
    import random

    rng = random.Random(41)
    values = {
        "exe": ["sim", "post", "viz"],
        "fs": ["/scratch", "/bb"],
        "layout": ["shared", "fpp"],
        "tier": ["pfs", "bb", None],
        "transfer_class": [64 * KIB, MIB, 4 * MIB, None],
        "api": ["MPI-IO", "POSIX"],
        "file_layout": ["shared file", "file per process", None],
        "stripe_count": [None, 1, 4],
    }
    runs = pd.DataFrame(
        [
            run(
                f"R{i}",
                rng.choice([None, rng.uniform(10, 500)]),
                **{k: rng.choice(v) for k, v in values.items()},
            )
            for i in range(600)
        ]
    )
    kinds = [
        ("tag", "small_writes", None, None),
        ("tag", "no_collective_shared_writes", None, None),
        ("what_if", "f1", SETTING_NOW, "MPI-IO, shared file, 4 MiB transfers, on bb"),
        ("what_if", "f2", SETTING_NOW, "POSIX, file per process, 64 KiB transfers, on pfs"),
        ("stripe", "s", "stripe count 1", "stripe count 4"),
    ]
    ask_rows = [
        {"log_id": f"R{i}", "kind": k, "item": it, "current": c, "advised": a}
        for i in range(600)
        for k, it, c, a in kinds
    ]
    got = P.precedents(runs, pd.DataFrame(ask_rows), KEY, TAG_DIMENSION)
    got = {(r.log_id, r.kind, r.item): r for r in got.itertuples()}
    recs = [{k: (None if P._null(v) else v) for k, v in r.items()} for r in runs.to_dict("records")]
    by_id = {r["log_id"]: r for r in recs}
    found = 0
    for a in ask_rows:
        q = P.ask(a["kind"], a["item"], a["current"], a["advised"], TAG_DIMENSION)
        if q is None:
            continue
        want = P.one(recs, by_id[a["log_id"]], q[0], q[1], KEY)
        key = (a["log_id"], a["kind"], a["item"])
        if want["precedent_speedup"] is None:
            assert key not in got, key
            continue
        found += 1
        g = got[key]
        assert (
            g.precedent_speedup,
            g.precedent_runs,
            g.precedent_low,
            g.precedent_high,
            g.precedent_setting,
            g.baseline_runs,
            g.baseline,
        ) == (
            want["precedent_speedup"],
            want["precedent_runs"],
            want["precedent_low"],
            want["precedent_high"],
            want["precedent_setting"],
            want["baseline_runs"],
            want["baseline"],
        ), key
    assert found > 150, found
