"""Command-line interface: Typer commands grouped by what a user does."""

from __future__ import annotations

import os
import sys

from ..store import LedgerError
from . import agents as _agents  # noqa: F401 - registers commands
from . import context as _context  # noqa: F401
from . import history as _history  # noqa: F401
from . import merge as _merge  # noqa: F401
from . import read as _read  # noqa: F401
from . import record as _record  # noqa: F401
from . import setup as _setup  # noqa: F401
from .app import app

# isort: split
# Registered after the others so that help lists it with the maintenance commands.
from . import migrate as _migrate  # noqa: F401


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
