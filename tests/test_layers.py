"""The layers contract (`.importlinter`) holds on the code, and it can fail.

`lint-imports` (import-linter, from this interpreter's environment) runs from the project root;
then on copies of the packages given a deliberate cycle (the platform importing an app; the lake
importing the runner), where it must report a contract broken.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.data import ROOT, need

PACKAGES = (
    "iolake",
    "apps",
    "jobs",
    "features",
    "models",
    "schemas",
    "readers",
    "cluster",
    "bench",
    "tests",
)
CONTRACTS = 4
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the packages under `root` (its working directory, first on sys.path)."""
    need(
        LINT_IMPORTS.exists(),
        f"needs import-linter beside {sys.executable} (pip install import-linter)",
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_layers_contract_is_kept():
    out = lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in out.stdout, out.stdout


@pytest.mark.parametrize(
    "module, line, broken",
    [
        # the platform importing an app: upward, and a cycle (apps.report imports iolake.config)
        ("iolake/config.py", "import apps.report", "- iolake.config -> apps.report"),
        # the lake importing the runner, which imports the lake: a cycle inside the platform
        ("iolake/lake/delta.py", "import iolake.runner", "- .lake -> .runner"),
        # test support reaching into a test module, which bench could then reach through it
        (
            "tests/support/frames.py",
            "import tests.jobs.test_watch",
            "tests.support is not allowed to import tests.jobs",
        ),
    ],
    ids=["upward", "sibling", "support-to-test"],
)
def test_layers_contract_fails_on_a_deliberate_cycle(tmp_path, module, line, broken):
    for p in PACKAGES:
        shutil.copytree(ROOT / p, tmp_path / p, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path)
    path = tmp_path / module
    path.write_text(path.read_text() + f"\n{line}  # noqa: E402  (deliberate)\n")

    out = lint_imports(tmp_path)

    assert out.returncode == 1, out.stdout + out.stderr
    assert f"Contracts: {CONTRACTS - 1} kept, 1 broken." in out.stdout, out.stdout
    assert broken in out.stdout, out.stdout
