"""The figures of a page, drawn after its data is read: several at once in forked worker
processes where the platform forks, else one after another.

A page (`iolake report`) reads its rows and computes its tables first, and each figure it wants
is added to a `Drawings` as a call that returns PNG bytes, with what to do with them (`done`).
`render` then draws them all: matplotlib is single-threaded, so on a machine with more than one
core the calls are spread over forked workers (`workers`, at most the cores this process may
use). A worker only runs the drawing calls on data already in memory: nothing in it reads the
lake (delta-rs refuses to run in a forked child) and nothing is pickled but the PNG bytes and
error messages going back. Where fork is not the platform's way (macOS, Windows), with one core
or one figure, or when the workers fail to answer within `timeout_s`, the figures are drawn in
this process, one after another, and the page is the same.

A figure whose call raises is not drawn: `done` gets None and the error's text, and the page says
so (a page without one figure beats no page).
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

DEFAULT_TIMEOUT_S = 300.0  # then the pool is given up and the figures drawn here

Done = Callable[[bytes | None, str | None], None]


@dataclass
class _Call:
    fn: Callable[..., bytes]
    args: tuple
    done: Done


_PENDING: list[_Call] = []  # what a forked worker draws: set before the fork, read by index


def _run(call: _Call) -> tuple[bytes | None, str | None]:
    try:
        return call.fn(*call.args), None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"


def _draw_one(i: int) -> tuple[bytes | None, str | None]:
    """In a forked worker: the i-th call of the figures set before the fork."""
    return _run(_PENDING[i])


def png_of(draw_to_path: Callable[..., object], *args, **kwargs) -> bytes:
    """PNG bytes of a drawing function that saves its figure to `path` (a keyword; matplotlib's
    `savefig` takes a file object as well as a name): drawn into memory."""
    buf = io.BytesIO()
    draw_to_path(*args, path=buf, **kwargs)
    return buf.getvalue()


_PRELOAD: list[threading.Thread] = []  # the thread `preload` started, until `warm_up` joins it


def preload() -> None:
    """Start `warm_up` in a thread, to load matplotlib while the caller reads the lake (delta-rs
    and Arrow release the GIL as they read): a page's figures then start sooner. `warm_up` and
    `Drawings.render` wait for it, so nothing draws, and no worker is forked, while it runs."""
    if not _PRELOAD and not _WARM:
        thread = threading.Thread(target=_warm_up, name="matplotlib-preload", daemon=True)
        _PRELOAD.append(thread)
        thread.start()


def _join_preload() -> None:
    while _PRELOAD:
        _PRELOAD.pop().join()


def warm_up() -> None:
    """Load what every figure needs (matplotlib's Agg canvas, its default font, the text layout
    and mathtext parsers, Pillow's PNG encoder) once here, before the fork, rather than once in
    each worker (or wait for `preload`'s thread doing it)."""
    _join_preload()
    if not _WARM:
        _warm_up()


_WARM: list[bool] = []  # [True] once a warm-up has run in this process


def _warm_up() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1), dpi=10)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_yscale("log")
    ax.set_ylim(1, 1000)
    ax.set_title("warm")
    fig.savefig(io.BytesIO(), format="png")  # draws, and loads Pillow's image plugins
    _WARM.append(True)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Linux forks cheaply and safely for this use; elsewhere the figures are drawn here."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


@dataclass
class Drawings:
    """Figures to draw: `add` each, then `render` once."""

    workers: int | None = None  # None: usable_cores(); 1 draws in this process
    timeout_s: float = DEFAULT_TIMEOUT_S
    calls: list[_Call] = field(default_factory=list)
    parallel: bool = False  # set by `render`: whether the workers drew them

    def add(self, fn: Callable[..., bytes], *args, done: Done) -> None:
        """Draw `fn(*args)` (PNG bytes) later; `done(png, None)` or `done(None, error)` then."""
        self.calls.append(_Call(fn, args, done))

    def render(self) -> None:
        """Draw every figure added and hand each result to its `done`, in the order added."""
        calls, self.calls = self.calls, []
        _join_preload()
        n = min(self.workers or usable_cores(), len(calls))
        parallel = n > 1 and can_fork()
        if parallel:
            warm_up()
        results = self._in_workers(calls, n) if parallel else None
        self.parallel = results is not None
        if results is None:
            results = [_run(call) for call in calls]
        for call, (png, error) in zip(calls, results):
            call.done(png, error)

    def _in_workers(self, calls: list[_Call], n: int) -> list | None:
        """The results from `n` forked workers, in the order added; None when the pool could not
        start, a worker died or they did not answer within `timeout_s` (the caller then draws
        here)."""
        _PENDING[:] = calls
        pool = None
        try:
            # A worker lives for one page, so its cyclic garbage collector is off: matplotlib's
            # artists are cycles whose collections cost drawing time (docs/benchmarks.md,
            # report_reads), and what they would free goes with the worker.
            pool = ProcessPoolExecutor(
                n, mp_context=multiprocessing.get_context("fork"), initializer=gc.disable
            )
            futures = [pool.submit(_draw_one, i) for i in range(len(calls))]
            results = [f.result(timeout=self.timeout_s) for f in futures]
            pool.shutdown()
            return results
        except (OSError, BrokenProcessPool, FutureTimeout):
            if pool is not None:  # no worker outlives the page (nor keeps the CLI from exiting)
                for worker in list((getattr(pool, "_processes", None) or {}).values()):
                    worker.kill()
                pool.shutdown(wait=True, cancel_futures=True)
            return None
        finally:
            _PENDING.clear()
