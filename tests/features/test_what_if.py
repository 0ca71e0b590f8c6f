"""The what-if search (features/what_if.py) against bandwidth functions whose best setting is worked
out by hand here. No Spark, no MLflow: `predict` is a plain function."""

import math

import numpy as np
import pandas as pd
import pytest

from features import what_if

KIB, MIB = 1024, 1 << 20


def file_row(**kw) -> dict:
    row = {
        "interface": "POSIX",
        "collective": False,
        "fsync": False,
        "fsync_per_write": False,
        "preallocate": False,
        "file_view": False,
        "transfer_size": 4 * KIB,
        "rw_per_open": 1024.0,
        "io_type": "WO",
        "random_access": False,
        "file_per_process": True,
        "unique_dir": False,
        "n_ranks": 1,
        "nprocs": 4,
        "tier": "pfs",
    }
    row.update(kw)
    return row


def toy(frame: pd.DataFrame) -> np.ndarray:
    """MiB/s = tier factor (bb 3, pfs 1) x 10 x sqrt(transfer KiB), flat above 1 MiB; MPI-IO x0.8,
    collective x1.5 (on top); a shared file's bandwidth is 2x one file-per-process file."""
    ts = np.minimum(frame["transfer_size"].to_numpy(float), MIB) / KIB
    bw = np.where(frame["tier"] == "bb", 3.0, 1.0) * 10 * np.sqrt(ts)
    bw = (
        bw
        * np.where(frame["interface"] == "MPI-IO", 0.8, 1.0)
        * np.where(frame["collective"], 1.5, 1.0)
    )
    return bw * np.where(frame["file_per_process"], 1.0, 2.0)


def space(**kw) -> what_if.Space:
    base = dict(tiers=("bb", "pfs"), dimensions=("tier", "transfer_size"), min_speedup=1.1)
    base.update(kw)
    return what_if.Space(**base)


def test_exhaustive_search_finds_the_hand_worked_best_and_its_speedup():
    (res,) = what_if.search(pd.DataFrame([file_row()]), toy, space())
    # 4 KiB on pfs: 10 * sqrt(4) = 20 MiB/s; best: bb, 1 MiB (flat above, ties -> the first, smallest): 3*10*32 = 960
    assert res.current == {
        "tier": "pfs",
        "transfer_size": 4 * KIB,
        "api": "POSIX",
        "layout": "file per process",
    }
    assert res.best["tier"] == "bb" and res.best["transfer_size"] == MIB
    assert res.bandwidth_now == pytest.approx(20.0)
    assert res.bandwidth_best == pytest.approx(960.0)
    assert res.speedup == pytest.approx(48.0)
    assert what_if.advised(res, 1.1)
    # 2 tiers x sizes 4K..4M (6) = 12 candidates, every one scored once
    assert res.calls == 12
    # each dimension alone: bb at 4 KiB = 3x; 1 MiB on pfs = sqrt(1024/4) = 16x
    assert res.by_dimension["tier"] == ("bb", pytest.approx(3.0))
    assert res.by_dimension["transfer_size"] == (MIB, pytest.approx(16.0))


def test_requests_never_exceed_the_bytes_of_an_open_and_never_shrink():
    # 4 KiB x 2 per open = 8 KiB per open: no listed size fits above 4 KiB, so only the tier can change
    (res,) = what_if.search(pd.DataFrame([file_row(rw_per_open=2.0)]), toy, space())
    assert res.best["transfer_size"] == 4 * KIB and res.best["tier"] == "bb"
    # a file at 256 KiB is never advised a smaller size, even where the function would prefer one
    rev = lambda f: 1e6 / f["transfer_size"].to_numpy(float)  # noqa: E731 - smaller is faster here
    (res,) = what_if.search(
        pd.DataFrame([file_row(transfer_size=256 * KIB)]), rev, space(dimensions=("transfer_size",))
    )
    assert res.best["transfer_size"] == 256 * KIB and not what_if.advised(res, 1.0)
    (res,) = what_if.search(
        pd.DataFrame([file_row(transfer_size=256 * KIB)]),
        rev,
        space(dimensions=("transfer_size",), smaller_transfers=True),
    )
    assert res.best["transfer_size"] == KIB


def test_same_bytes_per_open_when_the_size_changes():
    row = what_if.apply(
        file_row(),
        {"tier": "pfs", "transfer_size": 64 * KIB, "api": "POSIX", "layout": "file per process"},
    )
    assert row["transfer_size"] == 64 * KIB and row["rw_per_open"] == pytest.approx(1024 * 4 / 64)


def test_collective_is_advised_on_shared_files_only():
    dims = space(dimensions=("api",))
    (shared,) = what_if.search(
        pd.DataFrame([file_row(file_per_process=False, n_ranks=4)]), toy, dims
    )
    # POSIX 1.0, MPI-IO 0.8, MPI-IO collective 0.8 * 1.5 = 1.2 -> collective, 1.2x
    assert shared.best["api"] == "MPI-IO collective" and shared.speedup == pytest.approx(1.2)
    (fpp,) = what_if.search(pd.DataFrame([file_row()]), toy, dims)
    assert fpp.best["api"] == "POSIX" and not what_if.advised(fpp, 1.0)


def test_layout_compares_job_equivalent_bandwidth():
    # file per process on 4 processes: 4 x 20 = 80 MiB/s for the job; one shared file: 2 x 20 = 40 -> stay
    (res,) = what_if.search(pd.DataFrame([file_row()]), toy, space(dimensions=("layout",)))
    assert res.best["layout"] == "file per process"
    assert res.by_dimension["layout"] == ("shared file", pytest.approx(0.5))


def test_threshold_and_placement_model():
    flat = lambda f: np.where(f["tier"] == "bb", 1.05, 1.0)  # noqa: E731 - bb 5% faster
    (res,) = what_if.search(pd.DataFrame([file_row()]), flat, space())
    assert res.best["tier"] == "bb" and res.speedup == pytest.approx(1.05)
    assert not what_if.advised(res, 1.1) and what_if.advised(res, 1.05)

    # a placement model that says pfs: the tier stays although the bandwidth model prefers bb
    def place(f):
        return pd.DataFrame({"predicted_tier": ["pfs"] * len(f), "probability": [0.9] * len(f)})

    (res,) = what_if.search(pd.DataFrame([file_row()]), flat, space(), place)
    assert (
        res.best["tier"] == "pfs"
        and res.placement == ("pfs", 0.9)
        and not what_if.advised(res, 1.0)
    )

    # ... and one that says bb moves the file whatever the predicted gain (1.05 < 1.1)
    def place_bb(f):
        return pd.DataFrame({"predicted_tier": ["bb"] * len(f), "probability": [0.7] * len(f)})

    (res,) = what_if.search(pd.DataFrame([file_row()]), flat, space(), place_bb)
    assert res.best["tier"] == "bb" and what_if.advised(res, 1.1)
    # without the site's words the tier's name, never a system's syntax; with them, the site's command
    assert "move the file to tier bb" in what_if.message(res) and "#DW" not in what_if.message(res)
    hints = (("bb", "move the file to the fast tier: stage-in <file>"), ("pfs", "unused"))
    assert "move the file to the fast tier: stage-in <file>" in what_if.message(res, hints)


def test_coordinate_descent_bounds_calls_and_agrees_on_a_separable_function():
    rows = pd.DataFrame(
        [file_row(), file_row(tier="bb", transfer_size=16 * KIB, file_per_process=False, n_ranks=4)]
    )
    dims = ("tier", "transfer_size", "api")  # the toy is separable in these
    full = what_if.search(rows, toy, space(dimensions=dims))
    bounded = what_if.search(rows, toy, space(dimensions=dims, max_calls=10))
    for a, b in zip(full, bounded):
        assert a.best == b.best and math.isclose(a.speedup, b.speedup)
        assert b.calls <= 10
    assert [r.calls for r in full] == [
        2 * 6 * 2,
        2 * 5 * 3,
    ]  # fpp: no collective; shared: sizes from 16 KiB
    assert full[1].best == {
        "tier": "bb",
        "transfer_size": MIB,
        "api": "MPI-IO collective",
        "layout": "shared file",
    }


def _moved(speedup: float, now: float, best: float) -> what_if.Result:
    """A hand-built answer: a 4 KiB POSIX file per process moved from pfs to bb by the placement
    model (probability 0.7), the bandwidth model's figures as given."""
    current = {
        "tier": "pfs",
        "transfer_size": 4 * KIB,
        "api": "POSIX",
        "layout": "file per process",
    }
    return what_if.Result(
        current=current,
        best=dict(current, tier="bb"),
        bandwidth_now=now,
        bandwidth_best=best,
        speedup=speedup,
        calls=1,
        placement=("bb", 0.7),
    )


def test_message_says_which_model_advises_a_move_the_bandwidth_model_predicts_slower():
    res = _moved(0.58, 120.0, 69.6)
    assert what_if.advised(res, 1.2)  # the placement model's move is advised whatever the gain
    assert what_if.message(res) == (
        "the placement model advises tier bb (probability 0.70); the bandwidth model predicts "
        "0.58x (slower: 120.0 -> 69.6 MiB/s): move the file to tier bb"
    )
    assert "faster" not in what_if.message(res)
    # no prediction on the advised tier: no figure either
    assert what_if.message(_moved(float("nan"), 120.0, float("nan"))) == (
        "the placement model advises tier bb (probability 0.70); the bandwidth model gives no "
        "speed-up for it: move the file to tier bb"
    )


def test_message_says_faster_when_both_models_agree():
    assert what_if.message(_moved(1.9, 100.0, 190.0)) == (
        "predicted 1.90x faster (100.0 -> 190.0 MiB/s): move the file to tier bb"
    )
    # a bandwidth-model search (no placement model) with a larger request
    current = {
        "tier": "pfs",
        "transfer_size": 4 * KIB,
        "api": "POSIX",
        "layout": "file per process",
    }
    res = what_if.Result(current, dict(current, transfer_size=MIB), 10.0, 25.0, 2.5, 7)
    assert what_if.message(res).startswith(
        "predicted 2.50x faster (10.0 -> 25.0 MiB/s): issue 1 MiB requests"
    )
