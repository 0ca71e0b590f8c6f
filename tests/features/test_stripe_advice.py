"""DCA-IO stripe advice (§IV, Procedures 1 and 2): every expected value is worked by hand from the paper's rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from features.stripe_advice import (
    MIB,
    SKIPPED_BEFORE,
    StripeAdvice,
    advise_runs,
    for_run,
    heuristic_phase,
    history_prior,
    initial,
    rule_phase,
)

M = MIB


def _history(rows):
    return pd.DataFrame(rows, columns=["nprocs", "stripe_count", "stripe_size", "throughput_mib_s"])


# Figure 3: jobs with 1 process at counts 1, 8, 16, 32, 64, 128.
#   count means: 1 -> (100+120+1000)/3 = 406.7, 8 -> 300, 16 -> 350, 32 -> 400, 64 -> 500, 128 -> (900+700)/2 = 800
#   size means:  1M -> (100+120+400+500+900+700)/6 = 453.3, 16M -> (1000+300+350)/3 = 550
FIG3 = [
    (1, 1, M, 100.0),
    (1, 1, M, 120.0),
    (1, 1, 16 * M, 1000.0),
    (1, 8, 16 * M, 300.0),
    (1, 16, 16 * M, 350.0),
    (1, 32, M, 400.0),
    (1, 64, M, 500.0),
    (1, 128, M, 900.0),
    (1, 128, M, 700.0),
    (2, 256, 64 * M, 9000.0),  # another process count: faster, but ignored
]


def test_initial_figure3_picks_the_count_with_the_best_mean_and_the_size_independently():
    a = initial(_history(FIG3), 1)
    assert (a.phase, a.stripe_count, a.stripe_size) == ("initial", 128, 16 * M)
    assert a.command() == "lfs setstripe -c 128 -S 16M <dir>"
    assert a.evidence[0].startswith(
        "9 jobs with 1 process: mean 800.0 MiB/s at -c 128 (2 jobs), "
        "500.0 MiB/s at -c 64 (1 job), 406.7 MiB/s at -c 1 (3 jobs)"
    )
    assert a.evidence[1].startswith(
        "9 jobs with 1 process: mean 550.0 MiB/s at -S 16M (3 jobs), 453.3 MiB/s at -S 1M (6 jobs)"
    )
    assert not any("256" in e for e in a.evidence)


def test_initial_other_process_counts_ignored_even_when_faster():
    a = initial(_history(FIG3), 2)
    assert (a.stripe_count, a.stripe_size) == (256, 64 * M)
    assert initial(_history(FIG3), 3) is None
    assert initial(_history([]), 1) is None


def test_initial_means_not_maxima_decide():
    # -c 2: one 5000 MiB/s job and three at 10 -> mean 1257.5; -c 4: two at 1500 -> mean 1500: -c 4 wins
    h = _history(
        [
            (4, 2, M, 5000.0),
            (4, 2, M, 10.0),
            (4, 2, M, 10.0),
            (4, 2, M, 10.0),
            (4, 4, 4 * M, 1500.0),
            (4, 4, 4 * M, 1500.0),
        ]
    )
    a = initial(h, 4)
    assert (a.stripe_count, a.stripe_size) == (4, 4 * M)  # sizes: 1M 1257.5, 4M 1500


def test_initial_nulls_ties_and_missing_sizes():
    h = _history(
        [
            (8, 4, None, 100.0),
            (8, 8, None, 50.0),
            (8, 8, None, 150.0),  # -c 4: 100, -c 8: 100 -> tie -> 4
            (8, 2, None, None),  # no throughput: ignored entirely
            (8, None, None, 9999.0),  # no count: ignored for the count (and no size either)
        ]
    )
    a = initial(h, 8)
    assert (a.stripe_count, a.stripe_size) == (4, M)
    assert not any("-c 2" in e for e in a.evidence)
    assert any(
        "tie at 100.0 MiB/s between -c 4, -c 8: the smaller stripe count taken" in e
        for e in a.evidence
    )
    assert any("no job with 8 processes recorded a stripe size" in e for e in a.evidence)
    # a job without a count still counts for the size: 64M -> 9999 beats 1M -> 100
    h2 = _history([(8, 4, M, 100.0), (8, None, 64 * M, 9999.0)])
    assert (initial(h2, 8).stripe_count, initial(h2, 8).stripe_size) == (4, 64 * M)
    # only rows without a count: no advice
    assert initial(_history([(8, None, M, 100.0)]), 8) is None


def test_rule_phase():
    a = rule_phase(False, 64)
    assert (a.phase, a.stripe_count, a.stripe_size) == ("rule", 1, M)
    assert a.command("/scratch/run") == "lfs setstripe -c 1 -S 1M /scratch/run"
    assert (rule_phase(True, 48).stripe_count, rule_phase(True, 48).stripe_size) == (48, M)
    capped = rule_phase(True, 48, max_osts=12)
    assert (capped.stripe_count, capped.stripe_size) == (12, M)
    assert any("capped at 12 OSTs" in e for e in capped.evidence)
    assert rule_phase(False, 64, max_osts=12).stripe_count == 1


def _run(count, size, tp):
    return {"stripe_count": count, "stripe_size": size, "throughput_mib_s": tp}


def test_heuristic_phase_rules():
    up = heuristic_phase(_run(4, M, 700.1), _run(2, M, 512.0))
    assert (up.phase, up.stripe_count, up.stripe_size) == (
        "heuristic",
        8,
        M,
    )  # count doubled: size kept
    assert (
        up.evidence[0]
        == "previous run 512.0 MiB/s at -c 2 -S 1M, latest 700.1 MiB/s at -c 4 -S 1M: throughput rose"
    )
    down = heuristic_phase(_run(8, M, 400.0), _run(4, M, 500.0))
    assert (down.stripe_count, down.stripe_size) == (8, M)
    same = heuristic_phase(_run(8, M, 500.0), _run(4, M, 500.0))  # not strictly higher: kept
    assert (same.stripe_count, same.stripe_size) == (8, M)
    cap = heuristic_phase(_run(8, M, 700.0), _run(4, M, 500.0), max_osts=12)
    assert (cap.stripe_count, cap.stripe_size) == (
        12,
        M,
    )  # 16 capped at 12: count changed, size kept
    at_cap = heuristic_phase(_run(12, M, 800.0), _run(12, M, 700.0), max_osts=12)
    assert (at_cap.stripe_count, at_cap.stripe_size) == (
        12,
        2 * M,
    )  # count unchanged, throughput rose
    at_cap_down = heuristic_phase(_run(12, 2 * M, 600.0), _run(12, M, 800.0), max_osts=12)
    assert (at_cap_down.stripe_count, at_cap_down.stripe_size) == (12, 2 * M)
    lin = heuristic_phase(_run(3, M, 200.0), _run(2, M, 150.0), growth="linear", step=1)
    assert lin.stripe_count == 4
    lin48 = heuristic_phase(_run(48, M, 200.0), _run(48, M, 150.0), growth="linear", step=48)
    assert (lin48.stripe_count, lin48.stripe_size) == (96, M)
    with pytest.raises(ValueError):
        heuristic_phase(_run(3, M, 200.0), _run(2, M, 150.0), growth="cubic")


# -- replaying DCA-IO over one application -----------------------------------------------------------

OTHERS = [  # another application, with another process count: no Procedure 1 advice for 64 processes
    dict(
        log_id="o1",
        program="other",
        start_time=0.0,
        nprocs=32,
        stripe_count=4,
        stripe_size=M,
        throughput_mib_s=999.0,
        shared=True,
        io_procs=32,
    ),
]


def _replay(tp_of, n_runs, shared=False, io_procs=64, max_osts=None, growth="double"):
    """Run 1 at the user's -c 1 -S 1M (80 MiB/s); each later run at the advised setting and tp_of[(count, size)]."""
    jobs = [
        *OTHERS,
        dict(
            log_id="r1",
            program="app",
            start_time=10.0,
            nprocs=64,
            stripe_count=1,
            stripe_size=M,
            throughput_mib_s=80.0,
            shared=shared,
            io_procs=io_procs,
        ),
    ]
    advised = []
    for k in range(2, n_runs + 1):
        jobs.append(
            dict(
                log_id=f"r{k}",
                program="app",
                start_time=10.0 * k,
                nprocs=64,
                stripe_count=None,
                stripe_size=None,
                throughput_mib_s=None,
                shared=shared,
                io_procs=io_procs,
            )
        )
        out = advise_runs(pd.DataFrame(jobs), max_osts=max_osts, growth=growth).set_index("log_id")
        assert "r1" not in out.index  # no job with 64 processes before it
        row = out.loc[f"r{k}"]
        assert row["run_number"] == k
        assert row["phase"] == ("rule" if k == 2 else "heuristic")
        count, size = int(row["stripe_count"]), int(row["stripe_size"])
        advised.append((count, size))
        jobs[-1].update(stripe_count=count, stripe_size=size, throughput_mib_s=tp_of[(count, size)])
    return advised


def test_replay_doubles_while_throughput_rises_then_stops():
    tp = {(1, M): 100.0, (2, M): 180.0, (4, M): 300.0, (8, M): 420.0, (16, M): 380.0}
    # r2 rule: file-per-process -> 1; r3: 100 > 80 -> 2; r4: 180 > 100 -> 4; r5: 300 > 180 -> 8;
    # r6: 420 > 300 -> 16; r7: 380 < 420 -> keep 16; r8: 380 = 380 -> keep 16. Count always changed or
    # throughput fell: size stays 1M.
    assert _replay(tp, 8) == [(1, M), (2, M), (4, M), (8, M), (16, M), (16, M), (16, M)]


def test_replay_stops_at_the_ost_count_then_grows_the_size():
    tp = {
        (1, M): 100.0,
        (2, M): 180.0,
        (4, M): 300.0,
        (8, M): 420.0,
        (12, M): 450.0,
        (12, 2 * M): 470.0,
        (12, 4 * M): 460.0,
    }
    # r6: 420 > 300 -> 16 capped at 12 (count changed: 1M); r7: 450 > 420 -> 24 capped at 12 = latest
    # and rose -> 2M; r8: 470 > 450 -> 12, 4M; r9: 460 < 470 -> 12, 4M kept
    assert _replay(tp, 9, max_osts=12) == [
        (1, M),
        (2, M),
        (4, M),
        (8, M),
        (12, M),
        (12, 2 * M),
        (12, 4 * M),
        (12, 4 * M),
    ]


def test_replay_linear_growth_adds_the_rule_phase_count():
    tp = {(4, M): 100.0, (8, M): 150.0, (12, M): 200.0, (16, M): 190.0}
    # shared file, 4 I/O processes: r2 rule -> 4; r3: 100 > 80 -> 4 + 4 = 8; r4: 150 > 100 -> 12;
    # r5: 200 > 150 -> 16; r6: 190 < 200 -> 16
    assert _replay(tp, 6, shared=True, io_procs=4, growth="linear") == [
        (4, M),
        (8, M),
        (12, M),
        (16, M),
        (16, M),
    ]
    tp1 = {(1, M): 100.0, (2, M): 150.0, (3, M): 200.0}
    # file-per-process: step 1 -> 1, 2, 3
    assert _replay(tp1, 4, growth="linear") == [(1, M), (2, M), (3, M)]


# -- advise_runs bookkeeping -------------------------------------------------------------------------


def _job(log_id, program, t, nprocs, count, size, tp, shared=False, io_procs=None):
    return dict(
        log_id=log_id,
        program=program,
        start_time=t,
        nprocs=nprocs,
        stripe_count=count,
        stripe_size=size,
        throughput_mib_s=tp,
        shared=shared,
        io_procs=io_procs,
    )


LAKE = [
    _job(
        "e1", "e", 0.5, 8, None, 64 * M, 5000.0
    ),  # no count: skipped as a run of e, but a size fact for others
    _job("b1", "b", 1.0, 8, 2, M, 100.0),
    _job("b2", "b", 2.0, 8, 4, M, 300.0),
    _job("e2", "e", 2.5, 8, None, None, None),
    _job("a1", "a", 3.0, 8, 4, 64 * M, 200.0, shared=True, io_procs=8),
    _job("c1", "c", 3.0, 8, 16, M, 10000.0),  # same start as a1: neither sees the other
    _job("a2", "a", 4.0, 8, 8, M, 400.0),
    _job("a3", "a", 5.0, 8, 16, M, None),  # null throughput: skipped for a4
    _job("a4", "a", 6.0, 8, 16, M, 500.0),
]


def test_advise_runs_phases_numbering_and_others():
    out = advise_runs(pd.DataFrame(LAKE[::-1])).set_index("log_id")  # input order must not matter
    got = {i: (r.run_number, r.phase, r.stripe_count, r.stripe_size) for i, r in out.iterrows()}
    assert got == {
        # e1, b1: nothing with a stripe count known before them -> no advice
        "b2": (2, "rule", 1, M),  # b1 file-per-process
        "e2": (
            2,
            "initial",
            4,
            M,
        ),  # others b1 (-c 2: 100), b2 (-c 4: 300); e1 is e's own: its 64M not used
        "a1": (
            1,
            "initial",
            4,
            64 * M,
        ),  # counts from b1, b2; sizes: 1M (100+300)/2 = 200 < 64M (e1) 5000
        "c1": (
            1,
            "initial",
            4,
            64 * M,
        ),  # same as a1: a1 started together with c1, so unknown to it
        "a2": (2, "rule", 8, M),  # a1 shared among 8 I/O processes
        "a3": (3, "heuristic", 16, M),  # a2 400 > a1 200 -> 8 * 2; count changed -> size kept 1M
        "a4": (4, "heuristic", 16, M),  # a3 skipped: latest a2, previous a1 again
    }
    assert any("1 earlier run skipped" in e for e in out.loc["a4", "evidence"])
    assert any("1 earlier run skipped" in e for e in out.loc["e2", "evidence"])
    assert not any("skipped" in e for e in out.loc["a3", "evidence"])
    assert out.loc["a1", "evidence"][0].startswith(
        "2 jobs with 8 processes: mean 300.0 MiB/s at -c 4 (1 job)"
    )
    assert (out.loc["a3", "current_count"], out.loc["a3", "current_size"]) == (16, M)
    assert pd.isna(out.loc["e2", "current_count"])
    assert out.loc["a4", "command"] == "lfs setstripe -c 16 -S 1M <dir>"
    assert list(out.reset_index().columns) == [
        "log_id",
        "run_number",
        "phase",
        "current_count",
        "current_size",
        "stripe_count",
        "stripe_size",
        "evidence",
        "command",
    ]


def test_advise_runs_ties_by_log_id_and_multi_column_key():
    jobs = pd.DataFrame(
        [
            {**_job("f2", "f", 10.0, 4, 2, M, 50.0), "uid": 1},
            {**_job("f1", "f", 10.0, 4, 1, M, 40.0, shared=True, io_procs=4), "uid": 1},
            {
                **_job("g1", "f", 11.0, 4, 1, M, 40.0),
                "uid": 2,
            },  # same program, other user: another application
        ]
    )
    out = advise_runs(jobs, key=("program", "uid")).set_index("log_id")
    # f1 before f2 (log_id): f2 is f's run 2, rule phase from f1 (shared, 4 I/O processes) -> 4.
    # g1: initial from f1, f2 (started before, other key): -c 1 40, -c 2 50 -> 2
    assert (out.loc["f2", "run_number"], out.loc["f2", "phase"], out.loc["f2", "stripe_count"]) == (
        2,
        "rule",
        4,
    )
    assert (out.loc["g1", "run_number"], out.loc["g1", "phase"], out.loc["g1", "stripe_count"]) == (
        1,
        "initial",
        2,
    )
    assert "f1" not in out.index


def test_for_run_dispatches_on_usable_prior_runs():
    others = _history([(16, 8, 4 * M, 300.0), (16, 2, M, 100.0)])
    cols = ["start_time", "stripe_count", "stripe_size", "throughput_mib_s", "shared", "io_procs"]
    none = pd.DataFrame([], columns=cols)
    assert (for_run(none, others, 16).phase, for_run(none, others, 16).stripe_count) == (
        "initial",
        8,
    )
    assert for_run(none, others, 32) is None
    one = pd.DataFrame([(1.0, 1, M, 100.0, True, 12)], columns=cols)
    assert (for_run(one, others, 16).phase, for_run(one, others, 16, max_osts=10).stripe_count) == (
        "rule",
        10,
    )
    two = pd.DataFrame(
        [(2.0, 12, M, 150.0, True, 12), (1.0, 1, M, 100.0, True, 12), (3.0, 24, M, None, True, 12)],
        columns=cols,
    )  # unsorted; the null run is skipped
    a = for_run(two, others, 16)
    assert (a.phase, a.stripe_count, a.stripe_size) == ("heuristic", 24, M)  # 150 > 100 -> 12 * 2
    assert a.evidence[-1] == "1 earlier run skipped: no throughput or stripe count"


def test_command_formatting():
    def cmd(size):
        return StripeAdvice("rule", 8, size, ()).command()

    assert cmd(M) == "lfs setstripe -c 8 -S 1M <dir>"
    assert cmd(4 * M) == "lfs setstripe -c 8 -S 4M <dir>"
    assert cmd(64 << 10) == "lfs setstripe -c 8 -S 64K <dir>"
    assert cmd(1536 << 10) == "lfs setstripe -c 8 -S 1536K <dir>"
    assert cmd(2 << 30) == "lfs setstripe -c 8 -S 2G <dir>"
    assert cmd(1000) == "lfs setstripe -c 8 -S 1000 <dir>"
    assert StripeAdvice("rule", 1, M, ()).command("/lus/x") == "lfs setstripe -c 1 -S 1M /lus/x"


def test_advise_runs_on_10000_jobs_caps_every_count():
    rng = np.random.default_rng(7)
    n = 10_000
    jobs = pd.DataFrame(
        {
            "log_id": np.arange(n),
            "program": rng.integers(0, 3000, n).astype(str),
            "start_time": rng.integers(0, 5000, n).astype(float),
            "nprocs": rng.choice([1, 8, 64, 512], n),
            "stripe_count": rng.choice([1, 2, 4, 8], n),
            "stripe_size": rng.choice([M, 4 * M], n),
            "throughput_mib_s": np.where(rng.random(n) < 0.05, np.nan, rng.random(n) * 1000),
            "shared": rng.random(n) < 0.5,
            "io_procs": rng.integers(1, 64, n),
        }
    )
    out = advise_runs(jobs, max_osts=248)  # speed: bench/, not a timed test
    assert len(out) > 0.9 * n and out["stripe_count"].le(248).all()


def test_advise_runs_matches_for_run_on_each_job_of_random_lakes():
    """The incremental replay against the definition: for_run on each job's explicitly built prior and others."""
    rng = np.random.default_rng(11)
    for _ in range(8):
        n = 30
        jobs = pd.DataFrame(
            {
                "log_id": [f"j{i:02d}" for i in range(n)],
                "program": rng.choice(list("abcde"), n),
                "start_time": rng.integers(0, 12, n).astype(float),
                "nprocs": rng.choice([1, 4], n),
                "stripe_count": pd.array(
                    np.where(rng.random(n) < 0.15, None, rng.choice([1, 2, 4], n)), dtype="Int64"
                ),
                "stripe_size": pd.array(
                    np.where(rng.random(n) < 0.15, None, rng.choice([M, 4 * M], n)), dtype="Int64"
                ),
                "throughput_mib_s": np.where(
                    rng.random(n) < 0.15, np.nan, rng.integers(1, 6, n) * 100.0
                ),  # ties
                "shared": rng.random(n) < 0.5,
                "io_procs": rng.integers(1, 8, n),
            }
        )
        out = advise_runs(jobs, max_osts=6).set_index("log_id")
        order = jobs.sort_values(["start_time", "log_id"])
        for _, j in jobs.iterrows():
            same = order[order["program"] == j["program"]]
            prior = same[
                (same["start_time"] < j["start_time"])
                | ((same["start_time"] == j["start_time"]) & (same["log_id"] < j["log_id"]))
            ]
            others = jobs[
                (jobs["program"] != j["program"]) & (jobs["start_time"] < j["start_time"])
            ]
            want = for_run(prior, others, j["nprocs"], max_osts=6)
            if want is None:
                assert j["log_id"] not in out.index
                continue
            row = out.loc[j["log_id"]]
            assert (row["phase"], row["stripe_count"], row["stripe_size"], row["run_number"]) == (
                want.phase,
                want.stripe_count,
                want.stripe_size,
                len(prior) + 1,
            )
            assert row["evidence"] == list(want.evidence)


def test_advise_runs_without_the_jobs_that_have_no_stripe_value():
    """Jobs with neither a stripe count nor a size left out, each kept job told how many of its
    application's earlier jobs were (SKIPPED_BEFORE, worked here by brute force from the order the
    paper's replay takes): the same advice, run numbers and evidence as over the whole history."""
    rng = np.random.default_rng(5)
    for _ in range(10):
        n = 40
        bare = rng.random(n) < 0.5  # half the jobs not on Lustre: no stripe value at all
        jobs = pd.DataFrame(
            {
                "log_id": [f"j{i:02d}" for i in range(n)],
                "program": rng.choice(list("abc"), n),
                "start_time": rng.integers(0, 10, n).astype(float),
                "nprocs": rng.choice([1, 4], n),
                "stripe_count": pd.array(
                    np.where(bare, None, rng.choice([1, 2, 4], n)), dtype="Int64"
                ),
                "stripe_size": pd.array(
                    np.where(bare | (rng.random(n) < 0.2), None, rng.choice([M, 4 * M], n)),
                    dtype="Int64",
                ),
                "throughput_mib_s": np.where(
                    rng.random(n) < 0.1, np.nan, rng.integers(1, 6, n) * 100.0
                ),
                "shared": rng.random(n) < 0.5,
                "io_procs": rng.integers(1, 8, n),
            }
        )
        whole = advise_runs(jobs, max_osts=6).set_index("log_id")
        order = jobs.sort_values(["start_time", "log_id"]).reset_index(drop=True)
        left_out = order["stripe_count"].isna() & order["stripe_size"].isna()
        before = [
            int((left_out[:i] & (order["program"][:i] == order["program"][i])).sum())
            for i in range(n)
        ]
        kept = order.assign(**{SKIPPED_BEFORE: before})[~left_out]
        part = advise_runs(kept.sample(frac=1, random_state=1), max_osts=6).set_index("log_id")
        mine = whole.loc[whole.index.isin(kept["log_id"])]
        assert len(part) > 0 and (whole["evidence"].map(lambda e: "skipped" in e[-1])).any()
        pd.testing.assert_frame_equal(part.sort_index(), mine.sort_index())


def _random_lake(rng, n, programs="abcd", bare_share=0.3):
    bare = rng.random(n) < bare_share  # not on Lustre: no stripe value at all
    return pd.DataFrame(
        {
            "log_id": [f"j{i:03d}" for i in range(n)],
            "program": rng.choice(list(programs), n),
            "start_time": np.where(
                rng.random(n) < 0.05, np.nan, rng.integers(0, 40, n).astype(float)
            ),
            "nprocs": rng.choice([1, 4, 8], n),
            "stripe_count": pd.array(
                np.where(bare | (rng.random(n) < 0.1), None, rng.choice([1, 2, 4], n)),
                dtype="Int64",
            ),
            "stripe_size": pd.array(
                np.where(bare | (rng.random(n) < 0.2), None, rng.choice([M, 4 * M], n)),
                dtype="Int64",
            ),
            "throughput_mib_s": np.where(
                rng.random(n) < 0.1, np.nan, rng.integers(1, 6, n) * 100.0
            ),  # ties; whole numbers, so sums in any order are exact
            "shared": rng.random(n) < 0.5,
            "io_procs": rng.integers(1, 8, n),
        }
    )


def test_advise_runs_from_a_prior_gives_the_later_jobs_the_whole_replays_advice():
    """A cut at a start time: the jobs before it summed up (`history_prior`), the jobs from it on
    replayed (the jobs with no stripe value left out and counted as in a night's replay): every
    later job's advice, run number and evidence equal the replay of the whole history's."""
    rng = np.random.default_rng(17)
    checked = 0
    for trial in range(12):
        jobs = _random_lake(rng, 80)
        whole = advise_runs(jobs, max_osts=6).set_index("log_id")
        cut = float(rng.integers(1, 40)) if trial else 0.0
        start = jobs["start_time"]
        later = jobs[~(start < cut)]  # from the cut on, and the jobs with no start time
        prior = history_prior(jobs[start < cut])
        order = later.sort_values(["start_time", "log_id"], na_position="last").reset_index(
            drop=True
        )
        left_out = order["stripe_count"].isna() & order["stripe_size"].isna()
        before = [
            int((left_out[:i] & (order["program"][:i] == order["program"][i])).sum())
            for i in range(len(order))
        ]
        kept = order.assign(**{SKIPPED_BEFORE: before})[~left_out]
        part = advise_runs(kept, max_osts=6, prior=prior).set_index("log_id")
        mine = whole.loc[whole.index.isin(kept["log_id"])]
        pd.testing.assert_frame_equal(part.sort_index(), mine.sort_index())
        checked += len(part)
    assert checked > 300
    assert set(whole["phase"]) == {"initial", "rule", "heuristic"}


def test_history_prior_counts_runs_and_keeps_the_first_and_last_two():
    jobs = pd.DataFrame(
        {
            "log_id": ["a1", "a2", "a3", "a4", "b1"],
            "program": ["a", "a", "a", "a", "b"],
            "start_time": [1.0, 2.0, 3.0, 4.0, 2.0],
            "nprocs": [4, 4, 4, 4, 8],
            "stripe_count": pd.array([1, None, 2, 4, 8], dtype="Int64"),
            "stripe_size": pd.array([M, M, None, M, M], dtype="Int64"),
            "throughput_mib_s": [100.0, 50.0, 200.0, np.nan, 300.0],
            "shared": [True, False, True, True, False],
            "io_procs": [4, 1, 4, 4, 1],
        }
    )
    p = history_prior(jobs)
    runs = {(r.program, r.which): r.log_id for r in p.runs.itertuples()}
    # a2 has no stripe count, a4 no throughput: a's usable runs are a1 and a3
    assert runs == {
        ("a", "first"): "a1",
        ("a", "previous"): "a1",
        ("a", "latest"): "a3",
        ("b", "first"): "b1",
        ("b", "latest"): "b1",
    }
    a = p.cells[p.cells["program"] == "a"]
    assert a["jobs"].sum() == 4 and a["tp_n"].sum() == 3 and a["tp_sum"].sum() == 350.0
