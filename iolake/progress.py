"""Progress of long Spark work on the console: tasks done / total, items and rate, every few seconds."""

from __future__ import annotations

import threading
import time


class SparkProgress:
    """While the block runs, report the running stages' task counts, scaled to `total_items`; at its
    end, the total and the rate, or that it failed (a block that raised did not do them all)."""

    def __init__(
        self,
        spark,
        label: str,
        total_items: int,
        unit: str = "items",
        every_s: float = 5.0,
        echo=print,
    ):
        self.tracker = spark.sparkContext.statusTracker()
        self.label, self.total, self.unit, self.every, self.echo = (
            label,
            total_items,
            unit,
            every_s,
            echo,
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.t0 = 0.0

    def __enter__(self):
        self.t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, exc_type, *exc):
        self._stop.set()
        self._thread.join(timeout=2)
        dt = time.monotonic() - self.t0
        if exc_type is not None:  # the work failed: no total, no rate (its error follows)
            self.echo(f"[{self.label}] failed after {dt:.1f} s: {exc_type.__name__}")
            return
        self.echo(
            f"[{self.label}] {self.total}/{self.total} {self.unit} in {dt:.1f} s "
            f"({self.total / max(dt, 1e-9):.1f} {self.unit}/s)"
        )

    def _loop(self):
        while not self._stop.wait(self.every):
            done = total = 0
            for sid in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(sid)
                if info:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                dt = time.monotonic() - self.t0
                items = int(self.total * done / total)
                self.echo(
                    f"[{self.label}] tasks {done}/{total}, ~{items}/{self.total} {self.unit}, "
                    f"{items / max(dt, 1e-9):.1f} {self.unit}/s"
                )
