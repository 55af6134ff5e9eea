"""Command-line interface: Typer commands grouped by what a user does."""

from __future__ import annotations

import importlib
import os
import sys

from ..store import LedgerError
from .app import app

# Each module registers its commands on import; `docket --help` lists them in
# this order: record, read, history, share across branches, set up, maintain.
COMMAND_MODULES = ("record", "context", "read", "history", "merge", "setup", "agents", "migrate")
for _name in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}")


def run(args: list[str]) -> None:
    """Run the Typer app on args; ledger errors become ``docket: ...`` and exit 1."""
    prog = "git docket" if os.path.basename(sys.argv[0]) == "git-docket" else "docket"
    try:
        app(args=args, prog_name=prog)
    except LedgerError as exc:
        print(f"docket: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
