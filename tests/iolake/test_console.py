"""iolake/cli.py `console_main`, the `iolake` console script, in child processes: a closed pipe
ends a command quietly with its own exit code; the read-only page commands skip the
interpreter's teardown once their output is out, the others do not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from iolake.exits import PIPE_CLOSED, USAGE

ROOT = Path(__file__).resolve().parents[2]
# the console script's body, with an exit handler that says whether the teardown ran
SCRIPT = (
    "import atexit, sys; from iolake.cli import console_main; "
    "atexit.register(lambda: print('teardown ran', file=sys.stderr)); "
    "sys.exit(console_main())"
)


def _console(*args: str, close_stdout: bool = False, cwd: Path = ROOT):
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    if close_stdout:
        proc.stdout.close()  # the reader goes away before the command writes
    out, err = proc.communicate(timeout=120)  # both pipes at once: neither can fill and block
    return proc.returncode, out or "", err


def test_a_closed_pipe_ends_the_command_quietly():
    rc, out, err = _console("stages")
    assert rc == 0 and "ingest" in out and "teardown ran" in err
    rc, _, err = _console("stages", close_stdout=True)
    assert rc == PIPE_CLOSED, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_page_commands_end_without_the_teardown_and_keep_their_exit_code(tmp_path):
    missing = tmp_path / "no-lake"
    rc, _, err = _console("report", "abc123", "--lake", str(missing), cwd=tmp_path)
    assert rc == USAGE, err  # the command's own code, through os._exit
    assert "teardown ran" not in err and str(missing) in err
    rc, out, err = _console("stages")  # any other command ends the normal way
    assert rc == 0 and "teardown ran" in err
