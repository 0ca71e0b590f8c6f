"""Commit subjects stay short: at most 72 characters, figures in the body and the docs.

Checked for every commit after `fca4f59` (the last commit before the rule), so the history
that came before is left as it is. A clone without git or without that commit skips, saying
so; with `CI` set it fails instead.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULE_FROM = "fca4f59"
MAX_SUBJECT = 72


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def _subjects_since(rev: str) -> list[str]:
    if shutil.which("git") is None or _git("rev-parse", "--verify", f"{rev}^{{commit}}").returncode:
        why = f"git or commit {rev} is not available in this checkout"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return _git("log", "--format=%s", f"{rev}..HEAD").stdout.splitlines()


def test_commit_subjects_are_at_most_72_characters():
    long = [s for s in _subjects_since(RULE_FROM) if len(s) > MAX_SUBJECT]
    assert not long, f"commit subjects over {MAX_SUBJECT} characters: {long}"
