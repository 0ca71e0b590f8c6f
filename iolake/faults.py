"""Failpoints for crash tests: `IOLAKE_FAULT=after-merge:posix` SIGKILLs the process right there.

Used by the kill-and-rerun tests to stop a run between two commits, where a crash hurts most.
Unset (always, outside tests) it does nothing.
"""

import os
import signal


def point(name: str) -> None:
    if os.environ.get("IOLAKE_FAULT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
