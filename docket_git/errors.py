"""User-facing failure, in one place: error types, exit codes, the guard every entry path uses.

A command fails by raising ``LedgerError`` (exit 1) or ``UsageError`` (exit
2); ``guarded`` turns that into one ``docket: ...`` line on stderr and the exit
code. Lower layers never print: what is worth saying without failing (a torn
final line skipped, a fallback taken) is handed to ``notice`` and printed by
``flush_notices`` at the edge, once the command is done.

Imports nothing from docket_git, so every room may import it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

#: Exit codes (documented in docs/commands.md).
OK, FAILED, USAGE = 0, 1, 2


class LedgerError(Exception):
    """A problem a user must fix; printed as ``docket: <message>``, exit 1."""

    exit_code = FAILED


class UsageError(LedgerError):
    """The command line itself is wrong; exit 2."""

    exit_code = USAGE


class NoLedger(LedgerError):
    """There is no ledger here and nowhere to create one."""


_notices: list[str] = []


def notice(message: str) -> None:
    """Queue a ``docket: message`` line for stderr, printed when the command ends."""
    _notices.append(message)


def withdraw(message: str) -> None:
    """Forget a queued notice (its caller said it another way, e.g. in a briefing's text)."""
    while message in _notices:
        _notices.remove(message)


def flush_notices() -> None:
    """Print the queued notices on stderr (each once) and forget them."""
    while _notices:
        message = _notices.pop(0)
        try:
            print(f"docket: {message}", file=sys.stderr)
        except (OSError, ValueError):  # stderr closed or gone: nothing left to tell
            _notices.clear()
            return


def warn(message: str) -> None:
    """Print a ``docket: message`` line on stderr now; the command goes on."""
    print(f"docket: {message}", file=sys.stderr)


def report(exc: BaseException) -> int:
    """Print what went wrong as ``docket: ...`` and return the exit code it calls for."""
    flush_notices()
    if isinstance(exc, LedgerError):
        warn(str(exc))
        return exc.exit_code
    if isinstance(exc, BrokenPipeError):
        # The reader went away (``docket list | head``): not a failure, and nothing more can be said.
        # What is still buffered for it goes to the null device, so the flush at exit cannot fail again.
        _to_null(sys.stdout, sys.stderr)
        return OK
    if isinstance(exc, KeyboardInterrupt):
        warn("interrupted")
        return 130
    if isinstance(exc, RecursionError):
        warn("input nested too deeply to read (JSON or TOML nested thousands of levels); fix or remove it")
        return FAILED
    if isinstance(exc, MemoryError):
        warn("out of memory: an input is far larger than a ledger should be")
        return FAILED
    warn(
        f"internal error: {type(exc).__name__}: {exc}. This is a bug in docket; "
        "rerun with DOCKET_DEBUG=1 for the traceback and report it"
    )
    return FAILED


def _to_null(stdout: object, stderr: object) -> None:
    """Point standard output at the null device, and standard error too when it is the same pipe (``2>&1``)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        out = stdout.fileno()  # type: ignore[attr-defined]
        fds = [out]
        with contextlib.suppress(OSError, ValueError, AttributeError):
            err = stderr.fileno()  # type: ignore[attr-defined]
            if err != out and os.path.sameopenfile(out, err):
                fds.append(err)
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in fds:
            os.dup2(null, fd)
        os.close(null)


def guarded(run: Callable[[], object]) -> int:
    """Run a command; return its exit code (an int it returns, else OK), with any failure reported the one way."""
    try:
        code = run()
    except (Exception, KeyboardInterrupt) as exc:
        if os.environ.get("DOCKET_DEBUG") and not isinstance(exc, LedgerError | BrokenPipeError):
            raise
        return report(exc)
    flush_notices()
    return code if isinstance(code, int) else OK
