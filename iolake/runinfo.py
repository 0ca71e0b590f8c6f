"""Identity of a run: its id, the code's git sha, the config digest — stamped on every commit — and
the digest of the settings that shape models (`Config.model_digest`), which `train` keys on."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git_sha() -> str:
    if os.environ.get("IOLAKE_GIT_SHA"):
        return os.environ["IOLAKE_GIT_SHA"]
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    git_sha: str
    config_digest: str
    model_digest: str

    @classmethod
    def new(cls, conf) -> RunInfo:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        return cls(f"{stamp}-{uuid.uuid4().hex[:8]}", git_sha(), conf.digest(), conf.model_digest())
