"""Process entry point.

Git and agents start ``docket merge-driver``, ``docket hook`` and ``docket
context`` many times a day, so those are routed here to light modules before
Typer (and with it click and rich) is imported. Everything else, and any of
those with arguments the light parser does not take (``--help``), goes to the
Typer app.
"""

from __future__ import annotations

import os
import sys


def _not_yet(_args: list[str]) -> int:
    print("docket: not implemented yet", file=sys.stderr)
    return 2


def _exit_now(code: int) -> None:
    """Flush and end the process without tearing down its objects.

    A briefing of a large ledger leaves millions of objects behind; freeing
    them one by one at exit costs a tenth of a second for nothing.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: nothing left to say
        pass
    os._exit(code)


def main(argv: list[str] | None = None) -> None:
    """Run docket with argv (default: the process arguments) and exit."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["merge-driver"]:
        sys.exit(_not_yet(args[1:]))
    if args[:1] == ["hook"]:
        sys.exit(_not_yet(args[1:]))
    if args[:1] == ["context"]:
        from .context.command import fast_main

        code = fast_main(args[1:])
        if code is not None:
            _exit_now(code)
    if args == ["--version"]:
        from . import __version__

        print(f"docket-git {__version__}")
        sys.exit(0)
    from .cli import run

    run(args)
