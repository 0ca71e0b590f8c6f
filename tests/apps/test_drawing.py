"""apps/drawing.py: a page's figures drawn in forked workers are the figures drawn here, byte for
byte, handed back in the order they were added; a figure that fails is a note and the others are
drawn; a worker that dies or hangs costs the page its parallelism, not its figures."""

from __future__ import annotations

import multiprocessing
import os
import time

import pandas as pd
import pytest

from apps import drawing
from apps import summary_sections as ss

PARENT = os.getpid()
forks = pytest.mark.skipif(
    not drawing.can_fork() or drawing.usable_cores() < 2,
    reason="draws in workers only where the platform forks and two cores are usable",
)


def _cost(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "module": ["POSIX", "STDIO"][:n],
            "read_time_s": [1.5, 0.25][:n],
            "write_time_s": [3.0, 0.5][:n],
            "meta_time_s": [0.1, 0.0][:n],
            "wait_time_s": [0.0, 0.2][:n],
        }
    )


def _render(workers: int, calls) -> tuple[list, bool]:
    got: list = []
    d = drawing.Drawings(workers=workers, timeout_s=60)
    for fn, args in calls:
        d.add(fn, *args, done=lambda png, err: got.append((png, err)))
    d.render()
    return got, d.parallel


def _boom() -> bytes:
    raise ValueError("no data to draw")


@forks
def test_figures_drawn_in_workers_are_the_figures_drawn_here():
    calls = [
        (ss.draw_io_cost, (_cost(2), 10.0)),
        (ss.draw_io_cost, (_cost(1), None)),
        (_boom, ()),
        (ss.draw_io_cost, (_cost(2), 2.0)),
    ]
    here, parallel_here = _render(1, calls)
    there, parallel_there = _render(2, calls)
    assert (parallel_here, parallel_there) == (False, True)
    assert there == here  # PNG bytes and errors, in the order added
    pngs = [png for png, _ in here]
    assert all(p.startswith(b"\x89PNG") for i, p in enumerate(pngs) if i != 2)
    assert len({pngs[0], pngs[1], pngs[3]}) == 3  # three different figures, not one three times
    assert here[2] == (None, "ValueError: no data to draw")


def _dies() -> bytes:
    if os.getpid() != PARENT:
        os._exit(3)  # a worker killed mid-figure
    return b"drawn here"


def _hangs() -> bytes:
    if os.getpid() != PARENT:
        time.sleep(30)
    return b"drawn here"


@forks
@pytest.mark.parametrize("fn", [_dies, _hangs], ids=["worker dies", "worker hangs"])
def test_a_worker_that_fails_costs_the_parallelism_not_the_figure(fn):
    got = []
    d = drawing.Drawings(workers=2, timeout_s=2)
    d.add(fn, done=lambda png, err: got.append((png, err)))
    d.add(lambda: b"second", done=lambda png, err: got.append((png, err)))
    t0 = time.monotonic()
    d.render()
    assert not d.parallel and got == [(b"drawn here", None), (b"second", None)]
    assert time.monotonic() - t0 < 20
    assert multiprocessing.active_children() == []  # no worker left behind


def test_one_figure_or_one_worker_draws_here():
    for workers, n in ((1, 3), (4, 1)):
        calls = [(lambda i=i: f"figure {i}".encode(), ()) for i in range(n)]
        got, parallel = _render(workers, calls)
        assert not parallel and got == [(f"figure {i}".encode(), None) for i in range(n)]
    assert drawing._PENDING == []  # nothing kept after a render


@forks
def test_figures_after_a_preload_are_the_same_and_nothing_draws_before_it_ends(monkeypatch):
    """`preload` warms matplotlib up in a thread while a page reads; the figures drawn after it
    are the same bytes, the warm-up ran once, and `render` forked only after the thread ended."""
    import threading

    calls = [(ss.draw_io_cost, (_cost(2), 10.0)), (ss.draw_io_cost, (_cost(1), None))]
    here, _ = _render(1, calls)
    monkeypatch.setattr(drawing, "_WARM", [])
    monkeypatch.setattr(drawing, "_PRELOAD", [])
    warmed, real = [], drawing._warm_up

    def slow_warm_up():
        time.sleep(0.5)  # long enough for `render` to be called while it runs
        real()
        warmed.append(time.monotonic())

    monkeypatch.setattr(drawing, "_warm_up", slow_warm_up)
    drawing.preload()
    drawing.preload()  # a second call starts no second thread
    assert [t.name for t in threading.enumerate()].count("matplotlib-preload") == 1
    forked = []
    real_in_workers = drawing.Drawings._in_workers

    def in_workers(self, calls, n):
        forked.append(time.monotonic())
        return real_in_workers(self, calls, n)

    monkeypatch.setattr(drawing.Drawings, "_in_workers", in_workers)
    there, parallel = _render(2, calls)
    assert parallel and there == here
    assert len(warmed) == 1 and forked and forked[0] >= warmed[0]
    assert drawing._PRELOAD == [] and drawing._WARM == [True]


def _stamp(tag: str) -> bytes:
    return f"{tag} {os.getpid()}".encode()


@forks
def test_many_figures_are_drawn_once_each_by_at_most_workers_processes():
    """More figures than workers (a fleet page draws hundreds): each drawn once, in a worker, and
    handed back in the order added, by no more processes than `workers`."""
    got: list = []
    d = drawing.Drawings(workers=2, timeout_s=60)
    for i in range(40):
        d.add(_stamp, f"f{i}", done=lambda png, err: got.append((png, err)))
    d.render()
    tags = [png.decode().split() for png, _ in got]
    assert [t[0] for t in tags] == [f"f{i}" for i in range(40)]
    assert all(int(pid) != PARENT for _, pid in tags) and len({pid for _, pid in tags}) <= 2
    assert d.parallel and drawing._PENDING == []
