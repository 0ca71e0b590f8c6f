"""Peak memory of a process tree from /proc, sampled in a thread (the benchmarks' RSS figures).

The driver side is the tree minus PySpark's Python workers (its daemon and their children);
`total` is the whole tree.
"""
from __future__ import annotations

import os
import threading


def _procs() -> dict[int, tuple[int, int, str]]:
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


def split_rss(root: int) -> tuple[int, int]:
    """(driver, workers) RSS of the tree under `root`; workers are PySpark's daemon and its children."""
    procs = _procs()
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    driver = workers = 0
    todo = [(root, False)]
    while todo:
        pid, in_worker = todo.pop()
        if pid not in procs:
            continue
        _, rss, cmd = procs[pid]
        in_worker = in_worker or "pyspark.daemon" in cmd or "pyspark/daemon" in cmd or "pyspark.worker" in cmd
        if in_worker:
            workers += rss
        else:
            driver += rss
        todo += [(k, in_worker) for k in kids.get(pid, [])]
    return driver, workers


class PeakRSS:
    def __init__(self, pid: int):
        self.pid, self.driver, self.workers, self.total = pid, 0, 0, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.2):
            d, w = split_rss(self.pid)
            self.driver, self.workers, self.total = max(self.driver, d), max(self.workers, w), max(self.total, d + w)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join()
