"""The exit codes of every iolake command and stage module, mapped in one place.

0  success
1  anything else (a bug, a lost executor, a full disk: read the traceback)
2  bad usage or configuration (the message names the file and key), or a missing input
3  a data-quality gate stopped a commit (nothing was committed; retrying will not help)
"""

from __future__ import annotations

import sys

OK, FAILED, USAGE, GATE = 0, 1, 2, 3


def exit_code_for(exc: BaseException | None) -> int:
    """The exit code a command returns when `exc` ends it (None: success)."""
    from iolake.config import ConfigError
    from iolake.lake import GateFailed

    if exc is None:
        return OK
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else FAILED
    if isinstance(exc, (ConfigError, FileNotFoundError)):
        return USAGE
    if isinstance(exc, GateFailed):
        return GATE
    if isinstance(exc, KeyboardInterrupt):
        return 130
    return FAILED


def guarded(prog: str, fn) -> int:
    """Run `fn() -> int`; the errors users cause become a one-line message and their exit code."""
    from iolake.config import ConfigError
    from iolake.lake import GateFailed

    try:
        return fn()
    except (ConfigError, FileNotFoundError, GateFailed) as e:
        what = "configuration error: " if isinstance(e, ConfigError) else ""
        print(f"{prog}: {what}{e}", file=sys.stderr)
        return exit_code_for(e)
