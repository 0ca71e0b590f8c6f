"""The exit codes of every iolake command and stage module, mapped in one place.

0  success
1  anything else (a bug, a lost executor, a full disk: read the traceback)
2  bad usage or configuration (the message names the file and key), or a missing input
3  a data-quality gate stopped a commit (nothing was committed; retrying will not help)
4  a shared service is busy, unreachable or refused the credentials: another run holds the S3
   lake's writer lease, the object store or the MLflow tracking server cannot be reached or
   refused us (the message names the service; nothing was written; retry, or fix credentials)
130 interrupted (Ctrl-C)
141 the reader of the command's output went away (a closed pipe: `iolake report J | head`), as
    for a program a shell's SIGPIPE ends
"""

from __future__ import annotations

import sys

OK, FAILED, USAGE, GATE, SERVICE = 0, 1, 2, 3, 4
PIPE_CLOSED = 141


def exit_code_for(exc: BaseException | None) -> int:
    """The exit code a command returns when `exc` ends it (None: success)."""
    from iolake.config import ConfigError
    from iolake.lake import GateFailed
    from models.tracking import TrackingUnset

    if exc is None:
        return OK
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else FAILED
    if isinstance(exc, (ConfigError, FileNotFoundError, TrackingUnset)):
        return USAGE
    if isinstance(exc, GateFailed):
        return GATE
    if isinstance(exc, _service_errors()):
        return SERVICE
    if isinstance(exc, KeyboardInterrupt):
        return 130
    return FAILED


def guarded(prog: str, fn) -> int:
    """Run `fn() -> int`; the errors users cause become a one-line message and their exit code."""
    from iolake.config import ConfigError
    from iolake.lake import GateFailed
    from models.tracking import TrackingUnset

    try:
        return fn()
    except _service_errors() as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return SERVICE
    except (ConfigError, FileNotFoundError, GateFailed, TrackingUnset) as e:
        what = "configuration error: " if isinstance(e, (ConfigError, TrackingUnset)) else ""
        print(f"{prog}: {what}{e}", file=sys.stderr)
        return exit_code_for(e)


def _service_errors() -> tuple[type[BaseException], ...]:
    from iolake.lake.lock import LakeBusy, LeaseLost, StoreUnavailable
    from models.tracking import TrackingUnavailable

    return (LakeBusy, LeaseLost, StoreUnavailable, TrackingUnavailable)
