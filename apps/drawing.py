"""The figures of a page, drawn from its data in memory: several at once in forked worker
processes where the platform forks, else one after another.

A page (`iolake report`, `iolake fleet`) reads its rows and computes its tables, and each figure
it wants is added to a `Drawings` as a call that returns PNG bytes, with what to do with them
(`done`). matplotlib is single-threaded, so on a machine with more than one core each figure is
drawn in a worker forked for it (at most `workers` at once, by default the cores this process may
use): at `render`, or, for an `eager` page, as soon as the figure is added, while the page goes
on computing the next one's data. A worker only runs its drawing call on data already in memory:
nothing in it reads the lake (delta-rs refuses to run in a forked child) and nothing is pickled
but the PNG bytes and error messages going back. Where fork is not the platform's way (macOS,
Windows), with one core or one figure, or for the figures whose worker failed, died or did not
answer within `timeout_s`, the figures are drawn in this process, one after another, and the page
is the same.

A figure whose call raises is not drawn: `done` gets None and the error's text, and the page says
so (a page without one figure beats no page).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait

DEFAULT_TIMEOUT_S = 300.0  # then the workers are given up and their figures drawn here

Done = Callable[[bytes | None, str | None], None]


@dataclass
class _Call:
    fn: Callable[..., bytes]
    args: tuple
    done: Done


def _run(call: _Call) -> tuple[bytes | None, str | None]:
    try:
        return call.fn(*call.args), None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"


def _draw_in_worker(figures: list[tuple[int, _Call]], conn) -> None:
    """In a forked worker: draw each figure and send back (its index, what `_run` gives)."""
    for i, call in figures:
        conn.send((i, _run(call)))
    conn.close()


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
    and mathtext parsers) once here, before the fork, rather than once in each worker (or wait
    for `preload`'s thread doing it)."""
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
    fig.canvas.draw()
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
    """Figures to draw: `add` each, then `render` once.

    Figures are drawn in forked workers, at most `workers` at once, each worker sending back the
    PNG bytes of the figures it was given one by one. Without `eager`, `render` gives every figure
    to one of `workers` workers forked then (every worker-th figure each). With `eager`, a figure
    gets a worker of its own as soon as it is added while one is free, so it draws while the
    caller computes the next figure's data; `render` shares out what is left the same way. An
    eager caller adds figures only while no other thread of its own runs: a fork copies the
    calling thread alone."""

    workers: int | None = None  # None: usable_cores(); 1 draws in this process
    timeout_s: float = DEFAULT_TIMEOUT_S
    eager: bool = False
    calls: list[_Call] = field(default_factory=list)
    parallel: bool = False  # set by `render`: whether the workers drew every figure
    _results: dict[int, tuple[bytes | None, str | None]] = field(default_factory=dict, repr=False)
    _live: dict = field(default_factory=dict, repr=False)  # pipe end -> (its figures, worker)
    _started: int = field(default=0, repr=False)  # calls[:_started] went to a worker
    _broken: bool = field(default=False, repr=False)  # a fork failed, a worker died or hung

    def add(self, fn: Callable[..., bytes], *args, done: Done) -> None:
        """Draw `fn(*args)` (PNG bytes) later; `done(png, None)` or `done(None, error)` then."""
        self.calls.append(_Call(fn, args, done))
        if self.eager and self._slots():
            self._poll()
            while len(self._live) < self._slots() and self._started < len(self.calls):
                self._fork([self._started])  # the figures waiting longest first

    def render(self) -> None:
        """Draw every figure added and hand each result to its `done`, in the order added: the
        workers' results, and here what no worker drew (every figure where no worker can run)."""
        _join_preload()
        calls = self.calls
        deadline = time.monotonic() + self.timeout_s
        try:
            slots = self._slots()
            rest = list(range(self._started, len(calls))) if slots else []
            shares = [rest[k::slots] for k in range(slots) if rest[k::slots]]
            while (shares and not self._broken) or self._live:
                while shares and len(self._live) < slots and not self._broken:
                    self._fork(shares.pop(0))
                ready = wait(list(self._live), timeout=max(0.0, deadline - time.monotonic()))
                if not ready:  # hung: what the workers have not sent is drawn here
                    self._broken = True
                    break
                for conn in ready:
                    self._receive(conn)
        finally:
            self._stop_workers()
        results = [self._results.get(i) or _run(call) for i, call in enumerate(calls)]
        self.parallel = bool(calls) and len(self._results) == len(calls)
        self.calls, self._results, self._started, self._broken = [], {}, 0, False
        for call, (png, error) in zip(calls, results):
            call.done(png, error)

    def _slots(self) -> int:
        """Workers that may draw at once; 0 where the figures are drawn here."""
        n = self.workers or usable_cores()
        if not self.eager:  # all the figures are known: one is drawn here, without a fork
            n = min(n, len(self.calls))
        return n if n > 1 and can_fork() and not self._broken else 0

    def _fork(self, figures: list[int]) -> None:
        """Start a worker that draws these figures (indices into `calls`) and sends back what
        `_run` gives for each; matplotlib is warmed up here before the first fork."""
        if not self._started and not self._live:
            warm_up()
        ctx = multiprocessing.get_context("fork")
        try:
            theirs, ours = ctx.Pipe(duplex=False)
            worker = ctx.Process(
                target=_draw_in_worker,
                args=([(i, self.calls[i]) for i in figures], ours),
                daemon=True,
            )
            worker.start()
        except OSError:
            self._broken = True
            return
        ours.close()
        self._live[theirs] = (figures, worker)
        self._started = max(self._started, figures[-1] + 1)  # an eager fork: the next in order

    def _poll(self) -> None:
        """Take what the workers have sent so far, without waiting."""
        for conn in wait(list(self._live), timeout=0) if self._live else []:
            self._receive(conn)

    def _receive(self, conn) -> None:
        """One figure a worker sent; at its end, the worker joined (when it ended before sending
        all of its figures, no more workers: the rest are drawn here)."""
        try:
            i, result = conn.recv()
            self._results[i] = result
            return
        except (EOFError, OSError):
            pass
        figures, worker = self._live.pop(conn)
        if any(i not in self._results for i in figures):
            self._broken = True
        conn.close()
        worker.join()

    def _stop_workers(self) -> None:
        """No worker outlives `render` (nor keeps the CLI from exiting)."""
        for conn, (_, worker) in list(self._live.items()):
            worker.kill()
            worker.join()
            conn.close()
        self._live.clear()
