"""What the benchmarks share: paths, scratch folders, peak RSS, base-commit checkouts, alternating
best-of-N rounds, and the one result line each prints.

Every benchmark is a module run from the project root as `python -m bench.NAME`; it imports the
project's packages and `tests.support` directly (no `sys.path` edits). It reads only the inputs it
is given (and ../shared/data when present), writes into scratch folders it deletes, and ends with
`result(NAME, ...)`, the line `python -m bench --quick` collects.

- Paths: `ROOT` (the project), `SHARED` (../shared/data or `IOLAKE_SHARED_DATA`), `sample_logs()`
  (the Darshan logs shipped in the `darshan` wheel: present on every machine the project runs on).
- Processes: `iolake_cmd(...)` runs this tree's CLI in a child; `tree_env(tree)` points a child at
  another tree's code.
- Memory: `PeakRSS` (peak RSS of a process tree, sampled from /proc every 0.2 s, driver side and
  PySpark's Python workers apart), `StageRSS` (the same, restarted at each pipeline stage) and
  `STAGE_DONE` (the runner's `[stage] done in S s` line).
- A/B: `checkout(REV, DIR)` extracts a commit with `git archive` (the installed native decoder is
  shared by both trees); `alternate(rounds, timed, names)` runs each way per round, alternating
  which goes first, and keeps the best seconds of each.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("IOLAKE_SHARED_DATA", ROOT.parent / "shared" / "data"))
MIB = 2**20
STAGE_DONE = re.compile(r"^\[(\w+)\] done in ([0-9.]+) s")


# -- paths and processes -----------------------------------------------------------------------


def shared(*parts: str) -> Path:
    """A path under the shared data folder (it may be absent: check before reading)."""
    return SHARED.joinpath(*parts)


def sample_logs() -> Path:
    """The folder of sample Darshan logs in the `darshan` wheel (what `iolake run` ingests by default)."""
    from iolake.cli import sample_inputs

    return Path(sample_inputs()[0])


@contextlib.contextmanager
def scratch(name: str, keep: Path | None = None) -> Iterator[Path]:
    """A fresh folder for one run, deleted afterwards; with `keep`, that folder instead, kept."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    path = Path(tempfile.mkdtemp(prefix=f"iolake-bench-{name}-", dir=os.environ.get("TMPDIR")))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def iolake_cmd(*args: str) -> list[str]:
    """The command line of this tree's `iolake ARGS` (run it with cwd=ROOT)."""
    return [sys.executable, "-m", "iolake.cli", *args]


def tree_env(tree: Path) -> dict:
    """The environment of a child that runs the code of `tree` (this one or a `checkout`)."""
    return dict(os.environ, PYTHONPATH=str(tree))


INGEST_DECODE = re.compile(r"^\[decode\] \d+/\d+ logs in ([0-9.]+) s")
INGEST_TASKS = re.compile(r"over (\d+) task")


def ingest_run(inputs: list[str], lake: Path, tree: Path = ROOT, conf: Path | None = None) -> dict:
    """`python -m jobs.ingest INPUTS --lake LAKE` with the code of `tree` and its conf/ (or
    `conf`), in its own JVM: {wall, decode, stage (seconds), tasks (decode tasks)}; exits naming
    the tree when the ingest fails or prints no `[ingest] done in` line."""
    cmd = [sys.executable, "-m", "jobs.ingest", *inputs, "--lake", str(lake)]
    cmd += ["--conf-dir", str(conf or tree / "conf")]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=tree_env(tree), capture_output=True, text=True, cwd=tree)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"ingest ({tree}) exited {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}")
    out = {"wall": wall, "decode": None, "stage": None, "tasks": 0}
    for line in p.stdout.splitlines():
        if (m := INGEST_DECODE.match(line)) is not None:
            out["decode"] = float(m.group(1))
        elif (m := STAGE_DONE.match(line)) is not None and m.group(1) == "ingest":
            out["stage"] = float(m.group(2))
        if (m := INGEST_TASKS.search(line)) is not None:
            out["tasks"] = int(m.group(1))
    if out["stage"] is None:
        raise SystemExit(f"ingest ({tree}): no '[ingest] done in' line:\n{p.stdout[-3000:]}")
    return out


def parser(module: str, doc: str) -> argparse.ArgumentParser:
    """The argument parser of benchmark `module` (its `__spec__.name`), described by the first
    paragraph of its docstring `doc`."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n\n")[0])


def result(name: str, text: str) -> None:
    """The benchmark's one-line result, the line `python -m bench --quick` shows."""
    print(f"[result] {name}: {text}", flush=True)


# -- peak RSS of a process tree ------------------------------------------------------------------


def procs() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, RSS bytes, command line) for every readable process."""
    page = os.sysconf("SC_PAGE_SIZE")
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            out[int(d)] = (int(fields[1]), int(fields[21]) * page, cmd)
        except (OSError, IndexError, ValueError):
            pass
    return out


def children(table: dict[int, tuple[int, int, str]]) -> dict[int, list[int]]:
    """parent pid -> its children's pids, from a `procs()` table."""
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    return kids


def split_rss(root: int) -> tuple[int, int]:
    """(driver, workers) RSS of the tree under `root`; workers are PySpark's daemon and its children."""
    table = procs()
    kids = children(table)
    driver = workers = 0
    todo = [(root, False)]
    while todo:
        pid, in_worker = todo.pop()
        if pid not in table:
            continue
        _, rss, cmd = table[pid]
        in_worker = in_worker or any(
            w in cmd for w in ("pyspark.daemon", "pyspark/daemon", "pyspark.worker")
        )
        if in_worker:
            workers += rss
        else:
            driver += rss
        todo += [(k, in_worker) for k in kids.get(pid, [])]
    return driver, workers


class PeakRSS:
    """Peak RSS of the tree under `pid` while the `with` block runs: `driver`, `workers`, `total`."""

    def __init__(self, pid: int):
        self.pid, self.driver, self.workers, self.total = pid, 0, 0, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.2):
            d, w = split_rss(self.pid)
            self.driver, self.workers, self.total = (
                max(self.driver, d),
                max(self.workers, w),
                max(self.total, d + w),
            )

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join()


class StageRSS:
    """Peak (driver, workers) RSS of a process tree, restarted at each `cut()`. `split(pid)` gives
    the two sides (default `split_rss`; the cluster bench splits driver from executors)."""

    def __init__(self, pid: int, split=split_rss):
        self.pid, self.split, self.driver, self.workers = pid, split, 0, 0
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            d, w = self.split(self.pid)
            with self._lock:
                self.driver, self.workers = max(self.driver, d), max(self.workers, w)

    def cut(self) -> tuple[int, int]:
        with self._lock:
            out, self.driver, self.workers = (self.driver, self.workers), 0, 0
        return out

    def stop(self) -> None:
        self._stop.set()
        self._t.join()


# -- A/B: a base commit against this tree ------------------------------------------------------------


def checkout(rev: str, into: Path) -> Path:
    """The files of git revision `rev` extracted into `into` (`git archive`: no worktree, no .git)."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def git_show(rev: str, path: str) -> str:
    """The text of `path` at git revision `rev`."""
    return subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def alternate(
    rounds: int,
    timed: Callable[[str], tuple[float, object]],
    names: tuple[str, str] = ("base", "this"),
) -> tuple[dict, dict]:
    """`timed(name) -> (seconds, output)` for both names, `rounds` times, the first name first in
    odd rounds and second in even ones (drift on a shared machine hits both alike): the best
    seconds per name, and the last output of each."""
    best: dict[str, float] = {}
    last: dict[str, object] = {}
    for k in range(rounds):
        for name in names if k % 2 == 0 else names[::-1]:
            seconds, last[name] = timed(name)
            best[name] = min(best.get(name, seconds), seconds)
            print(f"round {k + 1} {name}: {seconds:.1f} s", flush=True)
    return best, last
