"""Where the tests find the project and the shared data, and what they do when it is absent.

`ROOT` is the project root; `SHARED_DATA` is ../shared/data beside it (or `IOLAKE_SHARED_DATA`).
A test that needs something absent (the shared traces, the native extension, a tool) calls
`need(condition, why)` or `shared_path(...)`: it is skipped with `why` on a developer's machine,
and fails under CI (`CI` set), where a skip would hide a test that never ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("IOLAKE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def in_ci() -> bool:
    """CI runs with `CI` set (CI=true): there a missing tool or data is a failure, not a skip."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def need(condition: bool, why: str) -> None:
    """Skip the calling test (or module, at import time) unless `condition`; under CI, fail instead.

    `why` says what is missing and how to get it, e.g. "needs iolake_native (pip install ./native)".
    """
    if condition:
        return
    if in_ci():
        pytest.fail(why, pytrace=False)
    pytest.skip(why, allow_module_level=True)


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data, or skip the calling test saying it is absent (fail under CI)."""
    p = SHARED_DATA.joinpath(*parts)
    need(p.exists(), f"needs {p} (the shared data folder beside the project); it is absent here")
    return p
