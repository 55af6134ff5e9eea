"""Process entry point.

Git and agents start ``docket merge-driver`` and ``docket hook`` many times a
day, so those are routed here to light modules before Typer (and with it
click and rich) is imported. Everything else goes to the Typer app.
"""

from __future__ import annotations

import sys


def _not_yet(_args: list[str]) -> int:
    print("docket: not implemented yet", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> None:
    """Run docket with argv (default: the process arguments) and exit."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["merge-driver"]:
        from .merge_driver import main as merge_driver

        sys.exit(merge_driver(args[1:]))
    if args[:1] == ["hook"]:
        sys.exit(_not_yet(args[1:]))
    if args == ["--version"]:
        from . import __version__

        print(f"docket-git {__version__}")
        sys.exit(0)
    from .cli import run

    run(args)
